package auditentry

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// REST serves audit entries to read, and to delete for the namespace controller and cluster
// admins (RBAC grants tenants get, list and watch only). It has no create, update or patch: the
// storage writes entries itself, and the API answers those verbs 405, after RBAC's 403.
type REST struct {
	s *store.REST
}

var (
	_ rest.Storage                = &REST{}
	_ rest.Scoper                 = &REST{}
	_ rest.SingularNameProvider   = &REST{}
	_ rest.Getter                 = &REST{}
	_ rest.Lister                 = &REST{}
	_ rest.Watcher                = &REST{}
	_ rest.GracefulDeleter        = &REST{}
	_ rest.CollectionDeleter      = &REST{}
	_ rest.ShortNamesProvider     = &REST{}
	_ rest.TableConvertor         = &REST{}
	_ rest.StorageVersionProvider = &REST{}
)

// NewREST returns the storage of auditentries.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	s, _, err := store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         Resource,
		SingularResource: gitops.Resource("auditentry"),
		NewFunc:          func() runtime.Object { return &gitops.AuditEntry{} },
		NewListFunc:      func() runtime.Object { return &gitops.AuditEntryList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		// Not in the gitops category: kubectl get gitops would list every write.
		Internal: true,
	}, optsGetter)
	if err != nil {
		return nil, err
	}
	return &REST{s: s}, nil
}

// New implements rest.Storage.
func (r *REST) New() runtime.Object { return r.s.New() }

// Destroy implements rest.Storage.
func (r *REST) Destroy() { r.s.Destroy() }

// NamespaceScoped implements rest.Scoper.
func (r *REST) NamespaceScoped() bool { return true }

// GetSingularName implements rest.SingularNameProvider.
func (r *REST) GetSingularName() string { return r.s.GetSingularName() }

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return nil }

// StorageVersion implements rest.StorageVersionProvider.
func (r *REST) StorageVersion() runtime.GroupVersioner { return r.s.StorageVersion() }

// Get implements rest.Getter.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.s.Get(ctx, name, options)
}

// NewList implements rest.Lister.
func (r *REST) NewList() runtime.Object { return r.s.NewList() }

// List implements rest.Lister.
func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.s.List(ctx, options)
}

// Watch implements rest.Watcher.
func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.s.Watch(ctx, options)
}

// ConvertToTable implements rest.TableConvertor.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.s.ConvertToTable(ctx, object, tableOptions)
}

// Delete implements rest.GracefulDeleter: the namespace controller removes a deleted
// namespace's entries, so that a namespace made again under the same name starts without them.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc,
	options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return r.s.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection implements rest.CollectionDeleter.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions,
	listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.s.DeleteCollection(ctx, deleteValidation, options, listOptions)
}
