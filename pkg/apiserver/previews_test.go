package apiserver

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// A preview's spec does not change once created (422 on the field), and its diff compares a
// record of its deployment with what the agent rendered: 409 until it is rendered, 422 for a
// record of another deployment.
func TestServerDiffsDeploymentPreviews(t *testing.T) {
	cfg := startServerWithOptions(t, pgtest.NewDatabase(t), nil, nil)
	gitops := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1()
	ctx := context.Background()
	manifest := func(color string) []gitopsv1alpha1.RecordedManifest {
		return []gitopsv1alpha1.RecordedManifest{{Kind: "ConfigMap", Namespace: "jane", Name: "web", Object: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","data":{"color":"` + color + `"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"}}`)}}}
	}
	for _, r := range []struct{ name, deployment string }{{"web-1", "web"}, {"api-1", "api"}} {
		created, err := gitops.DeploymentRecords("jane").Create(ctx, &gitopsv1alpha1.DeploymentRecord{
			ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: "jane"},
			Spec: gitopsv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: r.deployment, StartedAt: metav1.NewTime(time.Now()),
				Source:  gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
				Trigger: gitopsv1alpha1.DeploymentTrigger{Type: gitopsv1alpha1.DeploymentTriggerNewCommit}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.ManifestsDigest, created.Status.Manifests = "sha256:"+r.name, manifest("blue")
		if _, err := gitops.DeploymentRecords("jane").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	previews := gitops.DeploymentPreviews("jane")
	p, err := previews.Create(ctx, &gitopsv1alpha1.DeploymentPreview{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-preview-"},
		Spec:       gitopsv1alpha1.DeploymentPreviewSpec{GitOpsDeploymentName: "web"},
		// Dropped: status is written through /status only.
		Status: gitopsv1alpha1.DeploymentPreviewStatus{Phase: gitopsv1alpha1.DeploymentPreviewRendered, ManifestsDigest: "sha256:forged"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != "" || p.Status.ManifestsDigest != "" {
		t.Errorf("a create set the status: %+v", p.Status)
	}
	if _, err := previews.Create(ctx, &gitopsv1alpha1.DeploymentPreview{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: gitopsv1alpha1.DeploymentPreviewSpec{Revision: "a b"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.gitOpsDeploymentName: Required") || !strings.Contains(err.Error(), "spec.revision") {
		t.Errorf("create without a deployment and with a bad revision: %v", err)
	}
	changed := p.DeepCopy()
	changed.Spec.Revision = "main"
	if _, err := previews.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.revision: Invalid value") || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("changing the revision: %v, want 422 on spec.revision", err)
	}

	diff := func(from string) (*gitopsv1alpha1.DeploymentRecordDiff, error) {
		return previews.Diff(ctx, p.Name, &gitopsv1alpha1.DeploymentRecordDiff{From: from}, metav1.CreateOptions{})
	}
	if _, err := diff("web-1"); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "not rendered it yet") {
		t.Errorf("diff of a pending preview: %v, want 409", err)
	}

	p.Status = gitopsv1alpha1.DeploymentPreviewStatus{Phase: gitopsv1alpha1.DeploymentPreviewRendered,
		Revision: strings.Repeat("b", 40), ManifestsDigest: "sha256:preview", Manifests: manifest("red")}
	if p, err = previews.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := diff("web-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.From != "web-1" || got.To != p.Name || got.FromDigest != "sha256:web-1" || got.ToDigest != "sha256:preview" ||
		len(got.Resources) != 1 || len(got.Resources[0].Fields) != 1 || got.Resources[0].Fields[0].Path != ".data.color" ||
		string(got.Resources[0].Fields[0].From.Raw) != `"blue"` || string(got.Resources[0].Fields[0].To.Raw) != `"red"` {
		t.Errorf("diff %+v", got)
	}
	for _, c := range []struct {
		from string
		is   func(error) bool
		says string
	}{
		{"api-1", apierrors.IsInvalid, `records GitOpsDeployment "api"`},
		{"nothing", apierrors.IsInvalid, "from: Not found"},
		{"", apierrors.IsInvalid, "from: Required"},
	} {
		if _, err := diff(c.from); !c.is(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("diff from %q: %v, want one that says %q", c.from, err, c.says)
		}
	}
	if _, err := previews.Diff(ctx, "nothing", &gitopsv1alpha1.DeploymentRecordDiff{From: "web-1"}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("diff of a preview that does not exist: %v", err)
	}
}
