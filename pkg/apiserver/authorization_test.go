package apiserver

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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

// Nobody writes audit entries, and only the agents DeploymentRecords, whatever RBAC (here: allow
// everything) says; only cluster admins, the namespace controller and the garbage collector
// delete them.
func TestGuardAuditTrail(t *testing.T) {
	allow := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	guard := guardServiceRecords(allow, internalUsers{users: []string{"system:serviceaccount:gitops-service:gitops-agent"},
		agents: fleetidentity.Agents{UserPrefix: fleetidentity.DefaultAgentUserPrefix}})
	agent := &user.DefaultInfo{Name: "system:serviceaccount:gitops-service:gitops-agent"}
	instanceAgent := &user.DefaultInfo{Name: fleetidentity.DefaultAgentUserPrefix + "main"}
	gc := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:generic-garbage-collector"}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	nsController := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:namespace-controller"}
	for _, c := range []struct {
		user     user.Info
		verb     string
		resource string
		sub      string
		want     authorizer.Decision
	}{
		{alice, "list", "auditentries", "", authorizer.DecisionAllow},
		{alice, "watch", "auditentries", "", authorizer.DecisionAllow},
		{alice, "create", "auditentries", "", authorizer.DecisionDeny},
		{alice, "update", "auditentries", "", authorizer.DecisionDeny},
		{alice, "patch", "auditentries", "", authorizer.DecisionDeny},
		{alice, "delete", "auditentries", "", authorizer.DecisionDeny},
		{alice, "deletecollection", "auditentries", "", authorizer.DecisionDeny},
		{alice, "delete", "gitopsdeployments", "", authorizer.DecisionAllow},
		{admin, "create", "auditentries", "", authorizer.DecisionDeny},
		{admin, "delete", "auditentries", "", authorizer.DecisionAllow},
		{nsController, "deletecollection", "auditentries", "", authorizer.DecisionAllow},
		{nsController, "update", "auditentries", "", authorizer.DecisionDeny},
		{agent, "create", "auditentries", "", authorizer.DecisionDeny},
		{alice, "list", "deploymentrecords", "", authorizer.DecisionAllow},
		{alice, "create", "deploymentrecords", "", authorizer.DecisionDeny},
		{alice, "update", "deploymentrecords", "", authorizer.DecisionDeny},
		{alice, "delete", "deploymentrecords", "", authorizer.DecisionDeny},
		{agent, "create", "deploymentrecords", "", authorizer.DecisionAllow},
		{instanceAgent, "update", "deploymentrecords", "", authorizer.DecisionAllow},
		{gc, "delete", "deploymentrecords", "", authorizer.DecisionAllow},
		{gc, "create", "deploymentrecords", "", authorizer.DecisionDeny},
		{admin, "create", "deploymentrecords", "", authorizer.DecisionAllow},
		// The diff subresource writes nothing: RBAC decides. Every other write stays refused.
		{alice, "create", "deploymentrecords", "diff", authorizer.DecisionAllow},
		{alice, "update", "deploymentrecords", "diff", authorizer.DecisionDeny},
		{alice, "patch", "deploymentrecords", "diff", authorizer.DecisionDeny},
		{alice, "delete", "deploymentrecords", "diff", authorizer.DecisionDeny},
		{alice, "update", "deploymentrecords", "status", authorizer.DecisionDeny},
		{alice, "patch", "deploymentrecords", "status", authorizer.DecisionDeny},
		{alice, "create", "deploymentrecords", "status", authorizer.DecisionDeny},
		{alice, "create", "auditentries", "diff", authorizer.DecisionDeny},
		// Previews are the tenants' to create and delete (RBAC decides), their status the
		// agents', and their diff writes nothing.
		{alice, "create", "deploymentpreviews", "", authorizer.DecisionAllow},
		{alice, "delete", "deploymentpreviews", "", authorizer.DecisionAllow},
		{alice, "create", "deploymentpreviews", "diff", authorizer.DecisionAllow},
		{alice, "update", "deploymentpreviews", "status", authorizer.DecisionDeny},
		{alice, "patch", "deploymentpreviews", "status", authorizer.DecisionDeny},
		{agent, "update", "deploymentpreviews", "status", authorizer.DecisionAllow},
		{instanceAgent, "update", "deploymentpreviews", "status", authorizer.DecisionAllow},
		{admin, "update", "deploymentpreviews", "status", authorizer.DecisionAllow},
	} {
		got, reason, err := guard.Authorize(t.Context(), authorizer.AttributesRecord{User: c.user, Verb: c.verb,
			APIGroup: "managed-gitops.redhat.com", Resource: c.resource, Subresource: c.sub, Namespace: "team-a", ResourceRequest: true})
		if err != nil || got != c.want {
			t.Errorf("%s %s %s/%s: %v (%v), want %v", c.user.GetName(), c.verb, c.resource, c.sub, got, err, c.want)
		}
		if got == authorizer.DecisionDeny && reason == "" {
			t.Errorf("%s %s %s: denied without a reason", c.user.GetName(), c.verb, c.resource)
		}
	}
}

func TestAudited(t *testing.T) {
	for gr, want := range map[schema.GroupResource]bool{
		{Group: "managed-gitops.redhat.com", Resource: "gitopsdeployments"}:      true,
		{Group: "managed-gitops.redhat.com", Resource: "operations"}:             false,
		{Group: "managed-gitops.redhat.com", Resource: "tenantplacements"}:       false,
		{Group: "managed-gitops.redhat.com", Resource: "auditentries"}:           false,
		{Group: "managed-gitops.redhat.com", Resource: "deploymentrecords"}:      false,
		{Group: "managed-gitops.redhat.com", Resource: "gitopsdeploymentholds"}:  true,
		{Group: "appstudio.redhat.com", Resource: "snapshotenvironmentbindings"}: true,
		{Group: "", Resource: "secrets"}:                                         false,
	} {
		if got := audited(gr); got != want {
			t.Errorf("audited(%s) = %v, want %v", gr, got, want)
		}
	}
}

// A grant on every object of a resource answers for each name from one question; a grant
// limited by resourceNames, or none, is still asked about with the name, and only an allow is
// taken from the namespace-wide question.
func TestAskNamespaceWideFirst(t *testing.T) {
	type ask struct{ user, verb, name string }
	var asked []ask
	// As RBAC: alice may get every GitOpsDeployment of namespace a, bob only "web"; the host
	// fails to answer anything about dave without a name, and denies erin outright.
	policy := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, ask{a.GetUser().GetName(), a.GetVerb(), a.GetName()})
		switch who := a.GetUser().GetName(); {
		case a.GetNamespace() != "a":
			return authorizer.DecisionNoOpinion, "", nil
		case who == "alice" && a.GetVerb() == "get":
			return authorizer.DecisionAllow, "alice may get them all", nil
		case who == "bob" && a.GetVerb() == "get" && a.GetName() == "web":
			return authorizer.DecisionAllow, "bob may get web", nil
		case who == "dave" && a.GetName() == "":
			return authorizer.DecisionNoOpinion, "", errors.New("host unreachable")
		case who == "dave":
			return authorizer.DecisionAllow, "dave may", nil
		case who == "erin":
			return authorizer.DecisionDeny, "erin may not", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	authz := askNamespaceWideFirst(policy)
	for _, c := range []struct {
		user, verb, namespace, name string
		resourceRequest             bool
		want                        authorizer.Decision
		wantAsked                   []ask
	}{
		{"alice", "get", "a", "web", true, authorizer.DecisionAllow, []ask{{"alice", "get", ""}}},
		{"alice", "get", "b", "web", true, authorizer.DecisionNoOpinion, []ask{{"alice", "get", ""}, {"alice", "get", "web"}}},
		{"alice", "delete", "a", "web", true, authorizer.DecisionNoOpinion, []ask{{"alice", "delete", ""}, {"alice", "delete", "web"}}},
		{"alice", "list", "a", "", true, authorizer.DecisionNoOpinion, []ask{{"alice", "list", ""}}},
		{"bob", "get", "a", "web", true, authorizer.DecisionAllow, []ask{{"bob", "get", ""}, {"bob", "get", "web"}}},
		{"bob", "get", "a", "db", true, authorizer.DecisionNoOpinion, []ask{{"bob", "get", ""}, {"bob", "get", "db"}}},
		{"dave", "get", "a", "web", true, authorizer.DecisionAllow, []ask{{"dave", "get", ""}, {"dave", "get", "web"}}},
		{"erin", "get", "a", "web", true, authorizer.DecisionDeny, []ask{{"erin", "get", ""}, {"erin", "get", "web"}}},
		{"alice", "get", "", "", false, authorizer.DecisionNoOpinion, []ask{{"alice", "get", ""}}},
	} {
		asked = nil
		attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: c.user}, Verb: c.verb, Namespace: c.namespace,
			APIGroup: "managed-gitops.redhat.com", APIVersion: "v1alpha1", Resource: "gitopsdeployments", Name: c.name,
			ResourceRequest: c.resourceRequest, Path: "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/" + c.namespace + "/gitopsdeployments/" + c.name}
		got, _, err := authz.Authorize(t.Context(), attrs)
		if err != nil || got != c.want {
			t.Errorf("%s %s %s/%s: %v (%v), want %v", c.user, c.verb, c.namespace, c.name, got, err, c.want)
		}
		if !reflect.DeepEqual(asked, c.wantAsked) {
			t.Errorf("%s %s %s/%s asked %v, want %v", c.user, c.verb, c.namespace, c.name, asked, c.wantAsked)
		}
	}
}

// The namespace-wide question is the request's own but for the name.
func TestWithoutName(t *testing.T) {
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "update", Namespace: "a",
		APIGroup: "managed-gitops.redhat.com", APIVersion: "v1alpha1", Resource: "gitopsdeployments", Subresource: "status",
		Name: "web", ResourceRequest: true, Path: "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/a/gitopsdeployments/web/status"}
	want := attrs
	want.Name = ""
	if got := withoutName(attrs); !reflect.DeepEqual(got, want) {
		t.Errorf("withoutName = %+v, want %+v", got, want)
	}
}
