package agent

import (
	"context"
	"errors"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
const (
	labelDeployerRevision = "managed-gitops.redhat.com/deployer-revision"
	deployerRevision      = "1"
)

// LocalClusterName is the Argo CD cluster (and cluster Secret) through which the
// GitOpsDeployments of one namespace deploy into it.
func LocalClusterName(namespace string) string { return "gitops-local-" + namespace }

// DeployerName is the ServiceAccount, in the Argo CD namespace, that deploys into namespace.
func DeployerName(namespace string) string { return "gitops-deployer-" + namespace }

func deployerTokenName(namespace string) string { return DeployerName(namespace) + "-token" }

// localDestination is a deployment into the tenant's own cluster: the API rejects a namespace
// without an environment, so it is always the GitOpsDeployment's own namespace, through that
// namespace's deployer.
func (a *Agent) localDestination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	return argov1alpha1.ApplicationDestination{Name: LocalClusterName(depl.Namespace), Namespace: depl.Namespace}, nil
}

// errTokenPending is returned while kube-controller-manager has not yet filled in a deployer's
// token; tokenIssued requeues the namespace when it has. (A retry with backoff would wait
// ever longer, and a burst of new namespaces would queue behind the limiter's 10 a second.)
var errTokenPending = errors.New("the deployer's token is not issued yet")

// ensureLocalCluster makes the deployer of namespace and its cluster Secret exist. The cluster
// Secret is written last, so its presence in the cache means everything before it was done,
// and an unchanged namespace costs no request at all.
func (a *Agent) ensureLocalCluster(ctx context.Context, namespace string) error {
	name := LocalClusterName(namespace)
	if s, err := a.argoSecrets.Secrets(a.argoNamespace).Get(name); err == nil &&
		s.Labels[LabelTenantNamespace] == namespace && s.Labels[labelDeployerRevision] == deployerRevision {
		return nil
	}
	sa := DeployerName(namespace)
	labels := map[string]string{LabelTenantNamespace: namespace}
	if _, err := a.kube.CoreV1().ServiceAccounts(a.argoNamespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels},
	}, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s: %w", sa, err)
	}
	for _, role := range deployerRoles {
		if _, err := a.kube.RbacV1().RoleBindings(namespace).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: a.argoNamespace}},
		}, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", namespace, role, err)
		}
	}
	tokenName := deployerTokenName(namespace)
	token, err := a.kube.CoreV1().Secrets(a.argoNamespace).Get(ctx, tokenName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// A token Secret rather than TokenRequest: Argo CD keeps the credential of a cluster for
		// as long as the Secret says, and has no way to renew an expiring one.
		token, err = a.kube.CoreV1().Secrets(a.argoNamespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: tokenName, Labels: labels,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
			Type: corev1.SecretTypeServiceAccountToken,
		}, metav1.CreateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return fmt.Errorf("getting the token of %s: %w", sa, err)
	}
	if len(token.Data[corev1.ServiceAccountTokenKey]) == 0 {
		return errTokenPending
	}
	cfg := argov1alpha1.ClusterConfig{BearerToken: string(token.Data[corev1.ServiceAccountTokenKey])}
	if a.localCluster.Insecure {
		cfg.TLSClientConfig.Insecure = true
	} else {
		cfg.TLSClientConfig.CAData = token.Data[corev1.ServiceAccountRootCAKey]
	}
	if err := a.applyClusterSecret(ctx, clusterSecret{
		Name:       name,
		Server:     localClusterServer(a.localCluster.Server, namespace),
		Config:     cfg,
		Namespaces: []string{namespace},
		Labels:     map[string]string{LabelTenantNamespace: namespace, labelDeployerRevision: deployerRevision},
		Source:     namespaceSource(namespace),
	}); err != nil {
		return err
	}
	klog.V(2).InfoS("deployer ready", "namespace", namespace, "cluster", name)
	return nil
}

// localClusterServer is the URL of the local cluster as the deployer of namespace uses it. Argo
// CD keys its cluster caches and connections by URL, so each namespace's deployer needs one of
// its own; a query parameter gives that without changing where requests go.
func localClusterServer(server, namespace string) string { return server + "?namespace=" + namespace }

// removeLocalCluster undoes ensureLocalCluster once namespace deploys nothing any more. The
// cluster Secret goes last, so that while any part of the deployer is left, the next attempt
// still finds something to remove.
func (a *Agent) removeLocalCluster(ctx context.Context, namespace string) error {
	_, errCluster := a.argoSecrets.Secrets(a.argoNamespace).Get(LocalClusterName(namespace))
	_, errToken := a.argoSecrets.Secrets(a.argoNamespace).Get(deployerTokenName(namespace))
	if apierrors.IsNotFound(errCluster) && apierrors.IsNotFound(errToken) {
		return nil
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
	if err := a.deleteSecret(ctx, deployerTokenName(namespace)); err != nil {
		return err
	}
	return a.deleteSecret(ctx, LocalClusterName(namespace))
}

// requeueOnLostCluster requeues a namespace's GitOpsDeployments when its cluster Secret is
// deleted by someone else, so the deployer is made again rather than Argo CD failing on.
func (a *Agent) requeueOnLostCluster(obj interface{}) {
	obj = unwrapTombstone(obj)
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if ns := s.Labels[LabelTenantNamespace]; ns != "" && s.Name == LocalClusterName(ns) {
		a.requeueNamespace(ns)
	}
}

// tokenIssued requeues a namespace's GitOpsDeployments once its deployer's token is filled in.
func (a *Agent) tokenIssued(old, obj interface{}) {
	s, ok := obj.(*corev1.Secret)
	prev, _ := old.(*corev1.Secret)
	if !ok || s.Type != corev1.SecretTypeServiceAccountToken || len(s.Data[corev1.ServiceAccountTokenKey]) == 0 ||
		(prev != nil && len(prev.Data[corev1.ServiceAccountTokenKey]) > 0) {
		return
	}
	if ns := s.Labels[LabelTenantNamespace]; ns != "" && s.Name == deployerTokenName(ns) {
		a.requeueNamespace(ns)
	}
}
