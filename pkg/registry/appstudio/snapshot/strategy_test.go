package snapshot

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// strategies are built as the storage builds them.
func strategies() (strategy.Strategy, strategy.StatusStrategy) {
	k := kind(scheme)
	return strategy.New(&k), strategy.NewStatus(&k)
}

var now = metav1.Now()

// stored is a valid Snapshot as stored: at generation 3, with a status.
func stored() *appstudio.Snapshot {
	return &appstudio.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "my-snapshot", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.SnapshotSpec{
			Application: "new-demo-app",
			DisplayName: "Good snapshot",
			Components: []appstudio.SnapshotComponent{
				{Name: "component-a", ContainerImage: "quay.io/org/a:v1"},
				{Name: "component-b", ContainerImage: "quay.io/org/b:v1",
					Source: appstudio.ComponentSource{GitSource: &appstudio.GitSource{URL: "https://github.com/org/b", Revision: "main"}}},
			},
		},
		Status: appstudio.SnapshotStatus{Conditions: []metav1.Condition{
			{Type: "AppStudioTestSucceeded", Status: metav1.ConditionTrue, Reason: "Passed", LastTransitionTime: now},
		}},
	}
}

var otherStatus = appstudio.SnapshotStatus{Conditions: []metav1.Condition{
	{Type: "AppStudioTestSucceeded", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: now},
}}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
	}{
		{"status sent", func(*appstudio.Snapshot) {}},
		{"generation sent", func(s *appstudio.Snapshot) { s.Generation = 9; s.Status = appstudio.SnapshotStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = appstudio.SnapshotStatus{}
			want.Generation = 1
			s.PrepareForCreate(context.Background(), obj)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.Snapshot) {}, 3},
		{"label added", func(s *appstudio.Snapshot) { s.Labels["tier"] = "gold" }, 3},
		{"status sent", func(s *appstudio.Snapshot) { s.Status = otherStatus }, 3},
		{"display name", func(s *appstudio.Snapshot) { s.Spec.DisplayName = "Better snapshot" }, 4},
		{"artifacts", func(s *appstudio.Snapshot) {
			s.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{"sbom":["a"]}`)}
		}, 4},
		// Refused by validation, but the generation is decided first.
		{"image", func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "quay.io/org/a:v2" }, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			old := stored()
			obj := stored()
			tc.mutate(obj)
			s.PrepareForUpdate(context.Background(), obj, old)
			if obj.Generation != tc.want {
				t.Errorf("generation = %d, want %d", obj.Generation, tc.want)
			}
			if !apiequality.Semantic.DeepEqual(obj.Status, old.Status) {
				t.Errorf("status = %+v, want the stored %+v", obj.Status, old.Status)
			}
		})
	}
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
	}{
		{"status written", func(s *appstudio.Snapshot) { s.Status = otherStatus }},
		{"spec sent", func(s *appstudio.Snapshot) { s.Spec.Components = nil; s.Status = otherStatus }},
		{"labels sent", func(s *appstudio.Snapshot) { s.Labels = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, status := strategies()
			old := stored()
			obj := stored()
			tc.mutate(obj)
			want := old.DeepCopy()
			want.Status = obj.Status
			status.PrepareForUpdate(context.Background(), obj, old)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.Snapshot) {}, nil},
		{"no components", func(s *appstudio.Snapshot) { s.Spec.Components = nil }, nil},
		{"no application", func(s *appstudio.Snapshot) { s.Spec.Application = "" }, []apitesting.Want{apitesting.Required("spec.application")}},
		{"repeated component", func(s *appstudio.Snapshot) { s.Spec.Components[1].Name = "component-a" },
			[]apitesting.Want{apitesting.Duplicate("spec.components[1].name")}},
		{"component without image", func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "" },
			[]apitesting.Want{apitesting.Required("spec.components[0].containerImage")}},
		{"no namespace", func(s *appstudio.Snapshot) { s.Namespace = "" }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, s.Validate(context.Background(), obj), tc.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.Snapshot) {}, nil},
		// What a Snapshot captured never changes; how it is shown may.
		{"display fields and artifacts", func(s *appstudio.Snapshot) {
			s.Spec.DisplayName = "Better snapshot"
			s.Spec.DisplayDescription = "described"
			s.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{}`)}
		}, nil},
		{"application", func(s *appstudio.Snapshot) { s.Spec.Application = "other-app" }, []apitesting.Want{apitesting.Invalid("spec.application")}},
		{"image", func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "quay.io/org/a:v2" },
			[]apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"git revision", func(s *appstudio.Snapshot) { s.Spec.Components[1].Source.GitSource.Revision = "dev" },
			[]apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"component removed", func(s *appstudio.Snapshot) { s.Spec.Components = s.Spec.Components[:1] },
			[]apitesting.Want{apitesting.Forbidden("spec.components")}},
		{"renamed", func(s *appstudio.Snapshot) { s.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			old := stored()
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, s.ValidateUpdate(context.Background(), obj, old), tc.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
		want   []apitesting.Want
	}{
		{"valid", func(s *appstudio.Snapshot) { s.Status = otherStatus }, nil},
		// The spec is not judged by a status write, nor changed by it.
		{"spec changed", func(s *appstudio.Snapshot) { s.Spec.Application = "" }, nil},
		{"repeated condition", func(s *appstudio.Snapshot) {
			s.Status.Conditions = append(s.Status.Conditions, s.Status.Conditions[0])
		}, []apitesting.Want{apitesting.Duplicate("status.conditions[1].type")}},
		{"renamed", func(s *appstudio.Snapshot) { s.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, status := strategies()
			old := stored()
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, status.ValidateUpdate(context.Background(), obj, old), tc.want...)
		})
	}
}

func TestSelectableFields(t *testing.T) {
	cases := []struct {
		name string
		obj  *appstudio.Snapshot
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.application": "new-demo-app"}},
		{"empty", &appstudio.Snapshot{}, fields.Set{"spec.application": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := selectableFields(tc.obj); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestColumns(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Snapshot)
		want   []interface{}
	}{
		{"two components", func(*appstudio.Snapshot) {}, []interface{}{"my-snapshot", "new-demo-app", int64(2), "Good snapshot", "<unknown>"}},
		{"none", func(s *appstudio.Snapshot) { s.Spec.Components = nil; s.Spec.DisplayName = "" },
			[]interface{}{"my-snapshot", "new-demo-app", int64(0), "", "<unknown>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := stored()
			tc.mutate(obj)
			tbl, err := table.NewConvertor(columns...).ConvertToTable(context.Background(), obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tbl.Rows) != 1 || !reflect.DeepEqual(tbl.Rows[0].Cells, tc.want) {
				t.Errorf("rows = %+v, want one with cells %v", tbl.Rows, tc.want)
			}
		})
	}
}

// noStorage builds the registry without a database: only its definition is looked at.
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

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, noStorage{})
	if err != nil {
		t.Fatal(err)
	}
	if status == nil {
		t.Fatal("no /status storage")
	}
	_, attrs, err := r.PredicateFunc(labels.Everything(), fields.Everything()).GetAttrs(stored())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := r.ConvertToTable(context.Background(), stored(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var headers []string
	for _, c := range tbl.ColumnDefinitions {
		headers = append(headers, c.Name+map[int32]string{0: "", 1: " (wide)"}[c.Priority])
	}
	v1alpha1 := fieldpath.APIVersion("appstudio.redhat.com/v1alpha1")
	cases := []struct {
		name      string
		got, want interface{}
	}{
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("snapshots")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("snapshot")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.Snapshot"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.SnapshotList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string{"as", "snapshot"}},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "my-snapshot", "metadata.namespace": "jane", "spec.application": "new-demo-app"}},
		{"columns", headers, []string{"Name", "Application", "Components", "Display Name (wide)", "Age"}},
		{"reset fields", r.GetResetFields()[v1alpha1].String(), fieldpath.NewSet(fieldpath.MakePathOrDie("status")).String()},
		{"/status reset fields", status.GetResetFields()[v1alpha1].String(), fieldpath.NewSet(strategy.StatusResetPaths()...).String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
