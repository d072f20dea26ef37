package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
)

// internalResources are served but meant only for the service's own components.
var internalResources = sets.New("operations", "argocdinstances", "tenantplacements")

// internalUsers are who may use the internal kinds besides system:masters: exact users,
// groups, and the agents of the fleet's instances.
type internalUsers struct {
	users, groups []string
	agents        fleetidentity.Agents
}

// guardInternalKinds denies the internal kinds to everyone but the internal users and
// system:masters before the host cluster's RBAC is asked, so that a broad tenant Role
// (resources: ["*"]) cannot reach them, nor any other ServiceAccount of the service's namespace.
// RBAC still decides what each of those may do.
func guardInternalKinds(delegate authorizer.Authorizer, internal internalUsers) authorizer.Authorizer {
	groups := sets.New(internal.groups...).Insert(user.SystemPrivilegedGroup)
	users := sets.New(internal.users...)
	guard := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() || a.GetAPIGroup() != gitops.GroupName || !internalResources.Has(a.GetResource()) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if u := a.GetUser(); u != nil {
			if _, agent := internal.agents.InstanceOfUser(u.GetName()); agent || users.Has(u.GetName()) || groups.HasAny(u.GetGroups()...) {
				return authorizer.DecisionNoOpinion, "", nil
			}
		}
		return authorizer.DecisionDeny, fmt.Sprintf("%s.%s are internal to the GitOps Service", a.GetResource(), gitops.GroupName), nil
	})
	return union.New(guard, delegate)
}
