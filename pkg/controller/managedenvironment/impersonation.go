package managedenvironment

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Argo CD's sync impersonation (which confines the tenants' deployments into the local
// cluster, pkg/controller/deployer) is one switch for every cluster of the instance: a sync anywhere
// impersonates the ServiceAccount the project names for its destination, and fails if there
// is none. Through a ManagedEnvironment the tenant's own credentials already confine it, so
// Argo CD impersonates the very ServiceAccount those credentials belong to: nothing changes
// what it may do, provided it may impersonate itself, which the edit and admin roles of its
// namespace grant. Credentials of a user rather than a ServiceAccount cannot be used so; the
// environment says so, and createNewServiceAccount is the way out.

// argocd.AnnotationImpersonate on an environment's cluster Secret is the ServiceAccount
// ("namespace:name") that syncs through it impersonate.

// Messages of the conditions about impersonation.
const (
	impersonationUserMessage = "The credentials belong to %q, not to a ServiceAccount: Argo CD deploys by impersonating " +
		"the ServiceAccount of the credentials. Use a ServiceAccount token, or set .spec.createNewServiceAccount."
	impersonationForbiddenMessage = "The ServiceAccount %s/%s of the credentials may not impersonate itself, which Argo CD " +
		"needs to deploy with its rights: grant it 'impersonate' on serviceaccounts/%s in namespace %s (the edit and admin roles do)."
)

// credentialsIdentity asks the environment's cluster whose the credentials are, and whether
// they may impersonate themselves: the ServiceAccount as "namespace:name", or the condition
// that tells the tenant why the environment cannot be used. An error is a failed request.
func credentialsIdentity(ctx context.Context, client kubernetes.Interface) (string, *connection, error) {
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("asking who the credentials are (SelfSubjectReview): %w", err)
	}
	return impersonationTarget(ctx, client, review.Status.UserInfo.Username)
}

// impersonationTarget checks that username is a ServiceAccount that may impersonate itself.
func impersonationTarget(ctx context.Context, client kubernetes.Interface, username string) (string, *connection, error) {
	namespace, name, err := serviceaccount.SplitUsername(username)
	if err != nil {
		return "", connectionUnknown(managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			fmt.Sprintf(impersonationUserMessage, username)), nil
	}
	sar, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "impersonate", Resource: "serviceaccounts", Name: name,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("asking whether the credentials may impersonate themselves: %w", err)
	}
	if !sar.Status.Allowed {
		return "", connectionUnknown(managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			fmt.Sprintf(impersonationForbiddenMessage, namespace, name, name, namespace)), nil
	}
	return namespace + ":" + name, nil, nil
}
