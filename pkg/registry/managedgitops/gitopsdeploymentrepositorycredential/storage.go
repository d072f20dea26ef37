package gitopsdeploymentrepositorycredential

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of gitopsdeploymentrepositorycredentials and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("gitopsdeploymentrepositorycredentials"),
		SingularResource: gitops.Resource("gitopsdeploymentrepositorycredential"),
		NewFunc:          func() runtime.Object { return &gitops.GitOpsDeploymentRepositoryCredential{} },
		NewListFunc:      func() runtime.Object { return &gitops.GitOpsDeploymentRepositoryCredentialList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}
