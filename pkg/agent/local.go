package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Deployments into a tenant's own namespace do not use Argo CD's in-cluster identity, which can
// write anywhere. Each tenant namespace gets a deployer: a ServiceAccount in the Argo CD
// namespace (so that the tenant cannot take its token), bound by a RoleBinding in the tenant
// namespace only, and used through a cluster Secret limited to that namespace. Even a manifest
// that names another namespace is then refused twice: Argo CD does not manage that namespace,
// and the API server would not let the deployer write there.
//
// deployerRoles are the ClusterRoles (artifacts/agent/deployer.yaml) a deployer is bound to in
// its namespace, each by a RoleBinding of the same name: the namespace admin's writes, and
// reading every type, which Argo CD's cache of the namespace needs.
var deployerRoles = []string{"gitops-service-deployer", "gitops-service-deployer-reader"}

// deployerRevision changes whenever what ensureLocalCluster makes changes, so that the
// deployers made by an older agent are brought up to date rather than trusted as they are.
// Revision 2: the token comes from the TokenRequest API and expires (revision 1 used a token
// Secret, which never does).
const (
	labelDeployerRevision = "managed-gitops.redhat.com/deployer-revision"
	deployerRevision      = "2"
	// annotationRenewAfter on a deployer's cluster Secret is when its token is half spent
	// (RFC 3339): from then on, the next reconcile of the namespace gives it a new one.
	annotationRenewAfter = "managed-gitops.redhat.com/token-renew-after"
	// rootCAConfigMap is published in every namespace by kube-controller-manager: the CA that
	// signs the kube-apiserver's serving certificate, which Argo CD verifies the deployer's
	// connections against.
	rootCAConfigMap = "kube-root-ca.crt"
	rootCAKey       = "ca.crt"
)

// MinDeployerTokenLifetime is the shortest life the kube-apiserver grants a TokenRequest, and
// minTokenRenewal the shortest time before renewing one (guards against clock skew).
const (
	MinDeployerTokenLifetime = 10 * time.Minute
	minTokenRenewal          = time.Minute
)

// DefaultDeployerTokenLifetime is the life of a deployer's token unless configured: renewed at
// half of it, a token outlives an agent that is down for up to three and a half days.
const DefaultDeployerTokenLifetime = 7 * 24 * time.Hour

// LocalClusterName is the Argo CD cluster (and cluster Secret) through which the
// GitOpsDeployments of one namespace deploy into it.
func LocalClusterName(namespace string) string { return "gitops-local-" + namespace }

// DeployerName is the ServiceAccount, in the Argo CD namespace, that deploys into namespace.
func DeployerName(namespace string) string { return "gitops-deployer-" + namespace }

// localDestination is a deployment into the tenant's own cluster: the API rejects a namespace
// without an environment, so it is always the GitOpsDeployment's own namespace, through that
// namespace's deployer.
func (a *Agent) localDestination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	return argov1alpha1.ApplicationDestination{Name: LocalClusterName(depl.Namespace), Namespace: depl.Namespace}, nil
}

// deployer is what the agent remembers of one namespace's deployer. Its lock makes the workers
// of the namespace's GitOpsDeployments set it up once rather than each minting a token, and
// keeps a setup and a removal from interleaving; renewAt answers "ready?" without waiting for
// the informer to show the agent's own write. Entries stay for the agent's life: one small
// struct per namespace that ever deployed.
type deployer struct {
	mu      sync.Mutex
	renewAt time.Time   // zero: not known to be ready
	renew   *time.Timer // requeues the namespace at renewAt
	// removed is the UID of the cluster Secret the agent last deleted, which the informer may
	// still show for a moment and must not be taken as ready.
	removed types.UID
	// stale is set, without the lock, by events saying the deployer needs looking at again.
	stale atomic.Bool
}

func (a *Agent) deployerOf(namespace string) *deployer {
	d, _ := a.deployers.LoadOrStore(namespace, &deployer{})
	return d.(*deployer)
}

// reset makes the next ensureLocalCluster of the namespace look at the cluster again; d is locked.
func (d *deployer) reset() {
	d.renewAt = time.Time{}
	if d.renew != nil {
		d.renew.Stop()
	}
}

// ensureLocalCluster makes the deployer of namespace and its cluster Secret exist, with a
// token that is not yet half spent. The cluster Secret is written last, so its presence means
// everything before it was done, and a ready deployer costs no request at all.
func (a *Agent) ensureLocalCluster(ctx context.Context, namespace string) error {
	d := a.deployerOf(namespace)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stale.Swap(false) {
		d.reset()
	}
	now := a.now()
	if now.Before(d.renewAt) {
		return nil
	}
	name := LocalClusterName(namespace)
	if s, err := a.argoSecrets.Secrets(a.argoNamespace).Get(name); err == nil && s.UID != d.removed &&
		s.Labels[LabelTenantNamespace] == namespace && s.Labels[labelDeployerRevision] == deployerRevision {
		if renewAt, err := time.Parse(time.RFC3339, s.Annotations[annotationRenewAfter]); err == nil && now.Before(renewAt) {
			a.scheduleRenewal(d, namespace, renewAt)
			return nil
		}
	}

	var caData []byte
	if !a.localCluster.Insecure {
		cm, err := a.argoConfigMaps.ConfigMaps(a.argoNamespace).Get(rootCAConfigMap)
		if err != nil {
			return fmt.Errorf("reading the cluster's root CA (ConfigMap %s): %w", rootCAConfigMap, err)
		}
		caData = []byte(cm.Data[rootCAKey])
	}

	// The ServiceAccount and its RoleBindings do not depend on one another: one round trip
	// rather than three.
	sa := DeployerName(namespace)
	labels := map[string]string{LabelTenantNamespace: namespace}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		_, err := a.kube.CoreV1().ServiceAccounts(a.argoNamespace).Create(gctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels},
		}, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ServiceAccount %s: %w", sa, err)
		}
		return nil
	})
	for _, role := range deployerRoles {
		g.Go(func() error {
			_, err := a.kube.RbacV1().RoleBindings(namespace).Create(gctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: a.argoNamespace}},
			}, metav1.CreateOptions{FieldManager: fieldManager})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating RoleBinding %s/%s: %w", namespace, role, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}

	// A TokenRequest answers at once with a token that expires (a token Secret waits for
	// kube-controller-manager, and its token is valid for ever); the agent renews it at half
	// its life, in the cluster Secret Argo CD reads it from.
	tr, err := a.kube.CoreV1().ServiceAccounts(a.argoNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(a.deployerTokenLifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for %s: %w", sa, err)
	}
	// The API server may shorten the life asked for; half of what was granted is left at
	// renewAt. A clock behind the API server's must not make that "now" (a token a reconcile).
	renewAt := now.Add(max(min(a.deployerTokenLifetime, tr.Status.ExpirationTimestamp.Sub(now))/2, minTokenRenewal))
	cfg := argov1alpha1.ClusterConfig{BearerToken: tr.Status.Token}
	if a.localCluster.Insecure {
		cfg.TLSClientConfig.Insecure = true
	} else {
		cfg.TLSClientConfig.CAData = caData
	}
	if err := a.applyClusterSecret(ctx, clusterSecret{
		Name:        name,
		Server:      localClusterServer(a.localCluster.Server, namespace),
		Config:      cfg,
		Namespaces:  []string{namespace},
		Labels:      map[string]string{LabelTenantNamespace: namespace, labelDeployerRevision: deployerRevision},
		Annotations: map[string]string{annotationRenewAfter: renewAt.UTC().Format(time.RFC3339)},
		Source:      namespaceSource(namespace),
	}); err != nil {
		return err
	}
	a.scheduleRenewal(d, namespace, renewAt)
	// Revision 1's token Secret held a token that never expires.
	if _, err := a.argoSecrets.Secrets(a.argoNamespace).Get(legacyTokenName(namespace)); err == nil {
		if err := a.deleteSecret(ctx, legacyTokenName(namespace)); err != nil {
			return err
		}
	}
	klog.V(2).InfoS("deployer ready", "namespace", namespace, "cluster", name, "renewAt", renewAt)
	return nil
}

// scheduleRenewal records that namespace's deployer is ready until renewAt, and requeues the
// namespace then; d is locked.
func (a *Agent) scheduleRenewal(d *deployer, namespace string, renewAt time.Time) {
	d.renewAt = renewAt
	if d.renew != nil {
		d.renew.Stop()
	}
	d.renew = time.AfterFunc(renewAt.Sub(a.now()), func() { a.requeueNamespace(namespace) })
}

// localClusterServer is the URL of the local cluster as the deployer of namespace uses it. Argo
// CD keys its cluster caches and connections by URL, so each namespace's deployer needs one of
// its own; a query parameter gives that without changing where requests go.
func localClusterServer(server, namespace string) string { return server + "?namespace=" + namespace }

// removeLocalCluster undoes ensureLocalCluster once namespace deploys nothing any more; its
// ServiceAccount's deletion revokes the tokens issued to it. It holds the deployer's lock
// throughout, so that a deployment created meanwhile sets the deployer up again only once it is
// gone. Every delete is issued each time (a missing object costs a 404): a setup cut short
// leaves no cluster Secret to tell what else is there.
func (a *Agent) removeLocalCluster(ctx context.Context, namespace string) error {
	d := a.deployerOf(namespace)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reset()
	if s, err := a.argoSecrets.Secrets(a.argoNamespace).Get(LocalClusterName(namespace)); err == nil {
		d.removed = s.UID
	}
	for _, role := range deployerRoles {
		err := a.kube.RbacV1().RoleBindings(namespace).Delete(ctx, role, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting RoleBinding %s/%s: %w", namespace, role, err)
		}
	}
	err := a.kube.CoreV1().ServiceAccounts(a.argoNamespace).Delete(ctx, DeployerName(namespace), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ServiceAccount %s: %w", DeployerName(namespace), err)
	}
	if err := a.deleteSecret(ctx, legacyTokenName(namespace)); err != nil {
		return err
	}
	return a.deleteSecret(ctx, LocalClusterName(namespace))
}

// legacyTokenName is the token Secret of a deployer of revision 1.
func legacyTokenName(namespace string) string { return DeployerName(namespace) + "-token" }

// requeueOnLostCluster requeues a namespace's GitOpsDeployments when its cluster Secret is
// deleted by someone else, so the deployer is made again rather than Argo CD failing on.
func (a *Agent) requeueOnLostCluster(obj interface{}) {
	obj = unwrapTombstone(obj)
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if ns := s.Labels[LabelTenantNamespace]; ns != "" && s.Name == LocalClusterName(ns) {
		a.deployerOf(ns).stale.Store(true)
		a.requeueNamespace(ns)
	}
}

// onRootCA has every deployer take the cluster's root CA again when kube-controller-manager
// publishes a new one (a CA rotation), rather than at its next renewal.
func (a *Agent) onRootCA(obj interface{}) {
	if cm, ok := unwrapTombstone(obj).(*corev1.ConfigMap); !ok || cm.Name != rootCAConfigMap {
		return
	}
	a.deployers.Range(func(ns, d interface{}) bool {
		d.(*deployer).stale.Store(true)
		a.requeueNamespace(ns.(string))
		return true
	})
}
