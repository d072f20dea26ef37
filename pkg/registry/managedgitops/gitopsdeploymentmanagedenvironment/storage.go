package gitopsdeploymentmanagedenvironment

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of gitopsdeploymentmanagedenvironments and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("gitopsdeploymentmanagedenvironments"),
		SingularResource: gitops.Resource("gitopsdeploymentmanagedenvironment"),
		NewFunc:          func() runtime.Object { return &gitops.GitOpsDeploymentManagedEnvironment{} },
		NewListFunc:      func() runtime.Object { return &gitops.GitOpsDeploymentManagedEnvironmentList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}
