package repositorycredential

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// New wires the controller into shared informers: a credential whose Secret arrives after it
// is checked again through the Secret informer's index, gets its repository Secret in the Argo
// CD namespace and valid conditions, and a repository Secret deleted by someone else comes back.
func TestNewReconcilesFromInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "cred", Namespace: "team-a", UID: "u-1", Generation: 1},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Repository: "https://git.example.com/org/repo.git", Secret: "s"},
	}
	gitops := gitopsfake.NewSimpleClientset(cred)
	kube := kubefake.NewClientset()
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	tenantSecrets := informers.NewSharedInformerFactory(kube, 0)
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	rec := record.NewFakeRecorder(10)
	c, err := New(gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentRepositoryCredentials(), framework.SecretInformer(tenantSecrets.Core().V1().Secrets()),
		argoKube.Core().V1().Secrets(), argoKube.Core().V1().ConfigMaps(), "argocd", gitops, kube, kube, rec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name {
		t.Errorf("name %q, want %q", c.Name, Name)
	}
	host := &fakeGitHost{password: "p"}
	c.lsRemote = func(ctx context.Context, repoURL string, creds gitCredentials, trust gitTrust) error {
		return host.lsRemote(ctx, repoURL, creds, trust)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, tenantSecrets, argoKube)
	go c.Run(ctx, 1)

	controllertest.Eventually(t, ctx, "SecretNotFound reported", func() bool {
		got, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials("team-a").Get(ctx, "cred", metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) > 0 && got.Status.Conditions[0].Reason == managedv1alpha1.RepositoryCredentialReasonSecretNotFound
	})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
		Type:       managedv1alpha1.RepositoryCredentialSecretType,
		Data:       map[string][]byte{"username": []byte("u"), "password": []byte("p")},
	}
	if _, err := kube.CoreV1().Secrets("team-a").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repoSecret := func() bool {
		s, err := kube.CoreV1().Secrets("argocd").Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		return err == nil && s.Labels[argocd.LabelClaimsRepository] == "true" && string(s.Data["password"]) == "p"
	}
	controllertest.Eventually(t, ctx, "the repository Secret of the valid credential", repoSecret)
	controllertest.Eventually(t, ctx, "valid conditions", func() bool {
		got, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials("team-a").Get(ctx, "cred", metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) > 0 &&
			got.Status.Conditions[0].Reason == managedv1alpha1.RepositoryCredentialReasonRepositoryCredentialUpToDate
	})
	if err := kube.CoreV1().Secrets("argocd").Delete(ctx, argocd.RepositorySecretName(cred.UID), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the deleted repository Secret written again", repoSecret)
}
