package gitopsdeployment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

func TestDecideNewCommit(t *testing.T) {
	const (
		v2 = "2222222222222222222222222222222222222222"
		v3 = "3333333333333333333333333333333333333333"
	)
	tests := []struct {
		name             string
		base, target     string
		canResolve       bool
		resolved         string
		err              error
		want             newCommitAction
		wantBase, inNote string
	}{
		{"no base yet: record it", "", "main", true, v2, nil, newCommitRecordBase, v2, "released when main moves past " + v2},
		{"same commit: keep", v2, "main", true, v2, nil, newCommitKeep, v2, "moves past " + v2},
		{"another commit: release", v2, "main", true, v3, nil, newCommitRelease, v2, v3},
		{"resolve error: keep, say why", v2, "main", true, "", errors.New("connection refused"), newCommitKeep, v2, "cannot resolve main (kept until it can): connection refused"},
		{"resolve error before a base: no base", "", "main", true, "", errors.New("boom"), newCommitKeep, "", "cannot resolve main"},
		{"empty answer: keep", v2, "main", true, "", nil, newCommitKeep, v2, "returned no commit"},
		{"targetRevision a SHA: never newer", "", v2, true, "", nil, newCommitKeep, "", "no newer commit can arrive there"},
		{"targetRevision a SHA-256: never newer", "", strings.Repeat("a", 64), true, "", nil, newCommitKeep, "", "no newer commit can arrive there"},
		{"no repo-server: keep, say why", "", "main", false, "", nil, newCommitKeep, "", "no --repo-server"},
		{"empty targetRevision is HEAD", "", "", true, v2, nil, newCommitRecordBase, v2, "HEAD moves past"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideNewCommit(tt.base, tt.target, tt.canResolve, tt.resolved, tt.err)
			if got.Action != tt.want || got.Base != tt.wantBase || !strings.Contains(got.Note, tt.inNote) {
				t.Errorf("got %+v, want action %d base %q note containing %q", got, tt.want, tt.wantBase, tt.inNote)
			}
		})
	}
}

// The base stands for the spec it was taken for: a hold moved or switched to NewCommit since
// its status was written takes the branch's commit again, so that a hold made after the
// branch advanced is not released for a commit the user had already seen.
func TestHoldBase(t *testing.T) {
	const (
		v2 = "2222222222222222222222222222222222222222"
		v3 = "3333333333333333333333333333333333333333"
	)
	hold := func(releaseOn managedv1alpha1.HoldReleasePolicy, generation, observed int64, base string) *managedv1alpha1.GitOpsDeploymentHold {
		return &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Generation: generation},
			Spec:       managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: heldSHA, ReleaseOn: releaseOn},
			Status:     managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: observed, BaseRevision: base},
		}
	}
	tests := []struct {
		name     string
		hold     *managedv1alpha1.GitOpsDeploymentHold
		wantBase string
		// What the branch at resolved makes of it (NewCommit holds only).
		resolved   string
		wantAction newCommitAction
		wantNew    string
	}{
		{"unchanged: the base stands, the same commit keeps it", hold(managedv1alpha1.HoldReleaseNewCommit, 2, 2, v2), v2, v2, newCommitKeep, v2},
		{"unchanged: the base stands, a newer commit releases it", hold(managedv1alpha1.HoldReleaseNewCommit, 2, 2, v2), v2, v3, newCommitRelease, v2},
		{"moved to another revision after the branch advanced: the base is taken again", hold(managedv1alpha1.HoldReleaseNewCommit, 3, 2, v2), "", v3, newCommitRecordBase, v3},
		{"switched Manual to NewCommit, a base left from before: taken again", hold(managedv1alpha1.HoldReleaseNewCommit, 2, 1, v2), "", v3, newCommitRecordBase, v3},
		{"switched Manual to NewCommit, no base: taken", hold(managedv1alpha1.HoldReleaseNewCommit, 2, 1, ""), "", v3, newCommitRecordBase, v3},
		{"switched NewCommit to Manual: no base", hold(managedv1alpha1.HoldReleaseManual, 2, 1, v2), "", "", 0, ""},
		{"Manual, unchanged, a base left by an earlier agent: none", hold(managedv1alpha1.HoldReleaseManual, 2, 2, v2), "", "", 0, ""},
		{"releaseOn unset (Manual): no base", hold("", 1, 1, v2), "", "", 0, ""},
		{"new, never seen: no base yet", hold(managedv1alpha1.HoldReleaseNewCommit, 1, 0, ""), "", v3, newCommitRecordBase, v3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := holdBase(tt.hold)
			if base != tt.wantBase {
				t.Fatalf("holdBase = %q, want %q", base, tt.wantBase)
			}
			if tt.hold.Spec.ReleaseOn != managedv1alpha1.HoldReleaseNewCommit {
				return
			}
			d := decideNewCommit(base, "main", true, tt.resolved, nil)
			if d.Action != tt.wantAction || d.Base != tt.wantNew {
				t.Errorf("decision %+v, want action %d base %q", d, tt.wantAction, tt.wantNew)
			}
		})
	}
}

// resolverAt resolves every branch to the commit it holds.
type resolverAt struct{ commit string }

func (r *resolverAt) ResolveRevision(context.Context, *managedv1alpha1.GitOpsDeployment) (string, error) {
	return r.commit, nil
}

// A NewCommit hold moved after the branch advanced records the branch's commit again and
// stays until a commit newer than that one; switched to Manual, it drops its base.
func TestMovedHoldRetakesItsBase(t *testing.T) {
	const (
		v1 = "1111111111111111111111111111111111111111"
		v2 = "2222222222222222222222222222222222222222"
		v3 = "3333333333333333333333333333333333333333"
		v4 = "4444444444444444444444444444444444444444"
	)
	ctx := context.Background()
	d := deployment(nil)
	// Held at v1 with the branch at v2, then moved (generation 3) after the branch went to v3;
	// the agent has not seen the move yet.
	moved := holdOf(func(h *managedv1alpha1.GitOpsDeploymentHold) {
		h.UID, h.ResourceVersion, h.Generation = "hold-1", "9", 3
		h.Spec.Revision, h.Spec.ReleaseOn = v1, managedv1alpha1.HoldReleaseNewCommit
		h.Status = managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2, Holding: true, BaseRevision: v2}
	})
	gitops := gitopsfake.NewSimpleClientset(d.DeepCopy(), moved.DeepCopy())
	branch := &resolverAt{commit: v3}
	c := &Controller{gitops: gitops, now: time.Now}
	c.ReleaseOnNewCommit(branch, time.Minute)
	rec := fakeRecorder(c)
	holds := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds("jane")
	reconcile := func() *managedv1alpha1.GitOpsDeploymentHold {
		t.Helper()
		h, err := holds.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		kept, decision, err := c.checkNewCommit(ctx, d, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.updateHoldStatus(ctx, kept, d, nil, decision); err != nil {
			t.Fatal(err)
		}
		h, err = holds.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	h := reconcile()
	if h == nil {
		t.Fatal("the moved hold was released for v3, a commit that was there when it was moved")
	}
	if h.Status.BaseRevision != v3 || h.Status.ObservedGeneration != 3 {
		t.Fatalf("status %+v, want base %s at generation 3", h.Status, v3)
	}
	if !strings.Contains(h.Status.Message, "released when main moves past "+v3) {
		t.Errorf("message %q", h.Status.Message)
	}
	if h = reconcile(); h == nil || h.Status.BaseRevision != v3 {
		t.Fatalf("the same branch again: hold %+v", h)
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Errorf("events %v before any release", got)
	}

	branch.commit = v4
	if h = reconcile(); h != nil {
		t.Fatalf("v4 arrived and the hold is still there: %+v", h.Status)
	}
	if got := controllertest.Recorded(rec); len(got) != 1 || !strings.Contains(got[0], "released: a newer commit "+v4+" arrived after "+v3) {
		t.Errorf("events %v", got)
	}

	// Switched to Manual: no base, whatever the branch does.
	manual := moved.DeepCopy()
	manual.Spec.ReleaseOn = managedv1alpha1.HoldReleaseManual
	manual.Generation, manual.Status = 4, managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 3, Holding: true, BaseRevision: v3}
	if _, err := holds.Create(ctx, manual, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if h = reconcile(); h == nil || h.Status.BaseRevision != "" || h.Status.ObservedGeneration != 4 {
		t.Fatalf("a Manual hold: %+v", h)
	}
}
