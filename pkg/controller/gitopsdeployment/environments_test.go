package gitopsdeployment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// drainQueue empties c's queue and returns its keys, sorted.
func drainQueue(c *framework.Controller) []string {
	var keys []string
	for c.Queue.Len() > 0 {
		k, _ := c.Queue.Get()
		c.Queue.Done(k)
		c.Queue.Forget(k)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sharedClusterSecret is a shared cluster Secret of the ManagedEnvironment controller's, listing
// the environments users ("namespace/name/uid").
func sharedClusterSecret(t *testing.T, server string, users ...string) *corev1.Secret {
	t.Helper()
	list, err := json.Marshal(users)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-cluster-0123456789abcdef", Namespace: "argocd",
			Labels:      map[string]string{managedenvironment.LabelManagedCluster: "0123456789abcdef"},
			Annotations: map[string]string{managedenvironment.AnnotationClusterUsers: string(list)}},
		Data: map[string][]byte{argocd.ClusterKeyServer: []byte(server)},
	}
}

func deploymentThrough(namespace, name, env string) *managedv1alpha1.GitOpsDeployment {
	d := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}}
	d.Spec.Source = managedv1alpha1.ApplicationSource{RepoURL: "https://github.com/example/repo", Path: "deploy"}
	d.Spec.Destination = managedv1alpha1.ApplicationDestination{Environment: env, Namespace: "web"}
	return d
}

// The deployments of an environment are queued at its events, and at those of the shared
// cluster Secrets whose list of environments it came on or went off, or whose content changed
// or that went: exactly those the ManagedEnvironment controller queues the environments of
// (managedenvironment.ClusterSecretEnvironments).
func TestDeploymentsFollowTheirEnvironment(t *testing.T) {
	c := &Controller{Controller: framework.NewController("test-gitopsdeployments", nil)}
	c.deploymentIndex = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byEnvironment: environmentKeyOfDeployment})
	for _, d := range []*managedv1alpha1.GitOpsDeployment{deploymentThrough("jane", "web", "prod"), deploymentThrough("bob", "api", "prod"),
		deploymentThrough("bob", "other", "test"), deployment(func(d *managedv1alpha1.GitOpsDeployment) { d.Name = "local" })} {
		must(t, c.deploymentIndex.Add(d))
	}

	s1 := sharedClusterSecret(t, "https://api.example?managedCluster=0123456789abcdef", "jane/prod/1")
	s2 := sharedClusterSecret(t, "https://api.example?managedCluster=0123456789abcdef", "bob/prod/2", "jane/prod/1")
	c.onClusterSecret(nil, s1, false)
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[jane/web]" {
		t.Errorf("add: %v", got)
	}
	// Bob joins: only bob's deployments hear of it.
	c.onClusterSecret(s1, s2, false)
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[bob/api]" {
		t.Errorf("join: %v", got)
	}
	// Someone changes the content: every environment's deployments.
	tampered := s2.DeepCopy()
	tampered.Data[argocd.ClusterKeyServer] = []byte("https://elsewhere")
	c.onClusterSecret(s2, tampered, false)
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[bob/api jane/web]" {
		t.Errorf("tampered: %v", got)
	}
	// Deleted, seen through a tombstone: every environment's deployments.
	c.onClusterSecret(nil, cache.DeletedFinalStateUnknown{Key: "argocd/" + s2.Name, Obj: s2}, true)
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[bob/api jane/web]" {
		t.Errorf("deleted: %v", got)
	}
	// Other Secrets of the namespace, and those of the per-environment scheme, queue nothing.
	c.onClusterSecret(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: "argocd"}}, false)
	legacy := s1.DeepCopy()
	legacy.Labels[managedenvironment.LabelEnvironmentUID] = "1"
	c.onClusterSecret(nil, legacy, false)
	if got := drainQueue(c.Controller); len(got) != 0 {
		t.Errorf("unrelated: %v", got)
	}

	// An environment's own events, its delete's tombstone included.
	env := &managedv1alpha1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: "bob", Name: "prod"}}
	c.onEnvironment(env)
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[bob/api]" {
		t.Errorf("environment: %v", got)
	}
	c.onEnvironment(cache.DeletedFinalStateUnknown{Key: "jane/prod", Obj: &managedv1alpha1.GitOpsDeploymentManagedEnvironment{}})
	if got := drainQueue(c.Controller); fmt.Sprint(got) != "[jane/web]" {
		t.Errorf("deleted environment: %v", got)
	}
	c.onEnvironment(&managedv1alpha1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "unused"}})
	if got := drainQueue(c.Controller); len(got) != 0 {
		t.Errorf("an environment no deployment names: %v", got)
	}
}

// New wires the controller into shared informers: a GitOpsDeployment is queued by its own
// events, by those of its ManagedEnvironment and of the shared cluster Secrets that list it,
// by those of its namespace's deployer, and by those of the hold of the same name.
func TestNewWatchesFromInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gitops := gitopsfake.NewSimpleClientset()
	argo := argofake.NewSimpleClientset()
	kube := kubefake.NewClientset()
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
		gitops, argo, kube, operations.NewRecorder(gitops, "argocd"), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name || c.ProjectRefresh.Name != ProjectRefreshName {
		t.Errorf("names %q, %q; want %q, %q", c.Name, c.ProjectRefresh.Name, Name, ProjectRefreshName)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers, argoKube, deployerInformers)
	// Not run: the test reads what the handlers queue.
	queued := func(what string, write func() error) {
		t.Helper()
		must(t, write())
		controllertest.Eventually(t, ctx, what, func() bool { return slices.Equal(drainQueue(c.Controller), []string{"jane/web"}) })
	}

	d := deploymentThrough("jane", "web", "prod")
	queued("the deployment queued by its own add", func() error {
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	queued("the deployment queued by its environment's add", func() error {
		env := &managedv1alpha1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "prod", UID: "1"}}
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments("jane").Create(ctx, env, metav1.CreateOptions{})
		return err
	})
	queued("the deployment queued by a cluster Secret listing its environment", func() error {
		_, err := kube.CoreV1().Secrets("argocd").Create(ctx, sharedClusterSecret(t, "https://api.example", "jane/prod/1"), metav1.CreateOptions{})
		return err
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: deployer.DeployerName,
		Labels: map[string]string{deployer.LabelDeployer: "true"}}}
	if _, err := kube.CoreV1().ServiceAccounts("jane").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	queued("the deployment queued by a change to its namespace's deployer", func() error {
		sa.Annotations = map[string]string{"changed": "by someone"}
		_, err := kube.CoreV1().ServiceAccounts("jane").Update(ctx, sa, metav1.UpdateOptions{})
		return err
	})
	hold := &managedv1alpha1.GitOpsDeploymentHold{ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web"},
		Spec: managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: "abc1234"}}
	queued("the deployment queued by its hold's add", func() error {
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds("jane").Create(ctx, hold, metav1.CreateOptions{})
		return err
	})
	queued("the deployment queued by its hold's release", func() error {
		return gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds("jane").Delete(ctx, "web", metav1.DeleteOptions{})
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
