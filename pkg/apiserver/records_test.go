package apiserver

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
