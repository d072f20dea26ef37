package promotiongate

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of promotiongates and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("promotiongates"),
		SingularResource: appstudio.Resource("promotiongate"),
		NewFunc:          func() runtime.Object { return &appstudio.PromotionGate{} },
		NewListFunc:      func() runtime.Object { return &appstudio.PromotionGateList{} },
		Columns:          columns,
		ShortNames:       []string{"gate"},
	}, optsGetter)
}
