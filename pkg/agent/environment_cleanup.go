package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
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
func (e *environments) addEnvironmentFinalizer(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	return e.patchEnvironmentFinalizers(ctx, env, append(append([]string(nil), env.Finalizers...), EnvironmentFinalizer))
}

// finalizeEnvironment handles an environment being deleted: its cluster Secret goes, and with
// EnvironmentFinalizer, what createNewServiceAccount installed goes from its cluster first.
func (e *environments) finalizeEnvironment(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	if !contains(env.Finalizers, EnvironmentFinalizer) {
		return e.deleteClusterSecret(ctx, env)
	}
	if err := e.uninstallServiceAccount(ctx, env); err != nil {
		if !errors.Is(err, errCannotConnect) && e.now().Sub(env.DeletionTimestamp.Time) < uninstallGiveUp {
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

func (e *environments) patchEnvironmentFinalizers(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, finalizers []string) error {
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

// uninstallServiceAccount undoes installServiceAccount on env's cluster, with the credentials
// of env's Secret (those that installed it), for the namespaces env has now.
func (e *environments) uninstallServiceAccount(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) error {
	secret, err := e.credentialsSecret(ctx, env)
	if apierrors.IsNotFound(err) {
		return errCannotConnect
	}
	if err != nil {
		return err
	}
	creds, cond := parseCredentials(env, secret)
	if cond != nil {
		return fmt.Errorf("%w: %s", errCannotConnect, cond.message)
	}
	client, err := kubernetes.NewForConfig(creds.restConfig(env.Spec.APIURL))
	if err != nil {
		return fmt.Errorf("%w: %v", errCannotConnect, err)
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	uid := env.UID
	deletes := []func() error{
		func() error {
			return client.RbacV1().ClusterRoleBindings().Delete(ctx, managerRoleBindingName(uid), metav1.DeleteOptions{})
		},
		func() error {
			return client.RbacV1().ClusterRoles().Delete(ctx, managerRoleName(uid), metav1.DeleteOptions{})
		},
	}
	for _, ns := range env.Spec.Namespaces {
		deletes = append(deletes,
			func() error {
				return client.RbacV1().RoleBindings(ns).Delete(ctx, managerRoleBindingName(uid), metav1.DeleteOptions{})
			},
			func() error {
				return client.RbacV1().Roles(ns).Delete(ctx, managerRoleName(uid), metav1.DeleteOptions{})
			})
	}
	deletes = append(deletes,
		func() error {
			return client.CoreV1().Secrets(managerNamespace).Delete(ctx, managerTokenName(uid), metav1.DeleteOptions{})
		},
		func() error {
			return client.CoreV1().ServiceAccounts(managerNamespace).Delete(ctx, managerServiceAccountName(uid), metav1.DeleteOptions{})
		})
	for _, del := range deletes {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the ServiceAccount %s/%s and its rights: %w", managerNamespace, managerServiceAccountName(uid), err)
		}
	}
	klog.V(2).InfoS("removed the ServiceAccount a managed environment installed", "environment", klog.KObj(env))
	return nil
}
