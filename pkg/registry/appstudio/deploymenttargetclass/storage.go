package deploymenttargetclass

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of deploymenttargetclasses; the kind has no status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("deploymenttargetclasses"),
		SingularResource: appstudio.Resource("deploymenttargetclass"),
		NewFunc:          func() runtime.Object { return &appstudio.DeploymentTargetClass{} },
		NewListFunc:      func() runtime.Object { return &appstudio.DeploymentTargetClassList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}
