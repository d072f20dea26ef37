package managedenvironment

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Messages of UnableToValidateClusterCredentials (reference §3.4).
const (
	validationFailedMessage    = "Unable to validate the credentials provided in the ManagedEnvironment Secret. Verify the API URL, and service account token are correct."
	validationForbiddenMessage = "Provided service account does not have permission to access resources in the cluster. " +
		"Verify that the service account has the correct Role and RoleBinding."
	validationUnknownAuthorityMessage = "Certificate signed by unknown authority. Note that the '.spec.allowInsecureSkipTLSVerify' field can be used to ignore this error."
)

// verifyCredentials makes a real request with the credentials, as Argo CD will: the first
// namespace of the environment when it is limited to namespaces, otherwise a list of namespaces.
func verifyCredentials(ctx context.Context, client kubernetes.Interface, namespaces []string) error {
	if len(namespaces) > 0 {
		_, err := client.CoreV1().Namespaces().Get(ctx, namespaces[0], metav1.GetOptions{})
		return err
	}
	_, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// validationFailed is the condition for an error of verifyCredentials. The error itself goes
// to the log only: it names hosts and addresses of the agent's network.
func validationFailed(err error) *connection {
	msg := validationFailedMessage
	var unknownAuthority x509.UnknownAuthorityError
	switch {
	case apierrors.IsForbidden(err):
		msg = validationForbiddenMessage
	case errors.As(err, &unknownAuthority) || strings.Contains(err.Error(), "certificate signed by unknown authority"):
		msg = validationUnknownAuthorityMessage
	}
	return connectionUnknown(managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, msg)
}

// Names of what installServiceAccount creates on the environment's cluster, after the
// environment's UID so that environments sharing a cluster do not share a ServiceAccount.
func managerServiceAccountName(uid types.UID) string { return "argocd-manager-" + string(uid) }
func managerRoleName(uid types.UID) string           { return "argocd-manager-cluster-role-" + string(uid) }
func managerRoleBindingName(uid types.UID) string {
	return "argocd-manager-cluster-role-binding-" + string(uid)
}
func managerTokenName(uid types.UID) string { return "argocd-manager-token-" + string(uid) }

// managerImpersonateName is the Role and RoleBinding, in managerNamespace, that let the
// ServiceAccount impersonate itself, as Argo CD's syncs through it do (impersonation.go).
func managerImpersonateName(uid types.UID) string { return "argocd-manager-impersonate-" + string(uid) }

// managerNamespace is where the ServiceAccount lives, as with `argocd cluster add`.
const managerNamespace = "kube-system"

// grantedRightsAnnotation on the installed ServiceAccount records where installServiceAccount
// has granted it rights: clusterWide for its ClusterRoleBinding, and each namespace with a
// RoleBinding, comma-separated. An environment that loses a namespace, or goes from the whole
// cluster to namespaces, has the rights it no longer names taken back by the next install.
const grantedRightsAnnotation = "managed-gitops.redhat.com/granted-rights"

// clusterWide stands for the ClusterRole and ClusterRoleBinding among the granted rights.
const clusterWide = "*"

// installServiceAccount does what `argocd cluster add` does (reference argocd.md §1.6): a
// ServiceAccount with full rights (on the whole cluster, or in each of namespaces when the
// environment is limited to them and not wholeCluster), and a token Secret for it,
// whose token it returns. Everything is applied server-side, so a second run changes nothing;
// rights an earlier run granted and this one does not are revoked.
func installServiceAccount(ctx context.Context, client kubernetes.Interface, uid types.UID, namespaces []string, wholeCluster bool) (string, error) {
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	sa := managerServiceAccountName(uid)
	want := sets.New(namespaces...)
	if wholeCluster {
		want = sets.New(clusterWide)
	}
	granted, err := grantedRights(ctx, client, uid)
	if err != nil {
		return "", err
	}
	// The record is written only when it changes: an unchanged environment, resynced every
	// few minutes, costs one read of it. The first write also creates the ServiceAccount.
	recorded := granted
	record := func(rights sets.Set[string]) error {
		if recorded != nil && recorded.Equal(rights) {
			return nil
		}
		if err := recordGrantedRights(ctx, client, uid, rights); err != nil {
			return err
		}
		recorded = rights
		return nil
	}
	// Recorded before granting, so that a failure half-way leaves no grant unrecorded.
	if err := record(granted.Union(want)); err != nil {
		return "", err
	}
	all := rbacv1ac.PolicyRule().WithAPIGroups("*").WithResources("*").WithVerbs("*")
	subject := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(sa).WithNamespace(managerNamespace)
	for _, ns := range sets.List(want) {
		if ns == clusterWide {
			if _, err := client.RbacV1().ClusterRoles().Apply(ctx, rbacv1ac.ClusterRole(managerRoleName(uid)).
				WithRules(all, rbacv1ac.PolicyRule().WithNonResourceURLs("*").WithVerbs("*")), opts); err != nil {
				return "", fmt.Errorf("creating ClusterRole %s: %w", managerRoleName(uid), err)
			}
			if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(managerRoleBindingName(uid)).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(managerRoleName(uid))).
				WithSubjects(subject), opts); err != nil {
				return "", fmt.Errorf("creating ClusterRoleBinding %s: %w", managerRoleBindingName(uid), err)
			}
			continue
		}
		if _, err := client.RbacV1().Roles(ns).Apply(ctx, rbacv1ac.Role(managerRoleName(uid), ns).WithRules(all), opts); err != nil {
			return "", fmt.Errorf("creating Role %s/%s: %w", ns, managerRoleName(uid), err)
		}
		if _, err := client.RbacV1().RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(managerRoleBindingName(uid), ns).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(managerRoleName(uid))).
			WithSubjects(subject), opts); err != nil {
			return "", fmt.Errorf("creating RoleBinding %s/%s: %w", ns, managerRoleBindingName(uid), err)
		}
	}
	if err := revokeRights(ctx, client, uid, granted.Difference(want)); err != nil {
		return "", err
	}
	self := managerImpersonateName(uid)
	if _, err := client.RbacV1().Roles(managerNamespace).Apply(ctx, rbacv1ac.Role(self, managerNamespace).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("serviceaccounts").WithResourceNames(sa).WithVerbs("impersonate")), opts); err != nil {
		return "", fmt.Errorf("creating Role %s/%s: %w", managerNamespace, self, err)
	}
	if _, err := client.RbacV1().RoleBindings(managerNamespace).Apply(ctx, rbacv1ac.RoleBinding(self, managerNamespace).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(self)).
		WithSubjects(subject), opts); err != nil {
		return "", fmt.Errorf("creating RoleBinding %s/%s: %w", managerNamespace, self, err)
	}
	if err := record(want); err != nil {
		return "", err
	}

	// A token Secret does not expire, unlike a TokenRequest token; the cluster's token
	// controller fills it in.
	name := managerTokenName(uid)
	if _, err := client.CoreV1().Secrets(managerNamespace).Apply(ctx, corev1ac.Secret(name, managerNamespace).
		WithType(corev1.SecretTypeServiceAccountToken).
		WithAnnotations(map[string]string{corev1.ServiceAccountNameKey: sa}), opts); err != nil {
		return "", fmt.Errorf("creating token Secret %s/%s: %w", managerNamespace, name, err)
	}
	var token string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, remoteTimeout, true, func(ctx context.Context) (bool, error) {
		s, err := client.CoreV1().Secrets(managerNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for the token of ServiceAccount %s/%s (does the cluster run the token controller?): %w", managerNamespace, sa, err)
	}
	return token, nil
}

// grantedRights reads the rights recorded on the installed ServiceAccount; nil when it does
// not exist yet or has no record.
func grantedRights(ctx context.Context, client kubernetes.Interface, uid types.UID) (sets.Set[string], error) {
	sa, err := client.CoreV1().ServiceAccounts(managerNamespace).Get(ctx, managerServiceAccountName(uid), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ServiceAccount %s/%s: %w", managerNamespace, managerServiceAccountName(uid), err)
	}
	if v := sa.Annotations[grantedRightsAnnotation]; v != "" {
		return sets.New(strings.Split(v, ",")...), nil
	}
	return nil, nil
}

// recordGrantedRights applies the ServiceAccount, creating it the first time, with rights as
// its record.
func recordGrantedRights(ctx context.Context, client kubernetes.Interface, uid types.UID, rights sets.Set[string]) error {
	sa := managerServiceAccountName(uid)
	_, err := client.CoreV1().ServiceAccounts(managerNamespace).Apply(ctx, corev1ac.ServiceAccount(sa, managerNamespace).
		WithAnnotations(map[string]string{grantedRightsAnnotation: strings.Join(sets.List(rights), ",")}),
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", managerNamespace, sa, err)
	}
	return nil
}

// revokeRights deletes the bindings and roles of the given rights; those already gone (with
// their namespace, say) are fine.
func revokeRights(ctx context.Context, client kubernetes.Interface, uid types.UID, rights sets.Set[string]) error {
	rbac := client.RbacV1()
	for _, ns := range sets.List(rights) {
		var err error
		if ns == clusterWide {
			err = ignoreNotFound(rbac.ClusterRoleBindings().Delete(ctx, managerRoleBindingName(uid), metav1.DeleteOptions{}))
			if err == nil {
				err = ignoreNotFound(rbac.ClusterRoles().Delete(ctx, managerRoleName(uid), metav1.DeleteOptions{}))
			}
		} else {
			err = ignoreNotFound(rbac.RoleBindings(ns).Delete(ctx, managerRoleBindingName(uid), metav1.DeleteOptions{}))
			if err == nil {
				err = ignoreNotFound(rbac.Roles(ns).Delete(ctx, managerRoleName(uid), metav1.DeleteOptions{}))
			}
		}
		if err != nil {
			return fmt.Errorf("revoking the rights of ServiceAccount %s/%s in %q: %w", managerNamespace, managerServiceAccountName(uid), ns, err)
		}
	}
	return nil
}

// ignoreNotFound is err, unless it says that what was asked for does not exist.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
