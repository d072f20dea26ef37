package deploymenttargetclass

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

// newStrategy is built as the storage builds it; the kind has no /status.
func newStrategy() strategy.Strategy {
	k := kind(scheme)
	return strategy.New(&k)
}

// stored is a valid DeploymentTargetClass as stored, at generation 3. It is cluster-scoped.
func stored() *appstudio.DeploymentTargetClass {
	return &appstudio.DeploymentTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "isolation-level-namespace", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetClassSpec{
			Provisioner:   appstudio.ProvisionerDevSandbox,
			ReclaimPolicy: appstudio.ReclaimPolicyDelete,
		},
	}
}

func TestKind(t *testing.T) {
	s := newStrategy()
	cases := []struct {
		name      string
		got, want bool
	}{
		// Classes are shared by every namespace, like StorageClasses.
		{"cluster-scoped", s.NamespaceScoped(), false},
		{"no status", s.HasStatus(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTargetClass)
	}{
		{"no generation sent", func(c *appstudio.DeploymentTargetClass) { c.Generation = 0 }},
		{"generation sent", func(c *appstudio.DeploymentTargetClass) { c.Generation = 9 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Generation = 1
			newStrategy().PrepareForCreate(context.Background(), obj)
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTargetClass)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.DeploymentTargetClass) {}, 3},
		{"label added", func(c *appstudio.DeploymentTargetClass) { c.Labels["tier"] = "gold" }, 3},
		{"generation sent", func(c *appstudio.DeploymentTargetClass) { c.Generation = 1 }, 3},
		{"reclaim policy", func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain }, 4},
		{"provisioner", func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "example.com/other" }, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := stored()
			obj := stored()
			tc.mutate(obj)
			newStrategy().PrepareForUpdate(context.Background(), obj, old)
			if obj.Generation != tc.want {
				t.Errorf("generation = %d, want %d", obj.Generation, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTargetClass)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.DeploymentTargetClass) {}, nil},
		{"retain", func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain }, nil},
		{"namespaced", func(c *appstudio.DeploymentTargetClass) { c.Namespace = "jane" }, []apitesting.Want{apitesting.Forbidden("metadata.namespace")}},
		{"no provisioner", func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "" }, []apitesting.Want{apitesting.Required("spec.provisioner")}},
		{"invalid provisioner", func(c *appstudio.DeploymentTargetClass) { c.Spec.Provisioner = "example.com/a/b" },
			[]apitesting.Want{apitesting.Invalid("spec.provisioner")}},
		{"unknown reclaim policy", func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = "Recycle" },
			[]apitesting.Want{apitesting.NotSupported("spec.reclaimPolicy")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, newStrategy().Validate(context.Background(), obj), tc.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTargetClass)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.DeploymentTargetClass) {}, nil},
		{"reclaim policy and provisioner", func(c *appstudio.DeploymentTargetClass) {
			c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain
			c.Spec.Provisioner = "example.com/other"
		}, nil},
		{"no reclaim policy", func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = "" },
			[]apitesting.Want{apitesting.Required("spec.reclaimPolicy")}},
		{"renamed", func(c *appstudio.DeploymentTargetClass) { c.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := stored()
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, newStrategy().ValidateUpdate(context.Background(), obj, old), tc.want...)
		})
	}
}

func TestSelectableFields(t *testing.T) {
	cases := []struct {
		name string
		obj  *appstudio.DeploymentTargetClass
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.provisioner": "appstudio.redhat.com/devsandbox"}},
		{"empty", &appstudio.DeploymentTargetClass{}, fields.Set{"spec.provisioner": ""}},
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
		mutate func(*appstudio.DeploymentTargetClass)
		want   []interface{}
	}{
		{"delete", func(*appstudio.DeploymentTargetClass) {},
			[]interface{}{"isolation-level-namespace", "appstudio.redhat.com/devsandbox", "Delete", "<unknown>"}},
		{"retain", func(c *appstudio.DeploymentTargetClass) { c.Spec.ReclaimPolicy = appstudio.ReclaimPolicyRetain },
			[]interface{}{"isolation-level-namespace", "appstudio.redhat.com/devsandbox", "Retain", "<unknown>"}},
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
		{"no /status", status == nil, true},
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("deploymenttargetclasses")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("deploymenttargetclass")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.DeploymentTargetClass"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.DeploymentTargetClassList"},
		{"cluster-scoped", r.NamespaceScoped(), false},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		// Cluster-scoped: no metadata.namespace to select on.
		{"field selectors", attrs, fields.Set{"metadata.name": "isolation-level-namespace", "spec.provisioner": "appstudio.redhat.com/devsandbox"}},
		{"columns", headers, []string{"Name", "Provisioner", "Reclaim Policy", "Age"}},
		{"reset fields", r.GetResetFields()[v1alpha1].String(), fieldpath.NewSet(fieldpath.MakePathOrDie("status")).String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
