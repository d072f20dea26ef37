package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// internalResources are served but meant only for the service's own components.
var internalResources = sets.New("operations", "argocdinstances", "tenantplacements")

// guardInternalKinds denies the internal kinds to everyone outside allowedGroups and
// system:masters before the host cluster's RBAC is asked, so that a broad tenant Role
// (resources: ["*"]) cannot reach them.
func guardInternalKinds(delegate authorizer.Authorizer, allowedGroups []string) authorizer.Authorizer {
	allowed := sets.New(allowedGroups...).Insert(user.SystemPrivilegedGroup)
	guard := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() || a.GetAPIGroup() != gitops.GroupName || !internalResources.Has(a.GetResource()) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if u := a.GetUser(); u != nil && allowed.HasAny(u.GetGroups()...) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		return authorizer.DecisionDeny, fmt.Sprintf("%s.%s are internal to the GitOps Service", a.GetResource(), gitops.GroupName), nil
	})
	return union.New(guard, delegate)
}
