package gitopsdeploymentsyncrun

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of gitopsdeploymentsyncruns and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("gitopsdeploymentsyncruns"),
		SingularResource: gitops.Resource("gitopsdeploymentsyncrun"),
		NewFunc:          func() runtime.Object { return &gitops.GitOpsDeploymentSyncRun{} },
		NewListFunc:      func() runtime.Object { return &gitops.GitOpsDeploymentSyncRunList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}
