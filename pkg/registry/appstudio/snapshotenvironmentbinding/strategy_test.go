package snapshotenvironmentbinding

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
	"k8s.io/utils/ptr"
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

// stored is a valid SnapshotEnvironmentBinding as stored: at generation 3, with a status.
func stored() *appstudio.SnapshotEnvironmentBinding {
	return &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "appa-staging-binding", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{
			Application: "new-demo-app",
			Environment: "staging",
			Snapshot:    "my-snapshot",
			Components: []appstudio.BindingComponent{
				{Name: "component-a", Configuration: appstudio.BindingComponentConfiguration{Replicas: ptr.To[int32](3)}},
			},
		},
		Status: appstudio.SnapshotEnvironmentBindingStatus{
			GitOpsDeployments: []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "component-a", GitOpsDeployment: "appa-staging-component-a"}},
			ComponentDeploymentConditions: []metav1.Condition{{Type: appstudio.ComponentDeploymentConditionAllComponentsDeployed,
				Status: metav1.ConditionTrue, Reason: appstudio.ComponentDeploymentConditionCommitsSynced, Message: "1 of 1 components deployed",
				LastTransitionTime: now}},
		},
	}
}

var otherStatus = appstudio.SnapshotEnvironmentBindingStatus{
	BindingConditions: []metav1.Condition{{Type: appstudio.BindingConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: appstudio.BindingReasonErrorOccurred, LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.SnapshotEnvironmentBinding)
	}{
		{"status sent", func(*appstudio.SnapshotEnvironmentBinding) {}},
		{"generation sent", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Generation = 9
			b.Status = appstudio.SnapshotEnvironmentBindingStatus{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = appstudio.SnapshotEnvironmentBindingStatus{}
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.SnapshotEnvironmentBinding) {}, 3},
		{"label added", func(b *appstudio.SnapshotEnvironmentBinding) { b.Labels["tier"] = "gold" }, 3},
		{"status sent", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }, 3},
		// A new snapshot is the binding's usual change: the controllers must see it.
		{"snapshot", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "next-snapshot" }, 4},
		{"replicas", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Components[0].Configuration.Replicas = ptr.To[int32](1)
		}, 4},
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
	}{
		{"status written", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }},
		{"spec sent", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Snapshot = "next-snapshot"
			b.Status = otherStatus
		}},
		{"labels sent", func(b *appstudio.SnapshotEnvironmentBinding) { b.Labels = nil }},
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.SnapshotEnvironmentBinding) {}, nil},
		{"no application", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "" },
			[]apitesting.Want{apitesting.Required("spec.application")}},
		{"environment not a DNS label", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Environment = "staging.a" },
			[]apitesting.Want{apitesting.Invalid("spec.environment")}},
		{"no snapshot", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "" },
			[]apitesting.Want{apitesting.Required("spec.snapshot")}},
		{"negative replicas", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Components[0].Configuration.Replicas = ptr.To[int32](-1)
		}, []apitesting.Want{apitesting.Invalid("spec.components[0].configuration.replicas")}},
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.SnapshotEnvironmentBinding) {}, nil},
		{"snapshot and components", func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Snapshot = "next-snapshot"
			b.Spec.Components = append(b.Spec.Components, appstudio.BindingComponent{Name: "component-b"})
		}, nil},
		// The unique index of application and environment relies on both staying as created.
		{"application", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "other-app" },
			[]apitesting.Want{apitesting.Invalid("spec.application")}},
		{"environment", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Environment = "prod" },
			[]apitesting.Want{apitesting.Invalid("spec.environment")}},
		{"spec rules still apply", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "" },
			[]apitesting.Want{apitesting.Required("spec.snapshot")}},
		{"renamed", func(b *appstudio.SnapshotEnvironmentBinding) { b.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
		want   []apitesting.Want
	}{
		{"valid", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }, nil},
		{"spec changed", func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "" }, nil},
		{"deployment without component", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[0].ComponentName = "" },
			[]apitesting.Want{apitesting.Required("status.gitopsDeployments[0].componentName")}},
		{"condition without reason", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.ComponentDeploymentConditions[0].Reason = "" },
			[]apitesting.Want{apitesting.Required("status.componentDeploymentConditions[0].reason")}},
		{"renamed", func(b *appstudio.SnapshotEnvironmentBinding) { b.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *appstudio.SnapshotEnvironmentBinding
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.application": "new-demo-app", "spec.environment": "staging", "spec.snapshot": "my-snapshot"}},
		{"empty", &appstudio.SnapshotEnvironmentBinding{}, fields.Set{"spec.application": "", "spec.environment": "", "spec.snapshot": ""}},
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
		mutate func(*appstudio.SnapshotEnvironmentBinding)
		want   []interface{}
	}{
		{"deployed", func(*appstudio.SnapshotEnvironmentBinding) {},
			[]interface{}{"appa-staging-binding", "new-demo-app", "staging", "my-snapshot", "1 of 1 components deployed", "<unknown>"}},
		{"not reported yet", func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus },
			[]interface{}{"appa-staging-binding", "new-demo-app", "staging", "my-snapshot", "", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("snapshotenvironmentbindings")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("snapshotenvironmentbinding")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.SnapshotEnvironmentBinding"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.SnapshotEnvironmentBindingList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string{"aseb", "binding"}},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "appa-staging-binding", "metadata.namespace": "jane",
			"spec.application": "new-demo-app", "spec.environment": "staging", "spec.snapshot": "my-snapshot"}},
		{"columns", headers, []string{"Name", "Application", "Environment", "Snapshot", "Deployed", "Age"}},
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
