package operation

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of operations and of their /status. Operations are internal:
// they are not in the gitops category, and RBAC grants them only to the service's accounts.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("operations"),
		SingularResource: gitops.Resource("operation"),
		NewFunc:          func() runtime.Object { return &gitops.Operation{} },
		NewListFunc:      func() runtime.Object { return &gitops.OperationList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		Internal:         true,
	}, optsGetter)
}
