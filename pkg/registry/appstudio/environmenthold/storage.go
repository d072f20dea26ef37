package environmenthold

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of environmentholds; they have no status, so no /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("environmentholds"),
		SingularResource: appstudio.Resource("environmenthold"),
		NewFunc:          func() runtime.Object { return &appstudio.EnvironmentHold{} },
		NewListFunc:      func() runtime.Object { return &appstudio.EnvironmentHoldList{} },
		Columns:          columns,
		ShortNames:       []string{"hold"},
	}, optsGetter)
}
