package namespaceprovisioner

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
	"github.com/gitops-service/gitops-service/pkg/controller/tenantsecrets"
)

// requiredAccess are the rights without which the provisioner cannot work, in every
// namespace: its namespace informer would wait forever to list, and the agent with it.
// They are those of artifacts/namespace-provisioner, less the appstudio ones, which the agent's
// own role grants.
var requiredAccess = []authorizationv1.ResourceAttributes{
	{Verb: "get", Resource: "namespaces"},
	{Verb: "list", Resource: "namespaces"},
	{Verb: "watch", Resource: "namespaces"},
	{Verb: "create", Resource: "namespaces"},
	{Verb: "update", Resource: "namespaces"},
	{Verb: "delete", Resource: "namespaces"},
	{Verb: "create", Resource: "serviceaccounts"},
	{Verb: "get", Resource: "serviceaccounts", Name: ServiceAccountName},
	{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: ServiceAccountName},
	{Verb: "create", Resource: "resourcequotas"},
	{Verb: "create", Resource: "limitranges"},
	{Verb: "get", Resource: "resourcequotas", Name: ResourceQuotaName},
	{Verb: "update", Resource: "resourcequotas", Name: ResourceQuotaName},
	{Verb: "delete", Resource: "resourcequotas", Name: ResourceQuotaName},
	{Verb: "get", Resource: "limitranges", Name: LimitRangeName},
	{Verb: "update", Resource: "limitranges", Name: LimitRangeName},
	{Verb: "delete", Resource: "limitranges", Name: LimitRangeName},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	{Verb: "get", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Name: RoleBindingName},
	{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Name: RoleBindingName},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "edit"},
	// Secrets are read only in the namespaces the provisioner serves, through a binding of the
	// reader role that it makes there (pkg/controller/tenantsecrets).
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: tenantsecrets.ReaderRole},
	{Verb: "create", Resource: "secrets"},
	{Verb: "update", Resource: "secrets"},
	{Verb: "delete", Resource: "secrets"},
}

// CheckAccess asks the API server whether the agent has the rights the provisioner needs
// (artifacts/namespace-provisioner), and says which are missing: an agent started with the
// provisioner enabled and without them fails at once, rather than waiting for a cache that
// cannot fill.
func CheckAccess(ctx context.Context, kube kubernetes.Interface) error {
	missing, err := provisioning.MissingAccess(ctx, kube, requiredAccess)
	if err != nil {
		return fmt.Errorf("checking the namespace provisioner's rights: %w", err)
	}
	if len(missing) > 0 {
		return provisioning.Lacks("namespace provisioner (--controllers "+Name+")", "the rights of artifacts/namespace-provisioner", missing)
	}
	return nil
}
