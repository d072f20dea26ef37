package deploymentpreview

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

var (
	created = time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	shaB    = strings.Repeat("b", 40)
)

func preview(revision string, phase managedv1alpha1.DeploymentPreviewPhase) *managedv1alpha1.DeploymentPreview {
	return &managedv1alpha1.DeploymentPreview{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web-preview-abcde", UID: "uid-p", Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec:       managedv1alpha1.DeploymentPreviewSpec{GitOpsDeploymentName: "web", Revision: revision},
		Status:     managedv1alpha1.DeploymentPreviewStatus{Phase: phase},
	}
}

func deployment(targetRevision string) *managedv1alpha1.GitOpsDeployment {
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web", UID: "uid-web"},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{Source: managedv1alpha1.ApplicationSource{
			RepoURL: "https://git.example/org/repo", Path: "deploy", TargetRevision: targetRevision}},
	}
}

func TestDecide(t *testing.T) {
	now := created.Add(10 * time.Minute)
	tests := []struct {
		name        string
		w           world
		wantDelete  bool
		wantRender  bool
		wantRef     string
		wantFailure string
		wantAfter   time.Duration
	}{
		{name: "new: the deployment's branch", w: world{preview: preview("", ""), deployment: deployment("main"), canRender: true},
			wantRender: true, wantRef: "main", wantAfter: 50 * time.Minute},
		{name: "new: the deployment follows HEAD", w: world{preview: preview("", ""), deployment: deployment(""), canRender: true},
			wantRender: true, wantRef: "", wantAfter: 50 * time.Minute},
		{name: "new: a revision of its own", w: world{preview: preview("v2", managedv1alpha1.DeploymentPreviewPending), deployment: deployment("main"), canRender: true},
			wantRender: true, wantRef: "v2", wantAfter: 50 * time.Minute},
		{name: "no repo-server", w: world{preview: preview("", ""), deployment: deployment("main")},
			wantFailure: "the agent has no --repo-server; the agent deletes this preview at 2026-12-07T05:00:00Z (--preview-ttl 1h0m0s)",
			wantAfter:   50 * time.Minute},
		{name: "no deployment", w: world{preview: preview("", ""), canRender: true},
			wantFailure: `GitOpsDeployment "web" not found in namespace jane`, wantAfter: 50 * time.Minute},
		{name: "rendered: wait for its expiry", w: world{preview: preview("", managedv1alpha1.DeploymentPreviewRendered), deployment: deployment("main"), canRender: true},
			wantAfter: 50 * time.Minute},
		{name: "failed: final too", w: world{preview: preview("", managedv1alpha1.DeploymentPreviewFailed), canRender: true},
			wantAfter: 50 * time.Minute},
		{name: "expired: deleted, rendered or not", w: world{preview: preview("", ""), deployment: deployment("main"), canRender: true, now: created.Add(time.Hour)},
			wantDelete: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.w.now.IsZero() {
				tt.w.now = now
			}
			tt.w.ttl = time.Hour
			p := decide(tt.w)
			if p.delete != tt.wantDelete || p.render != tt.wantRender || p.ref != tt.wantRef || p.requeueAfter != tt.wantAfter {
				t.Errorf("plan %+v, want delete %v render %v ref %q after %s", p, tt.wantDelete, tt.wantRender, tt.wantRef, tt.wantAfter)
			}
			switch {
			case tt.wantFailure == "" && p.status != nil:
				t.Errorf("status %+v, want none", p.status)
			case tt.wantFailure != "" && (p.status == nil || p.status.Phase != managedv1alpha1.DeploymentPreviewFailed ||
				!strings.HasPrefix(p.status.Message, tt.wantFailure) || !strings.Contains(p.status.Message, "--preview-ttl 1h0m0s")):
				t.Errorf("status %+v, want Failed %q and the TTL", p.status, tt.wantFailure)
			}
		})
	}
}

func TestRenderedStatus(t *testing.T) {
	w := world{preview: preview("", ""), now: created.Add(time.Minute), ttl: 30 * time.Minute}
	res := recordmanifest.Result{Digest: "sha256:d", Manifests: []managedv1alpha1.RecordedManifest{{Kind: "ConfigMap", Name: "web"}}}
	tests := []struct {
		name, ref, commit string
		res               recordmanifest.Result
		err               error
		phase             managedv1alpha1.DeploymentPreviewPhase
		message           string
		manifests         int
	}{
		{name: "HEAD", commit: shaB, res: res, phase: managedv1alpha1.DeploymentPreviewRendered, manifests: 1,
			message: "rendered HEAD at " + shaB + " (1 objects); the agent deletes this preview at 2026-12-07T04:30:00Z (--preview-ttl 30m0s)"},
		{name: "a branch", ref: "main", commit: shaB, res: res, phase: managedv1alpha1.DeploymentPreviewRendered, manifests: 1,
			message: "rendered main at " + shaB},
		{name: "over the cap", ref: "main", commit: shaB, res: recordmanifest.Result{Digest: "sha256:big", Truncated: true},
			phase: managedv1alpha1.DeploymentPreviewRendered, message: "larger than the agent keeps (256 KiB)"},
		{name: "failed", ref: "nope", err: errors.New("resolving nope: unknown revision"), phase: managedv1alpha1.DeploymentPreviewFailed,
			message: "resolving nope: unknown revision; the agent deletes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := renderedStatus(w, tt.ref, tt.commit, tt.res, tt.err)
			if st.Phase != tt.phase || !strings.Contains(st.Message, tt.message) || len(st.Manifests) != tt.manifests || st.ObservedGeneration != 1 {
				t.Errorf("status %+v, want %s with %q and %d manifests", st, tt.phase, tt.message, tt.manifests)
			}
			if tt.err == nil && (st.Revision != tt.commit || st.ManifestsDigest != tt.res.Digest || st.ManifestsTruncated != tt.res.Truncated ||
				st.RenderedAt == nil || !st.RenderedAt.Time.Equal(w.now)) {
				t.Errorf("status %+v, want the commit, digest and time", st)
			}
		})
	}
}
