package managedenvironment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// EnvironmentFinalizer keeps a ManagedEnvironment with createNewServiceAccount until the agent
// has removed what it installed on the remote cluster (a ServiceAccount with full rights would
// otherwise outlive the environment that made it). The agent adds it before installing anything.
const EnvironmentFinalizer = "managed-gitops.redhat.com/remote-service-account"

// uninstallGiveUp is how long after an environment's deletion the agent keeps trying to reach
// its cluster to uninstall; then the environment goes and what is left is logged.
const uninstallGiveUp = 5 * time.Minute

// errCannotConnect is an uninstall that no retry can make succeed: the environment's Secret is
// gone or no longer gives a usable kubeconfig.
var errCannotConnect = errors.New("the environment's Secret no longer gives credentials for its cluster")

// addEnvironmentFinalizer adds EnvironmentFinalizer to env; its update event brings env back.
func (e *Controller) addEnvironmentFinalizer(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	return e.patchEnvironmentFinalizers(ctx, env, append(append([]string(nil), env.Finalizers...), EnvironmentFinalizer))
}

// finalizeEnvironment handles an environment being deleted: its cluster Secret goes, and with
// EnvironmentFinalizer, what createNewServiceAccount installed goes from its cluster first.
func (e *Controller) finalizeEnvironment(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	if !slices.Contains(env.Finalizers, EnvironmentFinalizer) {
		return e.deleteClusterSecret(ctx, env)
	}
	deleting := e.now().Sub(env.DeletionTimestamp.Time)
	// Argo CD deletes what its Applications deployed with the ServiceAccount's credentials:
	// they go first (or, bounded, Argo CD would give up and orphan the resources).
	if e.environmentApplications(env) > 0 && deleting < uninstallGiveUp {
		e.Queue.AddAfter(env.Namespace+"/"+env.Name, 2*time.Second)
		return nil
	}
	if err := e.uninstallServiceAccount(ctx, env); err != nil {
		if !errors.Is(err, errCannotConnect) && deleting < uninstallGiveUp {
			return err
		}
		klog.InfoS("could not remove the ServiceAccount a managed environment installed on its cluster; it is left there",
			"environment", klog.KObj(env), "serviceAccount", managerNamespace+"/"+managerServiceAccountName(env.UID), "err", err)
	}
	if err := e.deleteClusterSecret(ctx, env); err != nil {
		return err
	}
	return e.patchEnvironmentFinalizers(ctx, env, without(env.Finalizers, EnvironmentFinalizer))
}

func (e *Controller) patchEnvironmentFinalizers(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, finalizers []string) error {
	patch, err := finalizersPatch(env.ResourceVersion, finalizers)
	if err != nil {
		return err
	}
	_, err = e.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(env.Namespace).Patch(ctx, env.Name,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the finalizers of ManagedEnvironment %s/%s: %w", env.Namespace, env.Name, err)
	}
	return nil
}

// applicationsOnCluster counts the Applications (of any namespace) that deploy to the Argo CD
// cluster named.
func (e *Controller) applicationsOnCluster(cluster string) int {
	apps, err := e.applications.Applications(e.argoNamespace).List(labels.Everything())
	if err != nil {
		return 0
	}
	n := 0
	for _, app := range apps {
		if app.Spec.Destination.Name == cluster {
			n++
		}
	}
	return n
}

// uninstallServiceAccount undoes installServiceAccount on env's cluster, with the credentials
// of env's Secret (those that installed it), for the namespaces env has now. Without them (a
// tenant namespace being deleted takes the Secret along), the ServiceAccount deletes itself
// with its own token from the cluster Secret: that revokes it, though its (then inert) roles
// stay.
func (e *Controller) uninstallServiceAccount(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	client, err := e.tenantClient(ctx, env)
	if errors.Is(err, errCannotConnect) {
		own, ownErr := e.installedAccountClient(env)
		if ownErr != nil {
			return err
		}
		err = own.CoreV1().ServiceAccounts(managerNamespace).Delete(ctx, managerServiceAccountName(env.UID), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("the ServiceAccount %s/%s deleting itself: %w", managerNamespace, managerServiceAccountName(env.UID), err)
		}
		klog.InfoS("a managed environment's Secret is gone: its ServiceAccount deleted itself, its roles are left",
			"environment", klog.KObj(env), "clusterRole", managerRoleName(env.UID))
		return nil
	}
	if err != nil {
		return err
	}
	uid := env.UID
	granted, err := grantedRights(ctx, client, uid)
	if err != nil {
		return err
	}
	// The record, and what the spec names for a ServiceAccount installed before there was one.
	if err := revokeRights(ctx, client, uid, granted.Union(sets.New(env.Spec.Namespaces...).Insert(clusterWide))); err != nil {
		return err
	}
	err = ignoreNotFound(client.RbacV1().RoleBindings(managerNamespace).Delete(ctx, managerImpersonateName(uid), metav1.DeleteOptions{}))
	if err == nil {
		err = ignoreNotFound(client.RbacV1().Roles(managerNamespace).Delete(ctx, managerImpersonateName(uid), metav1.DeleteOptions{}))
	}
	if err == nil {
		err = ignoreNotFound(client.CoreV1().Secrets(managerNamespace).Delete(ctx, managerTokenName(uid), metav1.DeleteOptions{}))
	}
	if err == nil {
		err = ignoreNotFound(client.CoreV1().ServiceAccounts(managerNamespace).Delete(ctx, managerServiceAccountName(uid), metav1.DeleteOptions{}))
	}
	if err != nil {
		return fmt.Errorf("removing the ServiceAccount %s/%s and its rights: %w", managerNamespace, managerServiceAccountName(uid), err)
	}
	klog.V(2).InfoS("removed the ServiceAccount a managed environment installed", "environment", klog.KObj(env))
	return nil
}

// tenantClient is a client of env's cluster with the credentials of env's Secret.
func (e *Controller) tenantClient(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (kubernetes.Interface, error) {
	secret, err := e.credentialsSecret(ctx, env)
	if apierrors.IsNotFound(err) {
		return nil, errCannotConnect
	}
	if err != nil {
		return nil, err
	}
	creds, cond := parseCredentials(env, secret)
	if cond != nil {
		return nil, fmt.Errorf("%w: %s", errCannotConnect, cond.message)
	}
	client, err := kubernetes.NewForConfig(creds.restConfig(env.Spec.APIURL))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCannotConnect, err)
	}
	return client, nil
}

// installedAccountClient is a client of env's cluster as the ServiceAccount the agent
// installed there, with the credentials of env's cluster Secret.
func (e *Controller) installedAccountClient(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (kubernetes.Interface, error) {
	name, ok := e.environmentCluster(env)
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), ClusterSecretName(env.UID))
	}
	s, err := e.argoSecrets.Secrets(e.argoNamespace).Get(name)
	if err != nil {
		return nil, err
	}
	var cfg argov1alpha1.ClusterConfig
	if err := json.Unmarshal(s.Data[argocd.ClusterKeyConfig], &cfg); err != nil {
		return nil, err
	}
	own := credentials{bearerToken: cfg.BearerToken, insecure: cfg.TLSClientConfig.Insecure,
		serverName: cfg.TLSClientConfig.ServerName, caData: cfg.TLSClientConfig.CAData}
	return kubernetes.NewForConfig(own.restConfig(env.Spec.APIURL))
}

// without is list less every s.
func without(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// finalizersPatch is a merge patch setting an object's finalizers. The resourceVersion makes it
// fail (conflict) if the object changed since, rather than drop a finalizer someone else added.
func finalizersPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	return json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{"resourceVersion": resourceVersion, "finalizers": finalizers},
	})
}
