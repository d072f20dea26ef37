package tenantplacement

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of tenantplacements and of their /status. They are internal:
// not in the gitops category, and served only to the service's accounts and cluster admins.
// agents names the users that are instances' agents, each confined to its instance's tenants.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, agents fleetidentity.Agents) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer, agents),
		Resource:         gitops.Resource("tenantplacements"),
		SingularResource: gitops.Resource("tenantplacement"),
		NewFunc:          func() runtime.Object { return &gitops.TenantPlacement{} },
		NewListFunc:      func() runtime.Object { return &gitops.TenantPlacementList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		Internal:         true,
	}, optsGetter)
}
