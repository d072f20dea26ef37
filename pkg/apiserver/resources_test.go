package apiserver

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// noStorage builds registries without a database: these tests look only at their definitions.
type noStorage struct{}

func (noStorage) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig: storagebackend.NewDefaultConfig("/registry", nil).ForResource(gr),
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object,
			func() runtime.Object, apistorage.AttrFunc, apistorage.IndexerFuncs, *cache.Indexers) (apistorage.Interface, factory.DestroyFunc, error) {
			return nil, func() {}, nil
		},
		ResourcePrefix: gr.Group + "/" + gr.Resource,
	}, nil
}

// The fields a registry computes for field selectors must be exactly those the served version
// accepts: one without the other either refuses a documented selector or silently matches nothing.
func TestSelectableFieldsMatchFieldLabelConversions(t *testing.T) {
	storage, err := resourceStorage(noStorage{}, validation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]map[string][]string{
		gitopsv1alpha1.GroupName:    gitopsv1alpha1.SelectableFields,
		appstudiov1alpha1.GroupName: appstudiov1alpha1.SelectableFields,
	}
	for group, resources := range storage {
		for name, s := range resources {
			r, ok := s.(*store.REST)
			if !ok {
				continue // a /status subresource
			}
			obj := r.New()
			gvks, _, err := Scheme.ObjectKinds(obj)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			kind := gvks[0].Kind
			want := sets.New(declared[group][kind]...).Insert("metadata.name")
			if r.NamespaceScoped() {
				want.Insert("metadata.namespace")
			}
			_, got, err := r.PredicateFunc(labels.Everything(), fields.Everything()).GetAttrs(obj)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if have := sets.KeySet(got); !have.Equal(want) {
				t.Errorf("%s: registry computes %v, %s/v1alpha1 %s accepts %v", name, sets.List(have), group, kind, sets.List(want))
			}
			if _, _, err := Scheme.ConvertFieldLabel(gvks[0], "spec.nothing", "x"); err == nil {
				t.Errorf("%s: an undeclared field label is accepted", kind)
			}
		}
	}
}
