package deploymenttargetclaim

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

// stored is a valid, bound DeploymentTargetClaim as stored: at generation 3, with a status.
func stored() *appstudio.DeploymentTargetClaim {
	return &appstudio.DeploymentTargetClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-dtc", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetClaimSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			TargetName:                "prod-dt",
		},
		Status: appstudio.DeploymentTargetClaimStatus{Phase: appstudio.DeploymentTargetClaimPhaseBound},
	}
}

var otherStatus = appstudio.DeploymentTargetClaimStatus{
	Phase: appstudio.DeploymentTargetClaimPhaseLost,
	Conditions: []metav1.Condition{{Type: "ErrorOccurred", Status: metav1.ConditionTrue,
		Reason: "TargetDeleted", LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTargetClaim)
	}{
		{"status sent", func(*appstudio.DeploymentTargetClaim) {}},
		{"generation sent", func(c *appstudio.DeploymentTargetClaim) {
			c.Generation = 9
			c.Status = appstudio.DeploymentTargetClaimStatus{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = appstudio.DeploymentTargetClaimStatus{}
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
		mutate func(*appstudio.DeploymentTargetClaim)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.DeploymentTargetClaim) {}, 3},
		{"annotation added", func(c *appstudio.DeploymentTargetClaim) {
			c.Annotations = map[string]string{appstudio.AnnBindCompleted: appstudio.AnnBinderValueTrue}
		}, 3},
		{"status sent", func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }, 3},
		{"target", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "other-dt" }, 4},
		{"class", func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "" }, 4},
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
		mutate func(*appstudio.DeploymentTargetClaim)
	}{
		{"status written", func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }},
		{"spec sent", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = ""; c.Status = otherStatus }},
		{"labels sent", func(c *appstudio.DeploymentTargetClaim) { c.Labels = nil }},
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
		mutate func(*appstudio.DeploymentTargetClaim)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.DeploymentTargetClaim) {}, nil},
		// A claim may name its class, its target, or both.
		{"class only", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "" }, nil},
		{"target only", func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "" }, nil},
		{"invalid class", func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "Bad Class" },
			[]apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
		{"invalid target", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" },
			[]apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{"no name", func(c *appstudio.DeploymentTargetClaim) { c.Name = "" }, []apitesting.Want{apitesting.Required("metadata.name")}},
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
		mutate func(*appstudio.DeploymentTargetClaim)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.DeploymentTargetClaim) {}, nil},
		// The binder writes the target it bound the claim to.
		{"target bound", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "other-dt" }, nil},
		{"invalid target", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" },
			[]apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{"renamed", func(c *appstudio.DeploymentTargetClaim) { c.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*appstudio.DeploymentTargetClaim)
		want   []apitesting.Want
	}{
		{"valid", func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }, nil},
		{"spec changed", func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" }, nil},
		{"unknown phase", func(c *appstudio.DeploymentTargetClaim) { c.Status.Phase = "Released" },
			[]apitesting.Want{apitesting.NotSupported("status.phase")}},
		{"condition with unknown status", func(c *appstudio.DeploymentTargetClaim) {
			c.Status = otherStatus
			c.Status.Conditions[0].Status = "Yes"
		}, []apitesting.Want{apitesting.NotSupported("status.conditions[0].status")}},
		{"renamed", func(c *appstudio.DeploymentTargetClaim) { c.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *appstudio.DeploymentTargetClaim
		want fields.Set
	}{
		{"bound", stored(), fields.Set{"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.targetName": "prod-dt", "status.phase": "Bound"}},
		{"empty", &appstudio.DeploymentTargetClaim{}, fields.Set{"spec.deploymentTargetClassName": "", "spec.targetName": "", "status.phase": ""}},
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
		mutate func(*appstudio.DeploymentTargetClaim)
		want   []interface{}
	}{
		{"bound", func(*appstudio.DeploymentTargetClaim) {}, []interface{}{"prod-dtc", "isolation-level-namespace", "prod-dt", "Bound", "<unknown>"}},
		{"pending", func(c *appstudio.DeploymentTargetClaim) {
			c.Spec.TargetName = ""
			c.Status.Phase = appstudio.DeploymentTargetClaimPhasePending
		}, []interface{}{"prod-dtc", "isolation-level-namespace", "", "Pending", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("deploymenttargetclaims")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("deploymenttargetclaim")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.DeploymentTargetClaim"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.DeploymentTargetClaimList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "prod-dtc", "metadata.namespace": "jane",
			"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.targetName": "prod-dt", "status.phase": "Bound"}},
		{"columns", headers, []string{"Name", "Class", "Target", "Phase", "Age"}},
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
