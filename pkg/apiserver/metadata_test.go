package apiserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// kube-controller-manager deletes a namespace's objects, and collects garbage, through the
// metadata client, which prefers protobuf. The server must answer it (once in JSON, since our
// types had no protobuf form; now in protobuf); otherwise no tenant namespace could be deleted.
func TestMetadataClientListsAndDeletesCollections(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	typed := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().GitOpsDeployments("jane")
	for _, name := range []string{"a", "b"} {
		if _, err := typed.Create(ctx, &gitopsv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
				Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
				Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeManual,
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	meta := metadata.NewForConfigOrDie(metadata.ConfigFor(cfg)).
		Resource(gitopsv1alpha1.SchemeGroupVersion.WithResource("gitopsdeployments")).Namespace("jane")
	list, err := meta.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("metadata list: %v", err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("metadata list has %d items, want 2", len(list.Items))
	}
	if err := meta.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("metadata delete collection: %v", err)
	}
	left, err := typed.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d objects left after delete collection", len(left.Items))
	}
}
