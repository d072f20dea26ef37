package apiserver

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// The server records each write of a tenant kind as an AuditEntry, serves the entries to read
// and to delete only, and records nothing of its internal kinds.
func TestServerKeepsAnAuditTrail(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	clientset := versioned.NewForConfigOrDie(cfg)
	ctx := context.Background()

	resources, err := clientset.Discovery().ServerResourcesForGroupVersion(gitopsv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "auditentries" })
	if i < 0 {
		t.Fatalf("auditentries not served: %+v", resources.APIResources)
	}
	if got, want := resources.APIResources[i].Verbs, (metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}); !slices.Equal(got, want) {
		t.Errorf("auditentries verbs %v, want %v", got, want)
	}

	d := &gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "jane"},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	created, err := clientset.ManagedGitopsV1alpha1().GitOpsDeployments("jane").Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Labels = map[string]string{"team": "a"}
	updated, err := clientset.ManagedGitopsV1alpha1().GitOpsDeployments("jane").Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Internal kinds are not audited.
	if _, err := clientset.ManagedGitopsV1alpha1().Operations("jane").Create(ctx, &gitopsv1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "jane"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	list, err := clientset.ManagedGitopsV1alpha1().AuditEntries("jane").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(list.Items), list.Items)
	}
	for i, want := range []struct{ verb, rv string }{{"create", created.ResourceVersion}, {"update", updated.ResourceVersion}} {
		e := list.Items[i]
		if e.Verb != want.verb || e.Object.ResourceVersion != want.rv || e.Object.Name != "app" || e.Object.UID != created.UID ||
			e.Object.Resource != "gitopsdeployments" || e.User.Username == "" {
			t.Errorf("entry %d: %+v, want %s at RV %s", i, e, want.verb, want.rv)
		}
	}
	selected, err := clientset.ManagedGitopsV1alpha1().AuditEntries("jane").List(ctx, metav1.ListOptions{
		FieldSelector: "verb=update", LabelSelector: gitopsv1alpha1.LabelAuditName + "=app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(selected.Items) != 1 || selected.Items[0].Verb != "update" {
		t.Errorf("selected %+v, want the update", selected.Items)
	}
}
