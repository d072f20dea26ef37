package snapshot

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of snapshots and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("snapshots"),
		SingularResource: appstudio.Resource("snapshot"),
		NewFunc:          func() runtime.Object { return &appstudio.Snapshot{} },
		NewListFunc:      func() runtime.Object { return &appstudio.SnapshotList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"as", "snapshot"},
	}, optsGetter)
}
