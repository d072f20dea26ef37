package componentdetectionquery

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of componentdetectionqueries and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("componentdetectionqueries"),
		SingularResource: appstudio.Resource("componentdetectionquery"),
		NewFunc:          func() runtime.Object { return &appstudio.ComponentDetectionQuery{} },
		NewListFunc:      func() runtime.Object { return &appstudio.ComponentDetectionQueryList{} },
		Columns:          columns,
		ShortNames:       []string{"hcdq", "compdetection"},
	}, optsGetter)
}
