package gitopsdeployment

import (
	"context"
	"slices"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

func TestPlanRelease(t *testing.T) {
	d := deployment(nil)
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{argocd.LabelDeploymentUID: string(d.UID)}}}
	withFinalizer := app.DeepCopy()
	withFinalizer.Finalizers = []string{argoBackgroundFinalizer}
	deleting := d.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	replaced := d.DeepCopy()
	replaced.UID = "another"
	for _, tc := range []struct {
		name string
		app  *argov1alpha1.Application
		depl *managedv1alpha1.GitOpsDeployment
		want releaseStep
	}{
		{"live deployment: the Application alone goes", app, d, releaseDelete},
		{"Argo CD's finalizer would take the resources along: off first", withFinalizer, d, releaseUnblock},
		{"deployment gone: its resources go before the move", app, nil, releaseRetire},
		{"deployment being deleted", withFinalizer, deleting, releaseRetire},
		{"deployment replaced by a new object of its name", app, replaced, releaseRetire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planRelease(tc.app, tc.depl); got != tc.want {
				t.Errorf("planRelease = %v, want %v", got, tc.want)
			}
		})
	}
}

// releaseFixture is a controller of instance a, serving through Tenants, with jane's deployment
// web, its Application and its AppProject, and jane's placement as given.
type releaseFixture struct {
	c      *Controller
	gitops *gitopsfake.Clientset
	argo   *argofake.Clientset
	kube   *kubefake.Clientset
	app    *argov1alpha1.Application
}

func newReleaseFixture(t *testing.T, ctx context.Context, p *managedv1alpha1.TenantPlacement, mutateApp func(*argov1alpha1.Application),
	impersonatorOf string) releaseFixture {
	t.Helper()
	d := deployment(nil)
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: argocd.ApplicationName(d.UID), Namespace: "argocd", UID: "app-1",
		Labels:      map[string]string{argocd.LabelDeploymentNamespace: "jane", argocd.LabelDeploymentUID: string(d.UID)},
		Annotations: map[string]string{argocd.AnnotationDeploymentName: "web"}}}
	if mutateApp != nil {
		mutateApp(app)
	}
	// ResourceVersion: the server gives every object one, the fake does not, and the tenant's
	// memory of its own writes goes by it.
	project := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: argocd.ProjectName("jane"), Namespace: "argocd", ResourceVersion: "7",
		Labels: map[string]string{argocd.LabelTenantNamespace: "jane"}}}
	gitops := gitopsfake.NewSimpleClientset(d, p)
	argo := argofake.NewSimpleClientset(app, project)
	// The deployer's binding that lets this instance's application-controller impersonate it,
	// and another instance's.
	impersonator := func(argoNamespace string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitops-service-deployer-impersonator", Namespace: "jane",
			ResourceVersion: "3", Labels: map[string]string{deployer.LabelDeployer: "true"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gitops-service-deployer-impersonator"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: deployer.DefaultControllerServiceAccount, Namespace: argoNamespace}}}
	}
	kube := kubefake.NewClientset(impersonator(impersonatorOf))
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactoryWithOptions(argo, 0, argoinformers.WithNamespace("argocd"))
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	deployerInformers := deployer.NewInformerFactory(kube)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	argoSecrets := argoKube.Core().V1().Secrets()
	deployers := deployer.New(deployerInformers.Core().V1().ServiceAccounts(), deployerInformers.Rbac().V1().RoleBindings(),
		argoSecrets, kube, kube, "argocd", argocd.InClusterServer, deployer.DefaultControllerServiceAccount)
	c, err := New(managed.GitOpsDeployments(), managed.GitOpsDeploymentHolds(), managed.GitOpsDeploymentManagedEnvironments(), argoInformers.Argoproj().V1alpha1().Applications(),
		argoInformers.Argoproj().V1alpha1().AppProjects(), argoSecrets, deployers, "argocd", argocd.InClusterServer,
		gitops, argo, kube, operations.NewRecorder(nil, "argocd"), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serve(tenancy.NewTenants("a", managed.TenantPlacements())); err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers, argoKube, deployerInformers)
	controllertest.Drain(t, ctx, c.Controller)
	gitops.ClearActions()
	argo.ClearActions()
	kube.ClearActions()
	return releaseFixture{c: c, gitops: gitops, argo: argo, kube: kube, app: app}
}

func verbs(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// A tenant moved to another instance loses its Application here, but not what the
// Application deployed (no Argo CD finalizer on it), then its AppProject; its deployment's
// status and finalizer are the new instance's concern.
func TestReleaseRemovesTheTenantsArgoCDObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moved := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	f := newReleaseFixture(t, ctx, moved, nil, "argocd")

	if err := f.c.syncDeployment(ctx, "jane/web"); err != nil {
		t.Fatal(err)
	}
	acts := f.argo.Actions()
	if len(acts) == 0 || !acts[0].Matches("delete", "applications") {
		t.Fatalf("argo actions %v, want the Application deleted first", verbs(acts))
	}
	if pre := acts[0].(clienttesting.DeleteAction).GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != f.app.UID {
		t.Errorf("delete preconditions %+v, want the Application's UID", pre)
	}
	if got := verbs(f.gitops.Actions()); len(got) != 0 {
		t.Errorf("gitops actions %v, want none: the deployment is another instance's now", got)
	}
	// The AppProject goes once the cache has lost the Application (in this sync if it
	// already has, else in the one the deletion event brings).
	controllertest.Eventually(t, ctx, "the cache to lose the Application", func() bool { return len(f.c.tenantApplications("jane")) == 0 })
	if err := f.c.syncDeployment(ctx, "jane/web"); err != nil {
		t.Fatal(err)
	}
	got := verbs(f.argo.Actions())
	if !slices.Equal(got, []string{"delete applications", "delete appprojects"}) {
		t.Errorf("argo actions %v, want the Application then the AppProject deleted, once each", got)
	}
	// This instance's right to impersonate the tenant's deployer goes with the project, if the
	// binding has not been rewritten for another instance meanwhile.
	var deleted []string
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "delete" {
			d := a.(clienttesting.DeleteAction)
			deleted = append(deleted, d.GetResource().Resource+" "+d.GetName())
			if pre := d.GetDeleteOptions().Preconditions; pre == nil || pre.ResourceVersion == nil || *pre.ResourceVersion != "3" {
				t.Errorf("deleted the binding without its resourceVersion as precondition: %+v", pre)
			}
		}
	}
	if !slices.Equal(deleted, []string{"rolebindings gitops-service-deployer-impersonator"}) {
		t.Errorf("kube deletes %v, want this instance's impersonator binding alone", deleted)
	}
}

// The binding another instance has made its own stays.
func TestReleaseLeavesAnotherInstancesImpersonation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moved := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	f := newReleaseFixture(t, ctx, moved, nil, "argocd-b")
	if err := f.c.syncDeployment(ctx, "jane/web"); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the cache to lose the Application", func() bool { return len(f.c.tenantApplications("jane")) == 0 })
	if err := f.c.syncDeployment(ctx, "jane/web"); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("deleted %s of another instance", a.GetResource().Resource)
		}
	}
}

// An Application with Argo CD's resources finalizer would have Argo CD delete what it
// deployed: the finalizer goes first, and the deletion waits for the update.
func TestReleaseTakesArgoCDsFinalizerOffFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moved := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	f := newReleaseFixture(t, ctx, moved, func(app *argov1alpha1.Application) { app.Finalizers = []string{argoForegroundFinalizer} }, "argocd")
	if err := f.c.syncDeployment(ctx, "jane/web"); err != nil {
		t.Fatal(err)
	}
	if got := verbs(f.argo.Actions()); !slices.Equal(got, []string{"patch applications"}) {
		t.Errorf("argo actions %v, want only the finalizer's removal", got)
	}
}

// A tenant this instance holds is served as before, and a change of its placement queues its
// deployments.
func TestServeFollowsThePlacement(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "a"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	f := newReleaseFixture(t, ctx, held, nil, "argocd")
	if !f.c.served.Holds("jane") {
		t.Fatal("jane not held")
	}
	moved := held.DeepCopy()
	moved.Spec.Instance = "b"
	if _, err := f.gitops.ManagedGitopsV1alpha1().TenantPlacements().Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "jane's deployment queued by the move", func() bool {
		return slices.Equal(drainQueue(f.c.Controller), []string{"jane/web"})
	})
}
