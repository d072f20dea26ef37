package repositorycredential

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// A tenant moving away keeps its repository Secret on this instance (an Application retiring
// on the way out may need it to prune) until the instance has released it; then the Secret goes.
func TestServeKeepsTheRepositorySecretUntilTheTenantIsReleased(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "cred", Namespace: "team-a", UID: "u-1", Generation: 1},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Repository: "https://git.example.com/org/repo.git", Secret: "s"},
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
		Type:       managedv1alpha1.RepositoryCredentialSecretType,
		Data:       map[string][]byte{"username": []byte("u"), "password": []byte("p")},
	}
	moving := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "b"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "a"}}
	gitops := gitopsfake.NewSimpleClientset(cred, moving)
	kube := kubefake.NewClientset(secret)
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	tenantSecrets := informers.NewSharedInformerFactory(kube, 0)
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	c, err := New(gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentRepositoryCredentials(), framework.SecretInformer(tenantSecrets.Core().V1().Secrets()),
		argoKube.Core().V1().Secrets(), argoKube.Core().V1().ConfigMaps(), "argocd", gitops, kube, kube, record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serve(tenancy.NewTenants("a", gitopsInformers.ManagedGitops().V1alpha1().TenantPlacements())); err != nil {
		t.Fatal(err)
	}
	host := &fakeGitHost{password: "p"}
	c.lsRemote = func(ctx context.Context, repoURL string, creds gitCredentials, trust gitTrust) error {
		return host.lsRemote(ctx, repoURL, creds, trust)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, tenantSecrets, argoKube)
	go c.Run(ctx, 1)

	repoSecret := func() error {
		_, err := kube.CoreV1().Secrets("argocd").Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		return err
	}
	controllertest.Eventually(t, ctx, "the repository Secret of a tenant still kept", func() bool { return repoSecret() == nil })

	released := moving.DeepCopy()
	released.Status.Instance = ""
	if _, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().UpdateStatus(ctx, released, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the repository Secret of the released tenant deleted", func() bool {
		return apierrors.IsNotFound(repoSecret())
	})
}
