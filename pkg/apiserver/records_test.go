package apiserver

import (
	"context"
	"fmt"
	"slices"
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

// The server keeps each deployment's newest records, as many as its revisionHistoryLimit says
// (or --deployment-records-per-deployment), and deletes the older ones itself.
func TestServerKeepsTheNewestDeploymentRecords(t *testing.T) {
	cfg := startServerWithOptions(t, pgtest.NewDatabase(t), func(o *Options) { o.DeploymentRecordsPerDeployment = 3 }, nil)
	gitops := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1()
	ctx := context.Background()
	limit := int32(5)
	for _, d := range []*gitopsv1alpha1.GitOpsDeployment{
		{ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: "jane"}, Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated, RevisionHistoryLimit: &limit}},
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "jane"}, Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated}},
	} {
		if _, err := gitops.GitOpsDeployments("jane").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, deployment := range []string{"limited", "default"} {
		for i := 0; i < 8; i++ {
			started := metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
			r := &gitopsv1alpha1.DeploymentRecord{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", deployment, started.Unix()), Namespace: "jane"},
				Spec: gitopsv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, StartedAt: started,
					Source:  gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
					Trigger: gitopsv1alpha1.DeploymentTrigger{Type: gitopsv1alpha1.DeploymentTriggerNewCommit}},
			}
			if _, err := gitops.DeploymentRecords("jane").Create(ctx, r, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for deployment, want := range map[string]int{"limited": 5, "default": 3} {
		list, err := gitops.DeploymentRecords("jane").List(ctx, metav1.ListOptions{FieldSelector: "spec.gitOpsDeploymentName=" + deployment})
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, r := range list.Items {
			kept = append(kept, r.Spec.StartedAt.UTC().Format("15:04"))
		}
		slices.Sort(kept)
		var newest []string
		for i := 8 - want; i < 8; i++ {
			newest = append(newest, t0.Add(time.Duration(i)*time.Minute).Format("15:04"))
		}
		if !slices.Equal(kept, newest) {
			t.Errorf("%s keeps the records started at %v, want the newest %d: %v", deployment, kept, want, newest)
		}
	}
}

// The diff subresource answers from the two records' stored manifests, and refuses a record of
// another deployment, one that does not exist and one without manifests, each with a 4xx that
// says why.
func TestServerDiffsDeploymentRecords(t *testing.T) {
	cfg := startServerWithOptions(t, pgtest.NewDatabase(t), nil, nil)
	gitops := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	manifest := func(color string) []gitopsv1alpha1.RecordedManifest {
		return []gitopsv1alpha1.RecordedManifest{{Kind: "ConfigMap", Namespace: "jane", Name: "web", Object: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","data":{"color":"` + color + `"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"}}`)}}}
	}
	record := func(name, deployment string, minute int, manifests []gitopsv1alpha1.RecordedManifest) {
		t.Helper()
		r := &gitopsv1alpha1.DeploymentRecord{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "jane"},
			Spec: gitopsv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, StartedAt: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute)),
				Source:  gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
				Trigger: gitopsv1alpha1.DeploymentTrigger{Type: gitopsv1alpha1.DeploymentTriggerNewCommit}},
		}
		created, err := gitops.DeploymentRecords("jane").Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if manifests != nil {
			created.Status.ManifestsDigest, created.Status.Manifests = "sha256:"+name, manifests
			if _, err := gitops.DeploymentRecords("jane").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record("web-1", "web", 1, manifest("blue"))
	record("web-2", "web", 2, manifest("red"))
	record("web-3", "web", 3, nil)
	record("api-1", "api", 1, manifest("blue"))

	got, err := gitops.DeploymentRecords("jane").Diff(ctx, "web-2", &gitopsv1alpha1.DeploymentRecordDiff{From: "web-1"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.From != "web-1" || got.To != "web-2" || got.FromDigest != "sha256:web-1" || got.ToDigest != "sha256:web-2" || len(got.Resources) != 1 ||
		len(got.Resources[0].Fields) != 1 || got.Resources[0].Fields[0].Path != ".data.color" ||
		string(got.Resources[0].Fields[0].From.Raw) != `"blue"` || string(got.Resources[0].Fields[0].To.Raw) != `"red"` {
		t.Errorf("diff %+v", got)
	}

	for _, c := range []struct {
		from, to string
		is       func(error) bool
		says     string
	}{
		{"api-1", "web-2", apierrors.IsInvalid, `records GitOpsDeployment "api"`},
		{"nothing", "web-2", apierrors.IsInvalid, "from: Not found"},
		{"", "web-2", apierrors.IsInvalid, "from: Required"},
		{"web-1", "nothing", apierrors.IsNotFound, "not found"},
		{"web-1", "web-3", apierrors.IsConflict, "holds no manifests"},
	} {
		_, err := gitops.DeploymentRecords("jane").Diff(ctx, c.to, &gitopsv1alpha1.DeploymentRecordDiff{From: c.from}, metav1.CreateOptions{})
		if !c.is(err) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("diff from %q to %q: %v, want one that says %q", c.from, c.to, err, c.says)
		}
	}
}
