package promotionrun

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

// stored is a valid PromotionRun as stored: at generation 3, complete.
func stored() *appstudio.PromotionRun {
	return &appstudio.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "appa-manual-promotion", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.PromotionRunSpec{
			Snapshot:        "my-snapshot",
			Application:     "appa",
			ManualPromotion: appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"},
		},
		Status: appstudio.PromotionRunStatus{
			State:            appstudio.PromotionRunStateComplete,
			CompletionResult: appstudio.PromotionRunCompleteResultSuccess,
			EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusSuccess},
			},
			ActiveBindings:     []string{"appa-staging-binding"},
			PromotionStartTime: now,
		},
	}
}

var otherStatus = appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, PromotionStartTime: now}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.PromotionRun)
	}{
		// A client cannot create a run that claims to be complete.
		{"status sent", func(*appstudio.PromotionRun) {}},
		{"generation sent", func(p *appstudio.PromotionRun) { p.Generation = 9; p.Status = appstudio.PromotionRunStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = appstudio.PromotionRunStatus{}
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
		mutate func(*appstudio.PromotionRun)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.PromotionRun) {}, 3},
		{"label added", func(p *appstudio.PromotionRun) { p.Labels["tier"] = "gold" }, 3},
		{"finalizer added", func(p *appstudio.PromotionRun) { p.Finalizers = []string{"example.com/f"} }, 3},
		{"status sent", func(p *appstudio.PromotionRun) { p.Status = otherStatus }, 3},
		// Refused by validation, but the generation is decided first.
		{"target", func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "prod" }, 4},
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
		mutate func(*appstudio.PromotionRun)
	}{
		{"status written", func(p *appstudio.PromotionRun) { p.Status = otherStatus }},
		{"spec sent", func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "other"; p.Status = otherStatus }},
		{"labels sent", func(p *appstudio.PromotionRun) { p.Labels = nil }},
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
		mutate func(*appstudio.PromotionRun)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.PromotionRun) {}, nil},
		{"no snapshot", func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "" }, []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{"no target", func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "" },
			[]apitesting.Want{apitesting.Required("spec.manualPromotion.targetEnvironment")}},
		{"automated", func(p *appstudio.PromotionRun) { p.Spec.AutomatedPromotion.InitialEnvironment = "dev" },
			[]apitesting.Want{apitesting.Forbidden("spec.automatedPromotion.initialEnvironment")}},
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
		mutate func(*appstudio.PromotionRun)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.PromotionRun) {}, nil},
		{"labels", func(p *appstudio.PromotionRun) { p.Labels = nil }, nil},
		// A run stands for one promotion: every field of its spec is fixed.
		{"snapshot", func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "other" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"application", func(p *appstudio.PromotionRun) { p.Spec.Application = "other" }, []apitesting.Want{apitesting.Forbidden("spec")}},
		{"target", func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "prod" },
			[]apitesting.Want{apitesting.Forbidden("spec")}},
		{"renamed", func(p *appstudio.PromotionRun) { p.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*appstudio.PromotionRun)
		want   []apitesting.Want
	}{
		{"valid", func(p *appstudio.PromotionRun) { p.Status = otherStatus }, nil},
		{"spec changed", func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "" }, nil},
		{"unknown state", func(p *appstudio.PromotionRun) { p.Status = otherStatus; p.Status.State = "Done" },
			[]apitesting.Want{apitesting.NotSupported("status.state")}},
		{"result before completion", func(p *appstudio.PromotionRun) { p.Status.State = appstudio.PromotionRunStateActive },
			[]apitesting.Want{apitesting.Invalid("status.completionResult")}},
		{"renamed", func(p *appstudio.PromotionRun) { p.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *appstudio.PromotionRun
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.application": "appa", "spec.snapshot": "my-snapshot", "status.state": "Complete"}},
		{"empty", &appstudio.PromotionRun{}, fields.Set{"spec.application": "", "spec.snapshot": "", "status.state": ""}},
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
		mutate func(*appstudio.PromotionRun)
		want   []interface{}
	}{
		{"complete", func(*appstudio.PromotionRun) {}, []interface{}{"appa-manual-promotion", "appa", "my-snapshot", "staging", "Complete", "Success", "<unknown>"}},
		{"active", func(p *appstudio.PromotionRun) { p.Status = otherStatus },
			[]interface{}{"appa-manual-promotion", "appa", "my-snapshot", "staging", "Active", "", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("promotionruns")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("promotionrun")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.PromotionRun"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.PromotionRunList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string{"apr", "promotion"}},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "appa-manual-promotion", "metadata.namespace": "jane",
			"spec.application": "appa", "spec.snapshot": "my-snapshot", "status.state": "Complete"}},
		{"columns", headers, []string{"Name", "Application", "Snapshot", "Target", "State", "Result", "Age"}},
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
