package agent

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// Deployments into a tenant's own namespace go through Argo CD's one cluster cache of the
// cluster it runs in, read with the application-controller's own identity, which may read but
// not write. Every write of a sync (apply, prune, hooks) is made by impersonating the
// namespace's deployer (Argo CD sync impersonation: the AppProject's
// destinationServiceAccounts), a ServiceAccount in the tenant's namespace with no token, bound
// only there to what the namespace's edit role allows. So a tenant's repository can write no
// more than an editor of the namespace: no RoleBindings, no escalation, nothing outside it. A
// namespace admin who wants the deployer to manage RBAC binds it to more themselves.
//
// Per namespace that is a ServiceAccount and two RoleBindings (the deployer's rights, and the
// application-controller's right to impersonate it), no cluster Secret and no cache: a tenant
// costs Argo CD what its Applications cost.
const (
	// DeployerName is the deployer ServiceAccount of every tenant namespace.
	DeployerName = "gitops-deployer"
	// deployerRole is what the deployer may do (artifacts/agent/deployer.yaml: the edit role).
	deployerRole = "gitops-service-deployer"
	// impersonatorRole lets its subject impersonate the deployer ServiceAccount of the
	// namespace it is bound in, and nothing else.
	impersonatorRole = "gitops-service-deployer-impersonator"
	// labelDeployer marks the objects the agent makes for deployers, so that its informers
	// watch those alone.
	labelDeployer = "managed-gitops.redhat.com/deployer"
	// DefaultControllerServiceAccount is the application-controller's ServiceAccount in an
	// Argo CD installation.
	DefaultControllerServiceAccount = "argocd-application-controller"
)

// deployerObjects watches the deployers' ServiceAccounts and RoleBindings in every namespace,
// selected by labelDeployer, so that a ready deployer costs no request and one deleted under
// the agent is made again.
type deployerObjects struct {
	serviceAccounts corelisters.ServiceAccountLister
	roleBindings    rbaclisters.RoleBindingLister
}

func (a *Agent) setupDeployers() error {
	a.deployerInformers = informers.NewSharedInformerFactoryWithOptions(a.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labelDeployer + "=true" }))
	a.factories = append(a.factories, a.deployerInformers)
	requeue := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { a.requeueNamespaceOf(obj) },
		DeleteFunc: a.requeueNamespaceOf,
	}
	sa := a.deployerInformers.Core().V1().ServiceAccounts()
	rb := a.deployerInformers.Rbac().V1().RoleBindings()
	a.deployerObjects = deployerObjects{serviceAccounts: sa.Lister(), roleBindings: rb.Lister()}
	if err := a.addInformer(sa.Informer(), requeue); err != nil {
		return err
	}
	return a.addInformer(rb.Informer(), requeue)
}

// requeueNamespaceOf has the namespace of a deployer's object that changed or went look at its
// deployer again.
func (a *Agent) requeueNamespaceOf(obj interface{}) {
	if m, ok := unwrapTombstone(obj).(metav1.Object); ok {
		a.deployerChanged(m.GetNamespace())
		a.requeueNamespace(m.GetNamespace())
	}
}

// deployerBindings are the RoleBindings of namespace's deployer, by name: the deployer's
// rights, and the application-controller's right to impersonate it.
func (a *Agent) deployerBindings(namespace string) map[string]*rbacv1.RoleBinding {
	binding := func(role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{subject},
		}
	}
	return map[string]*rbacv1.RoleBinding{
		deployerRole: binding(deployerRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: DeployerName, Namespace: namespace}),
		impersonatorRole: binding(impersonatorRole, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind,
			Name: a.controllerServiceAccount, Namespace: a.argoNamespace}),
	}
}

// deployerReady tells from the cache whether namespace's deployer exists with exactly the
// bindings it should have.
func (a *Agent) deployerReady(namespace string) bool {
	if sa, err := a.deployerObjects.serviceAccounts.ServiceAccounts(namespace).Get(DeployerName); err != nil ||
		sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		return false
	}
	for name, want := range a.deployerBindings(namespace) {
		got, err := a.deployerObjects.roleBindings.RoleBindings(namespace).Get(name)
		if err != nil || got.RoleRef != want.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != want.Subjects[0] {
			return false
		}
	}
	return true
}

// ensureDeployer makes namespace's deployer and its bindings what they should be. The three
// objects do not depend on one another: one round trip, by server-side apply, which also puts
// back a binding someone changed.
func (a *Agent) ensureDeployer(ctx context.Context, namespace string) error {
	if a.deployerReady(namespace) {
		return nil
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	lbls := map[string]string{labelDeployer: "true", argocd.LabelTenantNamespace: namespace}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// No token is ever made for it, and nothing should mount one.
		_, err := a.kube.CoreV1().ServiceAccounts(namespace).Apply(gctx, corev1ac.ServiceAccount(DeployerName, namespace).
			WithLabels(lbls).WithAutomountServiceAccountToken(false), opts)
		if err != nil {
			return fmt.Errorf("applying ServiceAccount %s/%s: %w", namespace, DeployerName, err)
		}
		return nil
	})
	for name, rb := range a.deployerBindings(namespace) {
		s := rb.Subjects[0]
		g.Go(func() error {
			_, err := a.kube.RbacV1().RoleBindings(namespace).Apply(gctx, rbacv1ac.RoleBinding(name, namespace).WithLabels(lbls).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(rb.RoleRef.Name)).
				WithSubjects(rbacv1ac.Subject().WithKind(s.Kind).WithName(s.Name).WithNamespace(s.Namespace)), opts)
			if err != nil {
				return fmt.Errorf("applying RoleBinding %s/%s: %w", namespace, name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	klog.V(2).InfoS("deployer ready", "namespace", namespace)
	return nil
}

// removeDeployer undoes ensureDeployer once namespace deploys nothing any more. Every delete is
// issued (a missing object costs a 404): a setup cut short leaves no record of what exists.
func (a *Agent) removeDeployer(ctx context.Context, namespace string) error {
	for name := range a.deployerBindings(namespace) {
		err := a.kube.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s: %w", namespace, name, err)
		}
	}
	err := a.kube.CoreV1().ServiceAccounts(namespace).Delete(ctx, DeployerName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ServiceAccount %s/%s: %w", namespace, DeployerName, err)
	}
	return nil
}

// deployerExists tells from the cache whether any object of namespace's deployer is left.
func (a *Agent) deployerExists(namespace string) bool {
	if _, err := a.deployerObjects.serviceAccounts.ServiceAccounts(namespace).Get(DeployerName); err == nil {
		return true
	}
	rbs, err := a.deployerObjects.roleBindings.RoleBindings(namespace).List(labels.Everything())
	return err != nil || len(rbs) > 0
}

// localDestination is a deployment into the tenant's own cluster: the API rejects a namespace
// without an environment, so it is always the GitOpsDeployment's own namespace.
func (a *Agent) localDestination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	return argov1alpha1.ApplicationDestination{Server: a.localServer, Namespace: depl.Namespace}, nil
}

// legacyClusterSecret is the cluster Secret through which an agent before sync impersonation
// deployed into namespace: it holds a token of that namespace's old deployer (admin of the
// namespace, valid for up to a week), which nothing needs any more.
func legacyClusterSecret(namespace string) string { return "gitops-local-" + namespace }

// removeLegacyDeployer deletes namespace's legacyClusterSecret, if the cache shows one.
func (a *Agent) removeLegacyDeployer(ctx context.Context, namespace string) error {
	s, err := a.argoSecrets.Secrets(a.argoNamespace).Get(legacyClusterSecret(namespace))
	if err != nil || s.Labels[argocd.LabelTenantNamespace] != namespace {
		return nil
	}
	klog.InfoS("deleting the cluster Secret of an earlier agent's deployer", "namespace", namespace, "secret", s.Name)
	return a.deleteSecret(ctx, s.Name)
}

// deployerIdentity is the ServiceAccount Argo CD impersonates to sync into namespace, as the
// AppProject's destinationServiceAccounts name it.
func deployerIdentity(namespace string) string { return namespace + ":" + DeployerName }
