package component

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of components and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("components"),
		SingularResource: appstudio.Resource("component"),
		NewFunc:          func() runtime.Object { return &appstudio.Component{} },
		NewListFunc:      func() runtime.Object { return &appstudio.ComponentList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"hascmp", "hc", "comp"},
	}, optsGetter)
}
