package registrytest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/registry/store"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

// NoStorage lets a test build a resource's storage without a database, when only
// the storage's definition is looked at: the decorator hands out no backend.
type NoStorage struct{}

var _ generic.RESTOptionsGetter = NoStorage{}

// GetRESTOptions returns options whose decorator builds no storage.
func (NoStorage) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig: storagebackend.NewDefaultConfig("/registry", nil).ForResource(gr),
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
			func() runtime.Object, apistorage.AttrFunc, apistorage.IndexerFuncs, *cache.Indexers) (apistorage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
		ResourcePrefix: gr.Group + "/" + gr.Resource,
	}, nil
}

// Check is one named comparison, run as its own subtest so that a failure names it.
type Check struct {
	Name      string
	Got, Want interface{}
}

// runChecks runs each check as a subtest, so that a failure names what differs.
// It takes *testing.T rather than testing.TB because it needs t.Run.
func runChecks(t *testing.T, checks ...Check) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) {
			if !reflect.DeepEqual(c.Got, c.Want) {
				t.Errorf("got %v, want %v", c.Got, c.Want)
			}
		})
	}
}

// REST is what a resource's storage should look like from outside.
type REST struct {
	Resource, Singular schema.GroupResource
	// New and NewList are the %T of the storage's New() and NewList().
	New, NewList string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	// Sample is the object whose selectable fields are compared with FieldSelectors.
	Sample         runtime.Object
	FieldSelectors fields.Set
	// Columns are the table's headers, with " (wide)" after those shown only by -o wide.
	Columns    []string
	APIVersion fieldpath.APIVersion
	// Status says whether the resource has a /status subresource.
	Status bool
}

// CheckREST compares a resource's storage r, and its /status storage, with want,
// then runs extra, the checks that only this resource has.
func CheckREST(t *testing.T, r *store.REST, status *store.StatusREST, want REST, extra ...Check) {
	t.Helper()
	if want.Status && status == nil {
		t.Fatal("no /status storage")
	}
	_, attrs, err := r.PredicateFunc(labels.Everything(), fields.Everything()).GetAttrs(want.Sample)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := r.ConvertToTable(context.Background(), want.Sample, nil)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, c := range tbl.ColumnDefinitions {
		headers = append(headers, c.Name+map[int32]string{0: "", 1: " (wide)"}[c.Priority])
	}
	scope := Check{"namespaced", r.NamespaceScoped(), true}
	if !want.Namespaced {
		scope = Check{"cluster-scoped", r.NamespaceScoped(), false}
	}
	checks := []Check{
		{"resource", r.DefaultQualifiedResource, want.Resource},
		{"singular", r.SingularQualifiedResource, want.Singular},
		{"new", fmt.Sprintf("%T", r.New()), want.New},
		{"new list", fmt.Sprintf("%T", r.NewList()), want.NewList},
		scope,
		{"short names", r.ShortNames(), want.ShortNames},
		{"categories", r.Categories(), want.Categories},
		{"field selectors", attrs, want.FieldSelectors},
		{"columns", headers, want.Columns},
		{"reset fields", r.GetResetFields()[want.APIVersion].String(), fieldpath.NewSet(fieldpath.MakePathOrDie("status")).String()},
	}
	if want.Status {
		checks = append(checks, Check{"/status reset fields", status.GetResetFields()[want.APIVersion].String(),
			fieldpath.NewSet(strategy.StatusResetPaths()...).String()})
	} else {
		checks = append(checks, Check{"no /status", status == nil, true})
	}
	runChecks(t, append(checks, extra...)...)
}
