package deploymentpreview

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of deploymentpreviews and of their /status (the agent's).
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("deploymentpreviews"),
		SingularResource: gitops.Resource("deploymentpreview"),
		NewFunc:          func() runtime.Object { return &gitops.DeploymentPreview{} },
		NewListFunc:      func() runtime.Object { return &gitops.DeploymentPreviewList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"dpreview"},
	}, optsGetter)
}
