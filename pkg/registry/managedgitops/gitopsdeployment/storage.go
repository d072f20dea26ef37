package gitopsdeployment

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of gitopsdeployments and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, opts validation.Options) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer, opts),
		Resource:         gitops.Resource("gitopsdeployments"),
		SingularResource: gitops.Resource("gitopsdeployment"),
		NewFunc:          func() runtime.Object { return &gitops.GitOpsDeployment{} },
		NewListFunc:      func() runtime.Object { return &gitops.GitOpsDeploymentList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}
