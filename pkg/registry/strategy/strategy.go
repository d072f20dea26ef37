// Package strategy holds the create/update/delete strategies shared by every resource of both
// API groups. Each resource supplies its validation; the rules of what a write may change (status
// only through /status, generation only on spec changes) are the same for all of them, as they
// are for custom resources with a status subresource.
package strategy

import (
	"context"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
)

// Kind tells the shared strategies what is particular to one resource.
type Kind struct {
	runtime.ObjectTyper

	// GroupVersions are the versions the resource is served at; server-side apply needs the
	// reset fields of each.
	GroupVersions []schema.GroupVersion
	// ClusterScoped is set for resources that live outside namespaces.
	ClusterScoped bool

	Validate       func(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate func(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// ValidateStatusUpdate checks writes through /status; nil when the kind has no status.
	ValidateStatusUpdate func(ctx context.Context, obj, old runtime.Object) field.ErrorList

	// PrepareCreate and PrepareUpdate, when set, are what the kind itself sets on a write of
	// the main resource, from the request rather than the client (such as the requesting user),
	// after the shared rules of PrepareForCreate and PrepareForUpdate and before the generation
	// is decided.
	PrepareCreate func(ctx context.Context, obj runtime.Object)
	PrepareUpdate func(ctx context.Context, obj, old runtime.Object)
}

// HasStatus says whether the kind is served with a /status subresource.
func (k *Kind) HasStatus() bool { return k.ValidateStatusUpdate != nil }

// Strategy is the strategy of the main resource: spec and metadata are written, status is not.
type Strategy struct {
	*Kind
	names.NameGenerator
}

// New returns the strategy of the main resource of kind.
func New(kind *Kind) Strategy {
	return Strategy{Kind: kind, NameGenerator: names.SimpleNameGenerator}
}

var (
	_ rest.RESTCreateStrategy  = Strategy{}
	_ rest.RESTUpdateStrategy  = Strategy{}
	_ rest.RESTDeleteStrategy  = Strategy{}
	_ rest.ResetFieldsStrategy = Strategy{}
)

// NamespaceScoped implements rest.RESTCreateStrategy.
func (s Strategy) NamespaceScoped() bool { return !s.ClusterScoped }

// PrepareForCreate drops any status the client sent (status is written only through /status,
// by the service) and starts the generation at 1. It runs on every create: a create, dry run
// included, and a server-side apply that creates.
func (s Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if s.HasStatus() {
		resetStatus(obj)
	}
	if s.PrepareCreate != nil {
		s.PrepareCreate(ctx, obj)
	}
	mustAccessor(obj).SetGeneration(1)
}

// PrepareForUpdate keeps the stored status and bumps the generation only when the spec changed,
// so that controllers can tell a new desired state from a metadata edit.
func (s Strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if s.HasStatus() {
		specField(obj, "Status").Set(specField(old, "Status"))
	}
	if s.PrepareUpdate != nil {
		s.PrepareUpdate(ctx, obj, old)
	}
	newMeta, oldMeta := mustAccessor(obj), mustAccessor(old)
	newMeta.SetGeneration(oldMeta.GetGeneration())
	if !apiequality.Semantic.DeepEqual(specField(obj, "Spec").Interface(), specField(old, "Spec").Interface()) {
		newMeta.SetGeneration(oldMeta.GetGeneration() + 1)
	}
}

// Validate implements rest.RESTCreateStrategy.
func (s Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return append(s.Kind.Validate(ctx, obj), fieldvalidation.Times(obj)...)
}

// WarningsOnCreate implements rest.RESTCreateStrategy.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize implements rest.RESTCreateStrategy.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: objects are created with POST, as for custom resources.
func (Strategy) AllowCreateOnUpdate() bool { return false }

// AllowUnconditionalUpdate lets a PUT without resourceVersion overwrite, as for custom resources.
func (Strategy) AllowUnconditionalUpdate() bool { return true }

// ValidateUpdate implements rest.RESTUpdateStrategy.
func (s Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return append(s.Kind.ValidateUpdate(ctx, obj, old), fieldvalidation.Times(obj)...)
}

// WarningsOnUpdate implements rest.RESTUpdateStrategy.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetResetFields tells server-side apply that status is not owned through the main resource.
func (s Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.resetFields(fieldpath.MakePathOrDie("status"))
}

// resetFields lists paths for every served version: structured-merge-diff dereferences the
// entry of the version being applied, so none may be missing.
func (s Strategy) resetFields(paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	fields := map[fieldpath.APIVersion]*fieldpath.Set{}
	for _, gv := range s.GroupVersions {
		fields[fieldpath.APIVersion(gv.String())] = fieldpath.NewSet(paths...)
	}
	return fields
}

// StatusResetPaths are the fields a write through /status does not change: spec, and the
// metadata metav1.ResetObjectMetaForStatus puts back. Server-side apply must know all of them,
// or an apply to /status that carries labels (a whole-object apply configuration) records its
// manager as the labels' owner although they were never written, and a later apply of those
// labels to the main resource conflicts with that manager.
func StatusResetPaths() []fieldpath.Path {
	return []fieldpath.Path{
		fieldpath.MakePathOrDie("spec"),
		fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"),
		fieldpath.MakePathOrDie("metadata", "finalizers"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	}
}

// StatusStrategy is the strategy of the /status subresource: only status is written.
type StatusStrategy struct {
	Strategy
}

// NewStatus returns the strategy of the /status subresource of kind.
func NewStatus(kind *Kind) StatusStrategy {
	return StatusStrategy{Strategy: New(kind)}
}

// PrepareForUpdate keeps everything but status as stored, as the status subresource of a
// custom resource does.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	specField(obj, "Spec").Set(specField(old, "Spec"))
	metav1.ResetObjectMetaForStatus(mustAccessor(obj), mustAccessor(old))
}

// ValidateUpdate implements rest.RESTUpdateStrategy.
func (s StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return append(s.Kind.ValidateStatusUpdate(ctx, obj, old), fieldvalidation.Times(obj)...)
}

// GetResetFields tells server-side apply that only status is owned through /status.
func (s StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.resetFields(StatusResetPaths()...)
}

func resetStatus(obj runtime.Object) {
	st := specField(obj, "Status")
	st.Set(reflect.Zero(st.Type()))
}

// specField returns the named top-level field of an API object. Every kind of both groups
// has Spec and Status fields; reflection saves a pair of accessors per kind.
func specField(obj runtime.Object, name string) reflect.Value {
	f := reflect.ValueOf(obj).Elem().FieldByName(name)
	if !f.IsValid() {
		panic("strategy: " + reflect.TypeOf(obj).String() + " has no field " + name)
	}
	return f
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m
}

// Typed builds a Kind from the typed validation functions of one kind; validateStatusUpdate is
// nil for kinds without a status subresource.
func Typed[T runtime.Object](typer runtime.ObjectTyper, gv schema.GroupVersion,
	validate func(T) field.ErrorList, validateUpdate, validateStatusUpdate func(obj, old T) field.ErrorList) Kind {
	k := Kind{
		ObjectTyper:   typer,
		GroupVersions: []schema.GroupVersion{gv},
		Validate: func(_ context.Context, obj runtime.Object) field.ErrorList {
			return validate(obj.(T))
		},
		ValidateUpdate: func(_ context.Context, obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(T), old.(T))
		},
	}
	if validateStatusUpdate != nil {
		k.ValidateStatusUpdate = func(_ context.Context, obj, old runtime.Object) field.ErrorList {
			return validateStatusUpdate(obj.(T), old.(T))
		}
	}
	return k
}
