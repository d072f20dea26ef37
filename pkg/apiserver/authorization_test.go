package apiserver

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
)

// The guard names exact identities: a ServiceAccount of the service's namespace is not one of
// them for being there.
func TestGuardInternalKinds(t *testing.T) {
	allow := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	guard := guardInternalKinds(allow, internalUsers{
		users:  []string{"system:serviceaccount:gitops-service:gitops-controllers"},
		agents: fleetidentity.Agents{UserPrefix: fleetidentity.DefaultAgentUserPrefix},
	})
	sa := func(name string) user.Info {
		return &user.DefaultInfo{Name: "system:serviceaccount:gitops-service:" + name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:gitops-service", user.AllAuthenticated}}
	}
	for _, c := range []struct {
		user     user.Info
		resource string
		want     authorizer.Decision
	}{
		{sa("gitops-controllers"), "tenantplacements", authorizer.DecisionAllow},
		{sa("gitops-agent-main"), "argocdinstances", authorizer.DecisionAllow},
		{sa("gitops-agent-engine"), "operations", authorizer.DecisionAllow},
		{sa("gitops-apiserver"), "tenantplacements", authorizer.DecisionDeny},
		{sa("default"), "operations", authorizer.DecisionDeny},
		{&user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}, "operations", authorizer.DecisionAllow},
		{&user.DefaultInfo{Name: "alice"}, "argocdinstances", authorizer.DecisionDeny},
		{&user.DefaultInfo{Name: "alice"}, "gitopsdeployments", authorizer.DecisionAllow},
	} {
		got, _, err := guard.Authorize(t.Context(), authorizer.AttributesRecord{User: c.user, Verb: "list",
			APIGroup: "managed-gitops.redhat.com", Resource: c.resource, ResourceRequest: true})
		if err != nil || got != c.want {
			t.Errorf("%s on %s: %v (%v), want %v", c.user.GetName(), c.resource, got, err, c.want)
		}
	}
}
