package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/auditentry"
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

// audited says which writes the audit trail records: those of every kind of both groups but
// the internal ones (tenants cannot see them) and the service's own records (the trail itself,
// DeploymentRecords, which are a history of their own). Cluster-scoped kinds are left out by
// the storage: an entry lives in its object's namespace.
func audited(gr schema.GroupResource) bool {
	switch gr.Group {
	case gitops.GroupName:
		return !internalResources.Has(gr.Resource) && !serviceRecords.Has(gr.Resource)
	case appstudio.GroupName:
		return true
	}
	return false
}

// serviceRecords are the kinds tenants read and the service alone writes: the audit trail
// (which only the storage writes) and DeploymentRecords (which the agents write).
var serviceRecords = sets.New(auditentry.Resource.Resource, "deploymentrecords")

// recordDeleters may delete the service's records besides cluster admins: the namespace
// controller, which removes a deleted namespace's records, so that a namespace made again under
// the same name does not show its predecessor's history, and the garbage collector, which
// removes a deleted deployment's records. Under their own names with
// --use-service-account-credentials, or kube-controller-manager's without.
var recordDeleters = sets.New(
	"system:serviceaccount:kube-system:namespace-controller",
	"system:serviceaccount:kube-system:generic-garbage-collector",
	user.KubeControllerManager,
)

// readsRecords tells a create that writes nothing: deploymentrecords/diff computes the
// difference of two records, deploymentpreviews/diff that of a record and a preview (a create
// only because client-gen and kubectl send a subresource's input as a body), so RBAC alone
// decides who may, as for a get.
func readsRecords(a authorizer.Attributes) bool {
	return (a.GetResource() == "deploymentrecords" || a.GetResource() == "deploymentpreviews") &&
		a.GetSubresource() == "diff" && a.GetVerb() == "create"
}

// servicePreviewStatus tells a write of a DeploymentPreview's status: tenants create and delete
// previews, but what the agent rendered is the agent's alone to say (a tenant Role with
// resources: ["*"] must not pass off other manifests as Git's), so it is guarded as records are.
func servicePreviewStatus(a authorizer.Attributes) bool {
	return a.GetResource() == "deploymentpreviews" && a.GetSubresource() == "status"
}

// guardServiceRecords refuses writes to the service's records, whatever RBAC grants (a tenant
// Role with resources: ["*"] must not erase or forge its namespace's history): nobody writes an
// audit entry (the storage does); only the internal users (the agents) write DeploymentRecords
// and DeploymentPreviews' status; cluster admins and recordDeleters may delete records.
func guardServiceRecords(delegate authorizer.Authorizer, internal internalUsers) authorizer.Authorizer {
	groups := sets.New(internal.groups...)
	users := sets.New(internal.users...)
	guard := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() || a.GetAPIGroup() != gitops.GroupName || a.IsReadOnly() ||
			!(serviceRecords.Has(a.GetResource()) || servicePreviewStatus(a)) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if readsRecords(a) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		u := a.GetUser()
		if u == nil {
			return authorizer.DecisionDeny, "no user", nil
		}
		userGroups := sets.New(u.GetGroups()...)
		admin := userGroups.Has(user.SystemPrivilegedGroup)
		deletes := a.GetVerb() == "delete" || a.GetVerb() == "deletecollection"
		if deletes && (recordDeleters.Has(u.GetName()) || admin) {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if a.GetResource() == auditentry.Resource.Resource {
			return authorizer.DecisionDeny, "audit entries are written by gitops-apiserver only", nil
		}
		if _, agent := internal.agents.InstanceOfUser(u.GetName()); agent || users.Has(u.GetName()) || groups.HasAny(u.GetGroups()...) || admin {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if servicePreviewStatus(a) {
			return authorizer.DecisionDeny, "a deployment preview's status is written by the GitOps Service's agents only", nil
		}
		return authorizer.DecisionDeny, "deployment records are written by the GitOps Service's agents only", nil
	})
	return union.New(guard, delegate)
}

// askNamespaceWideFirst asks the delegate, for a request on one named object, first whether
// the user may do the same to every object of the resource in the namespace. The delegating
// authorizer caches the host's answers by the whole SubjectAccessReview, name included, so a
// client that reads a thousand objects by name otherwise costs the host's kube-apiserver a
// thousand SubjectAccessReviews in every cache period (and each of those requests waits for
// one); without the name it is one. Only an allow is taken from that first answer: anything
// else asks again with the name, so grants limited by resourceNames keep working. Sound for
// RBAC, which cannot deny; a host whose authorization chain has a webhook that denies by
// object name turns it off (--authorization-namespace-wide-first=false).
func askNamespaceWideFirst(delegate authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if !a.IsResourceRequest() || a.GetName() == "" {
			return delegate.Authorize(ctx, a)
		}
		if decision, reason, err := delegate.Authorize(ctx, withoutName(a)); err == nil && decision == authorizer.DecisionAllow {
			return decision, reason, nil
		}
		return delegate.Authorize(ctx, a)
	})
}

// withoutName is a resource request's attributes without the object's name.
func withoutName(a authorizer.Attributes) authorizer.AttributesRecord {
	fieldSelector, fieldSelectorErr := a.GetFieldSelector()
	labelSelector, labelSelectorErr := a.GetLabelSelector()
	return authorizer.AttributesRecord{
		User:                      a.GetUser(),
		Verb:                      a.GetVerb(),
		Namespace:                 a.GetNamespace(),
		APIGroup:                  a.GetAPIGroup(),
		APIVersion:                a.GetAPIVersion(),
		Resource:                  a.GetResource(),
		Subresource:               a.GetSubresource(),
		ResourceRequest:           true,
		Path:                      a.GetPath(),
		FieldSelectorRequirements: fieldSelector,
		FieldSelectorParsingErr:   fieldSelectorErr,
		LabelSelectorRequirements: labelSelector,
		LabelSelectorParsingErr:   labelSelectorErr,
	}
}
