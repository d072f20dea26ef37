package managedenvironment

import (
	"context"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// New wires the controller into shared informers: an environment whose Secret is missing gets
// the reference's condition. (Its GitOpsDeployments follow its status through the
// GitOpsDeployment controller's own watch: pkg/controller/gitopsdeployment.)
func TestNewReconcilesFromInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := testEnvironment(nil)
	depl := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace}}
	depl.Spec.Destination = managedv1alpha1.ApplicationDestination{Environment: env.Name, Namespace: "web"}
	gitops := gitopsfake.NewSimpleClientset(env, depl)
	kube := kubefake.NewClientset()
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	tenantSecrets := informers.NewSharedInformerFactory(kube, 0)
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	argoInformers := argoinformers.NewSharedInformerFactory(argofake.NewSimpleClientset(), 0)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	c, err := New(managed.GitOpsDeploymentManagedEnvironments(), framework.SecretInformer(tenantSecrets.Core().V1().Secrets()), managed.GitOpsDeployments(),
		argoKube.Core().V1().Secrets(), argoInformers.Argoproj().V1alpha1().Applications(), "argocd", gitops, kube, kube,
		operations.NewRecorder(gitops, "argocd"), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name {
		t.Errorf("name %q, want %q", c.Name, Name)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, tenantSecrets, argoKube, argoInformers)
	go c.Run(ctx, 1)

	controllertest.Eventually(t, ctx, "the missing Secret reported", func() bool {
		got, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(env.Namespace).Get(ctx, env.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
		return cond != nil && cond.Reason == string(managedv1alpha1.ManagedEnvironmentReasonKubernetesError)
	})
}
