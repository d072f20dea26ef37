// Package store builds the REST storage of a resource from its definition: the generic
// registry store for the resource and, for kinds with a status, its /status subresource.
package store

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

// Category groups every user-facing kind of the GitOps Service: kubectl get gitops.
const Category = "gitops"

// Definition describes one resource.
type Definition struct {
	Kind strategy.Kind
	// Resource and SingularResource are the plural and singular names in their group.
	Resource, SingularResource schema.GroupResource

	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object

	// SelectableFields returns the fields beyond metadata.name and metadata.namespace that field
	// selectors may use; they must match the field label conversions of the served versions.
	SelectableFields func(obj runtime.Object) fields.Set
	Columns          []table.Column
	ShortNames       []string
	// Internal kinds are left out of the gitops category.
	Internal bool
}

// REST is the storage of a resource.
type REST struct {
	*genericregistry.Store
	shortNames []string
	categories []string
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories implements rest.CategoriesProvider.
func (r *REST) Categories() []string { return r.categories }

// StatusREST is the storage of a resource's /status subresource.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
)

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main resource owns the underlying storage.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter, which patching through /status needs.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater; /status never creates.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable implements rest.TableConvertor.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// New builds the storage of def; status is nil for kinds without a status subresource.
func New(def Definition, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	kind := def.Kind
	main := strategy.New(&kind)
	attrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		fieldSet := generic.AddObjectMetaFieldsSet(fields.Set{}, metaOf(m), !kind.ClusterScoped)
		if def.SelectableFields != nil {
			fieldSet = generic.MergeFieldsSets(fieldSet, def.SelectableFields(obj))
		}
		return m.GetLabels(), fieldSet, nil
	}
	s := &genericregistry.Store{
		NewFunc:                   def.NewFunc,
		NewListFunc:               def.NewListFunc,
		DefaultQualifiedResource:  def.Resource,
		SingularQualifiedResource: def.SingularResource,
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            main,
		ResetFieldsStrategy:       main,
		TableConvertor:            table.NewConvertor(def.Columns...),
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: attrs}); err != nil {
		return nil, nil, fmt.Errorf("storage of %s: %w", def.Resource, err)
	}
	r := &REST{Store: s, shortNames: def.ShortNames}
	if !def.Internal {
		r.categories = []string{Category}
	}
	if !kind.HasStatus() {
		return r, nil, nil
	}
	statusStore := *s
	status := strategy.NewStatus(&kind)
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	return r, &StatusREST{store: &statusStore}, nil
}

// metaOf adapts an accessor to the *metav1.ObjectMeta that the field set helper takes.
func metaOf(m metav1.Object) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace()}
}
