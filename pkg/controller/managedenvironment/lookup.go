package managedenvironment

import (
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Messages of user errors of a deployment through an environment (reference §3.2).
const (
	UserErrorManagedEnvironment = "Unable to reconcile the ManagedEnvironment. Verify that the ManagedEnvironment and Secret are correctly defined, and have valid credentials"
	// UserErrorDestinationNamespace is for a deployment to an environment without a
	// namespace; the API rejects it, the check stays for older objects.
	UserErrorDestinationNamespace = "the namespace specified in the destination field is invalid"
)

// Clusters reads, from the informers' caches, which Argo CD cluster Secrets list a
// ManagedEnvironment: the controller's own view, and the GitOpsDeployment controller's
// (Destination, ReconciledEnvironment).
type Clusters struct {
	argoNamespace string
	envs          listers.GitOpsDeploymentManagedEnvironmentLister
	// envIndex indexes the environments byUID.
	envIndex    cache.Indexer
	argoSecrets corelisters.SecretLister
	// clusterIndex indexes the Secrets of the Argo CD namespace byEnvironmentRef.
	clusterIndex cache.Indexer
	// deployments tells which environment a deployment names; nil reads none.
	deployments listers.GitOpsDeploymentLister
}

// NewClusters adds the indexes it reads to the environment and Argo CD Secret informers
// (unless they have them).
func NewClusters(envs managedinformers.GitOpsDeploymentManagedEnvironmentInformer, argoSecrets coreinformers.SecretInformer,
	deployments listers.GitOpsDeploymentLister, argoNamespace string) (*Clusters, error) {
	if err := addIndex(envs.Informer(), byUID, uidKey); err != nil {
		return nil, err
	}
	if err := addIndex(argoSecrets.Informer(), byEnvironmentRef, environmentRefsOfSecret); err != nil {
		return nil, err
	}
	return &Clusters{
		argoNamespace: argoNamespace,
		envs:          envs.Lister(),
		envIndex:      envs.Informer().GetIndexer(),
		argoSecrets:   argoSecrets.Lister(),
		clusterIndex:  argoSecrets.Informer().GetIndexer(),
		deployments:   deployments,
	}, nil
}

func addIndex(inf cache.SharedIndexInformer, name string, f cache.IndexFunc) error {
	if _, ok := inf.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{name: f})
}

// listingClusters is the shared cluster Secrets (in the cache) with an entry of the
// environment key "namespace/name".
func (l *Clusters) listingClusters(key string) []*corev1.Secret {
	objs, err := l.clusterIndex.ByIndex(byEnvironmentRef, key)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Secret, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Namespace == l.argoNamespace {
			out = append(out, s)
		}
	}
	return out
}

// environmentClusters is the names of the cluster Secrets (in the cache) that list env, and
// the Secret of the earlier per-environment scheme if there is one.
func (l *Clusters) environmentClusters(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (shared []string, legacy string) {
	u := userOf(env)
	for _, s := range l.listingClusters(u.key()) {
		if listsUser(s, u) {
			shared = append(shared, s.Name)
		}
	}
	slices.Sort(shared)
	if _, err := l.argoSecrets.Secrets(l.argoNamespace).Get(ClusterSecretName(env.UID)); err == nil {
		legacy = ClusterSecretName(env.UID)
	}
	return shared, legacy
}

// environmentCluster is the Argo CD cluster env deploys to: its shared cluster Secret, or
// while it has none yet, the one an earlier agent made for it alone.
func (l *Clusters) environmentCluster(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (string, bool) {
	shared, legacy := l.environmentClusters(env)
	if name := preferredCluster(shared); name != "" {
		return name, true
	}
	return legacy, legacy != ""
}

// Destination is where a deployment through a GitOpsDeploymentManagedEnvironment of the
// deployment's own namespace goes: the environment's Argo CD cluster, once the environment is
// connected. userError, when not empty, is the message for the deployment's owner (reference
// §3.2): the deployment cannot go anywhere until they change something.
func (l *Clusters) Destination(depl *managedv1alpha1.GitOpsDeployment) (dest argov1alpha1.ApplicationDestination, userError string, err error) {
	if depl.Spec.Destination.Namespace == "" {
		return dest, UserErrorDestinationNamespace, nil
	}
	env, err := l.envs.GitOpsDeploymentManagedEnvironments(depl.Namespace).Get(depl.Spec.Destination.Environment)
	if apierrors.IsNotFound(err) {
		return dest, UserErrorManagedEnvironment, nil
	}
	if err != nil {
		return dest, "", err
	}
	if !meta.IsStatusConditionTrue(env.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded) {
		return dest, UserErrorManagedEnvironment, nil
	}
	cluster, ok := l.environmentCluster(env)
	if !ok {
		// Connected, but its cluster Secret is not (yet, or no longer) in the cache: its
		// event brings the deployment back.
		return dest, UserErrorManagedEnvironment, nil
	}
	return argov1alpha1.ApplicationDestination{Name: cluster, Namespace: depl.Spec.Destination.Namespace}, "", nil
}

// ReconciledEnvironment is the name of the ManagedEnvironment (of namespace) that Argo CD last
// compared app against, or "" for any other cluster (reference §4.3). A shared cluster maps
// back to the environment of namespace that uses it: if several do, the one app's
// GitOpsDeployment names.
func (l *Clusters) ReconciledEnvironment(namespace string, app *argov1alpha1.Application) string {
	if app == nil {
		return ""
	}
	cluster := app.Status.Sync.ComparedTo.Destination.Name
	if uid, ok := strings.CutPrefix(cluster, ClusterSecretName("")); ok {
		envs, _ := l.envIndex.ByIndex(byUID, uid)
		for _, obj := range envs {
			if env := obj.(*managedv1alpha1.GitOpsDeploymentManagedEnvironment); env.Namespace == namespace {
				return env.Name
			}
		}
		return ""
	}
	if !strings.HasPrefix(cluster, clusterSecretPrefix) {
		return ""
	}
	s, err := l.argoSecrets.Secrets(l.argoNamespace).Get(cluster)
	if err != nil {
		return ""
	}
	// Only environments that still exist as listed: never an earlier object of the name.
	var users []clusterUser
	for _, u := range parseClusterUsers(s) {
		if u.Namespace != namespace {
			continue
		}
		if env, err := l.envs.GitOpsDeploymentManagedEnvironments(u.Namespace).Get(u.Name); err == nil && env.UID == u.UID {
			users = append(users, u)
		}
	}
	named := ""
	if l.deployments != nil && app.Labels[argocd.LabelDeploymentNamespace] == namespace {
		if d, err := l.deployments.GitOpsDeployments(namespace).Get(app.Annotations[argocd.AnnotationDeploymentName]); err == nil {
			named = d.Spec.Destination.Environment
		}
	}
	return reconciledUser(users, namespace, named)
}
