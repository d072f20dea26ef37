package cli

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var recordsStart = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

// rec is deployment's record n (minutes after recordsStart) of commit rev, in phase.
func rec(deployment string, n int, rev string, phase managedv1alpha1.DeploymentRecordPhase) *managedv1alpha1.DeploymentRecord {
	started := metav1.NewTime(recordsStart.Add(time.Duration(n) * time.Minute))
	return &managedv1alpha1.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{Name: deployment + "-" + started.Format("150405"), Namespace: testNS},
		Spec:       managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, Revision: rev, StartedAt: started},
		Status:     managedv1alpha1.DeploymentRecordStatus{Phase: phase},
	}
}

func TestRollbackTarget(t *testing.T) {
	ok, failed := managedv1alpha1.DeploymentRecordSucceeded, managedv1alpha1.DeploymentRecordFailed
	records := func(rs ...*managedv1alpha1.DeploymentRecord) []managedv1alpha1.DeploymentRecord {
		var out []managedv1alpha1.DeploymentRecord
		for _, r := range rs {
			out = append(out, *r)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		records []managedv1alpha1.DeploymentRecord
		want    string
	}{
		{"none", nil, ""},
		{"one", records(rec("web", 1, "a", ok)), ""},
		{"the one before the newest", records(rec("web", 1, "a", ok), rec("web", 2, "b", ok)), "web-010100"},
		{"listed in any order", records(rec("web", 3, "c", ok), rec("web", 1, "a", ok), rec("web", 2, "b", ok)), "web-010200"},
		{"a failed newest sync is not what runs", records(rec("web", 1, "a", ok), rec("web", 2, "b", ok), rec("web", 3, "c", failed)), "web-010100"},
		{"a failed older sync is no target", records(rec("web", 1, "a", ok), rec("web", 2, "b", failed), rec("web", 3, "c", ok)), "web-010100"},
		{"syncs again at the same commit are skipped", records(rec("web", 1, "a", ok), rec("web", 2, "b", ok), rec("web", 3, "b", ok)), "web-010100"},
		{"only the same commit", records(rec("web", 1, "b", ok), rec("web", 2, "b", ok)), ""},
		{"no commit resolved", records(rec("web", 1, "", ok), rec("web", 2, "b", ok)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rollbackTarget(tc.records)
			if name := func() string {
				if got == nil {
					return ""
				}
				return got.Name
			}(); name != tc.want {
				t.Errorf("rollbackTarget = %q, want %q", name, tc.want)
			}
		})
	}
}

func TestRollbackAndRelease(t *testing.T) {
	ok := managedv1alpha1.DeploymentRecordSucceeded
	f := newFixture(t, deployment("web", auto, synced, healthy), deployment("api", auto, synced, healthy),
		rec("web", 1, "aaaaaaa", ok), rec("web", 2, "bbbbbbb", ok), rec("api", 3, "ccccccc", ok))
	ctx := context.Background()
	holds := f.client.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(testNS)

	code, out, errOut := f.run("rollback", "web", "--reason", "v2 breaks checkout")
	if code != 0 || out != "gitopsdeploymenthold.managed-gitops.redhat.com/web rolled back\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	h, err := holds.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || h.Spec != (managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: "aaaaaaa", DeploymentRecord: "web-010100", Reason: "v2 breaks checkout"}) {
		t.Fatalf("hold %+v, %v", h, err)
	}
	// Held again elsewhere: the same hold, moved.
	if code, _, errOut := f.run("rollback", "web", "--revision", "0123456"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if h, err = holds.Get(ctx, "web", metav1.GetOptions{}); err != nil || h.Spec != (managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: "0123456"}) {
		t.Fatalf("hold %+v, %v", h, err)
	}
	// Until a newer commit: the agent releases it (releaseOn NewCommit).
	if code, _, errOut := f.run("rollback", "web", "--revision", "0123456", "--until-new-commit"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if h, err = holds.Get(ctx, "web", metav1.GetOptions{}); err != nil ||
		h.Spec != (managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: "0123456", ReleaseOn: managedv1alpha1.HoldReleaseNewCommit}) {
		t.Fatalf("hold %+v, %v", h, err)
	}
	if code, _, errOut := f.run("rollback", "web", "--to", "web-010200"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if h, err = holds.Get(ctx, "web", metav1.GetOptions{}); err != nil || h.Spec.Revision != "bbbbbbb" || h.Spec.DeploymentRecord != "web-010200" {
		t.Fatalf("hold %+v, %v", h, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollback", "nope"}, `Error: gitopsdeployment "nope" not found in namespace "team-a"` + "\n"},
		{[]string{"rollback", "api"}, `Error: gitopsdeployment "api" in namespace "team-a" has no earlier succeeded sync at another commit to go back to: name one with --to RECORD or --revision COMMIT` + "\n"},
		{[]string{"rollback", "api", "--to", "web-010100"}, `Error: deploymentrecord "web-010100" is of gitopsdeployment "web", not "api"` + "\n"},
		{[]string{"rollback", "web", "--to", "web-1", "--revision", "abc"}, "Error: rollback takes --to RECORD or --revision COMMIT, not both\n"},
		{[]string{"rollback", "web", "--to", "web-1"}, `Error: deploymentrecord "web-1" not found in namespace "team-a"` + "\n"},
		{[]string{"release", "api"}, `Error: gitopsdeployment "api" in namespace "team-a" is not held: there is no gitopsdeploymenthold "api"` + "\n"},
	} {
		if code, _, errOut := f.run(tc.args...); code != 1 || errOut != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}

	code, out, errOut = f.run("release", "web")
	if code != 0 || out != "gitopsdeploymenthold.managed-gitops.redhat.com/web released\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := holds.Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the hold is still there")
	}

	f.forbid("create", "gitopsdeploymentholds", managedv1alpha1.GroupName, "carol")
	code, _, errOut = f.run("rollback", "web")
	want := `Error: you may not create gitopsdeploymentholds.managed-gitops.redhat.com in namespace "team-a": User "carol" cannot create resource "gitopsdeploymentholds" in API group "managed-gitops.redhat.com" in the namespace "team-a"` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("forbidden: exit %d, stderr %q", code, errOut)
	}
}
