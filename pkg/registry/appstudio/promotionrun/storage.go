package promotionrun

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of promotionruns and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("promotionruns"),
		SingularResource: appstudio.Resource("promotionrun"),
		NewFunc:          func() runtime.Object { return &appstudio.PromotionRun{} },
		NewListFunc:      func() runtime.Object { return &appstudio.PromotionRunList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"apr", "promotion"},
	}, optsGetter)
}
