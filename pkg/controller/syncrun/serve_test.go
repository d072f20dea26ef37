package syncrun

import (
	"context"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// The SyncRuns of a tenant another instance takes are left to it: nothing is asked of this
// instance's Application, until the tenant is placed back and this instance holds it.
func TestServeLeavesTheSyncRunsOfATenantMovingAway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := manualDeployment()
	app := appOf(d)
	run := syncRun("sync", srLater)
	moving := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: d.Namespace},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	gitops := gitopsfake.NewSimpleClientset(d, run, moving)
	argo := argofake.NewSimpleClientset(app)
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactory(argo, 0)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	apps := argoInformers.Argoproj().V1alpha1().Applications()
	if err := argocd.AddDeploymentIndex(apps.Informer()); err != nil {
		t.Fatal(err)
	}
	c, err := New(managed.GitOpsDeploymentSyncRuns(), managed.GitOpsDeployments(), apps, gitops, argo, operations.NewRecorder(nil, "argocd"),
		record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serve(tenancy.NewTenants("a", managed.TenantPlacements())); err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers)
	controllertest.Drain(t, ctx, c.Controller)
	key := d.Namespace + "/" + d.Name
	argo.ClearActions()
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if acts := argo.Actions(); len(acts) != 0 {
		t.Fatalf("acted on the Application of a tenant moving away: %v", acts)
	}

	back := moving.DeepCopy()
	back.Spec.Instance = "a"
	if _, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Update(ctx, back, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the tenant's deployment queued", func() bool { return c.Queue.Len() > 0 })
	if keys := controllertest.Drain(t, ctx, c.Controller); len(keys) != 1 || keys[0] != key {
		t.Errorf("queued %v, want %s", keys, key)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := argo.ArgoprojV1alpha1().Applications(app.Namespace).Get(ctx, app.Name, metav1.GetOptions{})
	if err != nil || got.Annotations[AnnotationSyncRunRefresh] != string(run.UID) {
		t.Errorf("the SyncRun of the tenant held again was not acted on: %v %v", got.Annotations, err)
	}
}
