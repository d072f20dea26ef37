package gitopsdeploymenthold

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of gitopsdeploymentholds and of their /status (the agent's).
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("gitopsdeploymentholds"),
		SingularResource: gitops.Resource("gitopsdeploymenthold"),
		NewFunc:          func() runtime.Object { return &gitops.GitOpsDeploymentHold{} },
		NewListFunc:      func() runtime.Object { return &gitops.GitOpsDeploymentHoldList{} },
		Columns:          columns,
		ShortNames:       []string{"gdhold"},
	}, optsGetter)
}
