// Package deployer is the per-namespace deployer identity of the GitOpsDeployment controller
// (pkg/controller/gitopsdeployment): the ServiceAccount Argo CD impersonates to sync into a
// tenant's own namespace, and its RoleBindings, watched through informers of their own that
// see only the objects labelled LabelDeployer (NewInformerFactory).
package deployer

import (
	"context"
	"fmt"
	"sync"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"golang.org/x/sync/errgroup"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
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
	// LabelDeployer marks the objects the agent makes for deployers, so that its informers
	// watch those alone.
	LabelDeployer = "managed-gitops.redhat.com/deployer"
	// DefaultControllerServiceAccount is the application-controller's ServiceAccount in an
	// Argo CD installation.
	DefaultControllerServiceAccount = "argocd-application-controller"
)

// fieldManager is the field manager of the deployers' writes.
const fieldManager = argocd.FieldManager

// NewInformerFactory is the informer factory that watches the deployers' ServiceAccounts and
// RoleBindings in every namespace, selected by LabelDeployer, so that a ready deployer costs no
// request and one deleted under the agent is made again. Its informer resyncs on no timer.
func NewInformerFactory(kube kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelDeployer + "=true" }))
}

// Deployers makes, checks and removes the deployer of each tenant namespace.
type Deployers struct {
	kube kubernetes.Interface
	// argoKube is the client of the cluster Argo CD runs on (its namespace's Secrets).
	argoKube      kubernetes.Interface
	argoNamespace string
	// localServer is the URL of the Argo CD cluster of the cluster the agent runs on.
	localServer string
	// controllerServiceAccount is the application-controller's ServiceAccount (argoNamespace):
	// the identity that impersonates the deployers.
	controllerServiceAccount string

	serviceAccountInformer cache.SharedIndexInformer
	roleBindingInformer    cache.SharedIndexInformer
	serviceAccounts        corelisters.ServiceAccountLister
	roleBindings           rbaclisters.RoleBindingLister
	// argoSecrets are the Secrets of the Argo CD namespace (removeLegacy).
	argoSecrets corelisters.SecretLister
}

// New reads the deployers from serviceAccounts and roleBindings, informers of a
// NewInformerFactory, and the Argo CD namespace's Secrets from argoSecrets.
func New(
	serviceAccounts coreinformers.ServiceAccountInformer,
	roleBindings rbacinformers.RoleBindingInformer,
	argoSecrets coreinformers.SecretInformer,
	kube, argoKube kubernetes.Interface,
	argoNamespace, localServer, controllerServiceAccount string,
) *Deployers {
	return &Deployers{
		kube:                     kube,
		argoKube:                 argoKube,
		argoNamespace:            argoNamespace,
		localServer:              localServer,
		controllerServiceAccount: controllerServiceAccount,
		serviceAccountInformer:   serviceAccounts.Informer(),
		roleBindingInformer:      roleBindings.Informer(),
		serviceAccounts:          serviceAccounts.Lister(),
		roleBindings:             roleBindings.Lister(),
		argoSecrets:              argoSecrets.Lister(),
	}
}

// OnChange calls changed with the namespace of a deployer's object that changed or went.
func (d *Deployers) OnChange(changed func(namespace string)) error {
	onObject := func(obj interface{}) {
		if m, ok := framework.UnwrapTombstone(obj).(metav1.Object); ok {
			changed(m.GetNamespace())
		}
	}
	h := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { onObject(obj) },
		DeleteFunc: onObject,
	}
	for _, inf := range []cache.SharedIndexInformer{d.serviceAccountInformer, d.roleBindingInformer} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// bindings are the RoleBindings of namespace's deployer, by name: the deployer's rights, and
// the application-controller's right to impersonate it.
func (d *Deployers) bindings(namespace string) map[string]*rbacv1.RoleBinding {
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
			Name: d.controllerServiceAccount, Namespace: d.argoNamespace}),
	}
}

// Ready tells from the cache whether namespace's deployer exists with exactly the bindings it
// should have.
func (d *Deployers) Ready(namespace string) bool {
	if sa, err := d.serviceAccounts.ServiceAccounts(namespace).Get(DeployerName); err != nil ||
		sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		return false
	}
	for name, want := range d.bindings(namespace) {
		got, err := d.roleBindings.RoleBindings(namespace).Get(name)
		if err != nil || got.RoleRef != want.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != want.Subjects[0] {
			return false
		}
	}
	return true
}

// Ensure makes namespace's deployer and its bindings what they should be. The three objects
// do not depend on one another: one round trip, by server-side apply, which also puts back a
// binding someone changed.
func (d *Deployers) Ensure(ctx context.Context, namespace string) error {
	if d.Ready(namespace) {
		return nil
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	lbls := map[string]string{LabelDeployer: "true", argocd.LabelTenantNamespace: namespace}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// No token is ever made for it, and nothing should mount one.
		_, err := d.kube.CoreV1().ServiceAccounts(namespace).Apply(gctx, corev1ac.ServiceAccount(DeployerName, namespace).
			WithLabels(lbls).WithAutomountServiceAccountToken(false), opts)
		if err != nil {
			return fmt.Errorf("applying ServiceAccount %s/%s: %w", namespace, DeployerName, err)
		}
		return nil
	})
	for name, rb := range d.bindings(namespace) {
		s := rb.Subjects[0]
		g.Go(func() error {
			_, err := d.kube.RbacV1().RoleBindings(namespace).Apply(gctx, rbacv1ac.RoleBinding(name, namespace).WithLabels(lbls).
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

// Remove undoes Ensure once namespace deploys nothing any more. Every delete is issued (a
// missing object costs a 404): a setup cut short leaves no record of what exists.
func (d *Deployers) Remove(ctx context.Context, namespace string) error {
	for name := range d.bindings(namespace) {
		err := d.kube.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s: %w", namespace, name, err)
		}
	}
	err := d.kube.CoreV1().ServiceAccounts(namespace).Delete(ctx, DeployerName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ServiceAccount %s/%s: %w", namespace, DeployerName, err)
	}
	return nil
}

// ReleaseImpersonation deletes namespace's impersonator RoleBinding while it still names this
// instance's application-controller: an Argo CD instance that let the tenant go keeps no right to
// impersonate its deployer, and the instance taking it binds its own. The resourceVersion
// precondition leaves a binding the new instance has rewritten meanwhile.
func (d *Deployers) ReleaseImpersonation(ctx context.Context, namespace string) error {
	rb, err := d.roleBindings.RoleBindings(namespace).Get(impersonatorRole)
	if err != nil {
		return nil // none in the cache, so none of this instance's
	}
	want := d.bindings(namespace)[impersonatorRole].Subjects[0]
	if len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		return nil
	}
	rv := rb.ResourceVersion
	err = d.kube.RbacV1().RoleBindings(namespace).Delete(ctx, impersonatorRole, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting RoleBinding %s/%s: %w", namespace, impersonatorRole, err)
	}
	return nil
}

// Exists tells from the cache whether any object of namespace's deployer is left.
func (d *Deployers) Exists(namespace string) bool {
	if _, err := d.serviceAccounts.ServiceAccounts(namespace).Get(DeployerName); err == nil {
		return true
	}
	rbs, err := d.roleBindings.RoleBindings(namespace).List(labels.Everything())
	return err != nil || len(rbs) > 0
}

// LocalDestination is a deployment into the tenant's own cluster: the API rejects a namespace
// without an environment, so it is always the GitOpsDeployment's own namespace.
func (d *Deployers) LocalDestination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	return argov1alpha1.ApplicationDestination{Server: d.localServer, Namespace: depl.Namespace}, nil
}

// legacyClusterSecret is the cluster Secret through which an agent before sync impersonation
// deployed into namespace: it holds a token of that namespace's old deployer (admin of the
// namespace, valid for up to a week), which nothing needs any more.
func legacyClusterSecret(namespace string) string { return "gitops-local-" + namespace }

// RemoveLegacy deletes namespace's legacyClusterSecret, if the cache shows one.
func (d *Deployers) RemoveLegacy(ctx context.Context, namespace string) error {
	s, err := d.argoSecrets.Secrets(d.argoNamespace).Get(legacyClusterSecret(namespace))
	if err != nil || s.Labels[argocd.LabelTenantNamespace] != namespace {
		return nil
	}
	klog.InfoS("deleting the cluster Secret of an earlier agent's deployer", "namespace", namespace, "secret", s.Name)
	return argocd.DeleteSecret(ctx, d.argoKube, d.argoNamespace, s.Name)
}

// Identity is the ServiceAccount Argo CD impersonates to sync into namespace, as the
// AppProject's destinationServiceAccounts name it.
func Identity(namespace string) string { return namespace + ":" + DeployerName }

// Jobs creates and reads Jobs as each namespace's deployer, by impersonating it: the
// verification Jobs of promotion gates run with the rights of the namespace's edit role, and
// the agent needs none on Jobs or Pods itself, only the right to impersonate the deployers.
type Jobs struct {
	cfg *rest.Config

	mu      sync.Mutex
	clients map[string]kubernetes.Interface
}

// NewJobs returns the Jobs of the deployers of the cluster cfg reaches.
func NewJobs(cfg *rest.Config) *Jobs {
	return &Jobs{cfg: cfg, clients: map[string]kubernetes.Interface{}}
}

// Get reads the Job namespace/name as the namespace's deployer.
func (j *Jobs) Get(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	c, err := j.client(namespace)
	if err != nil {
		return nil, err
	}
	return c.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Create creates job as its namespace's deployer.
func (j *Jobs) Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	c, err := j.client(job.Namespace)
	if err != nil {
		return nil, err
	}
	return c.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{FieldManager: "gitops-service-agent"})
}

func (j *Jobs) client(namespace string) (kubernetes.Interface, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c, ok := j.clients[namespace]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(j.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(namespace, DeployerName)}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	j.clients[namespace] = c
	return c, nil
}
