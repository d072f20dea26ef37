package managedenvironment

import (
	"context"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// An instance releasing a tenant goes on serving its environments while the tenant's
// Applications are being removed (one retiring may need its cluster to prune), and takes them
// out of its cluster Secrets once the tenant is released, writing nothing on the environment.
func TestServeKeepsTheClustersUntilTheTenantIsReleased(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testEnvironment(nil)
	cluster := sharedSecret(clusterSecretPrefix+"0123456789abcdef", userOf(env))
	moving := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	gitops := gitopsfake.NewSimpleClientset(env, moving)
	kube := kubefake.NewClientset()
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	tenantSecrets := informers.NewSharedInformerFactory(kube, 0)
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	argoInformers := argoinformers.NewSharedInformerFactory(argofake.NewSimpleClientset(), 0)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	c, err := New(managed.GitOpsDeploymentManagedEnvironments(), framework.SecretInformer(tenantSecrets.Core().V1().Secrets()), managed.GitOpsDeployments(),
		argoKube.Core().V1().Secrets(), argoInformers.Argoproj().V1alpha1().Applications(), "argocd", gitops, kube, kube,
		operations.NewRecorder(nil, "argocd"), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serve(tenancy.NewTenants("a", managed.TenantPlacements())); err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, tenantSecrets, argoKube, argoInformers)
	controllertest.Drain(t, ctx, c.Controller)
	key := env.Namespace + "/" + env.Name

	// Moving away, not released yet: the environment is still served (its Secret is missing
	// here, which it reports).
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	got, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(env.Namespace).Get(ctx, env.Name, metav1.GetOptions{})
	if err != nil || len(got.Status.Conditions) == 0 {
		t.Fatalf("the environment of a tenant still kept was not served: %+v, %v", got.Status, err)
	}
	if _, err := kube.CoreV1().Secrets("argocd").Create(ctx, cluster, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	released := moving.DeepCopy()
	released.Status.Instance = ""
	if _, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().UpdateStatus(ctx, released, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the release queued the tenant's environment", func() bool { return c.Queue.Len() > 0 })
	controllertest.Drain(t, ctx, c.Controller)
	gitops.ClearActions()
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets("argocd").Get(ctx, cluster.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the released tenant's only cluster Secret is left (err %v)", err)
	}
	for _, a := range gitops.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("wrote %s %s on a tenant another instance takes", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
