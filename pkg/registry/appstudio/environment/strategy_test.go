package environment

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

// stored is a valid Environment as stored: at generation 3, with a status.
func stored() *appstudio.Environment {
	return &appstudio.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.EnvironmentSpec{
			DisplayName:        "Staging for Team A",
			DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated,
			ParentEnvironment:  "dev",
			Configuration: appstudio.EnvironmentConfiguration{
				Target: appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "staging-dtc"}},
			},
		},
		Status: appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
			{Type: appstudio.EnvironmentConditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled", LastTransitionTime: now},
		}},
	}
}

var otherStatus = appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
	{Type: appstudio.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: "ErrorOccurred", LastTransitionTime: now},
}}

func withCredentials(e *appstudio.Environment) {
	e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = ""
	e.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{
		ClusterType: appstudio.ConfigurationClusterTypeOpenShift,
		KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{
			TargetNamespace:          "my-namespace",
			APIURL:                   "https://api.example.com:6443",
			ClusterCredentialsSecret: "cluster-secret",
		},
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Environment)
	}{
		{"status sent", func(*appstudio.Environment) {}},
		{"generation sent", func(e *appstudio.Environment) { e.Generation = 9; e.Status = appstudio.EnvironmentStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			sent := obj.DeepCopy()
			s.PrepareForCreate(context.Background(), obj)
			want := sent.DeepCopy()
			want.Status = appstudio.EnvironmentStatus{}
			want.Generation = 1
			if !apiequality.Semantic.DeepEqual(obj, want) {
				t.Errorf("got %+v\nwant %+v", obj, want)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.Environment)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.Environment) {}, 3},
		{"label added", func(e *appstudio.Environment) { e.Labels["tier"] = "gold" }, 3},
		{"status sent", func(e *appstudio.Environment) { e.Status = otherStatus }, 3},
		{"display name", func(e *appstudio.Environment) { e.Spec.DisplayName = "Staging" }, 4},
		{"deployment strategy", func(e *appstudio.Environment) { e.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual }, 4},
		{"env var", func(e *appstudio.Environment) {
			e.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A", Value: "1"}}
		}, 4},
		{"claim to credentials", withCredentials, 4},
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
		mutate func(*appstudio.Environment)
	}{
		{"status written", func(e *appstudio.Environment) { e.Status = otherStatus }},
		{"spec sent", func(e *appstudio.Environment) { e.Spec.DisplayName = "Staging"; e.Status = otherStatus }},
		{"labels sent", func(e *appstudio.Environment) { e.Labels = nil }},
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
		mutate func(*appstudio.Environment)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.Environment) {}, nil},
		{"valid with credentials", withCredentials, nil},
		// Environment names become part of generated names and labels.
		{"name not a DNS label", func(e *appstudio.Environment) { e.Name = "staging.a" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{"no display name", func(e *appstudio.Environment) { e.Spec.DisplayName = "" }, []apitesting.Want{apitesting.Required("spec.displayName")}},
		{"unknown strategy", func(e *appstudio.Environment) { e.Spec.DeploymentStrategy = "Automated" },
			[]apitesting.Want{apitesting.NotSupported("spec.deploymentStrategy")}},
		{"both claim and credentials", func(e *appstudio.Environment) {
			withCredentials(e)
			e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc"
		}, []apitesting.Want{apitesting.Forbidden("spec.unstableConfigurationFields")}},
		{"http API URL", func(e *appstudio.Environment) {
			withCredentials(e)
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.APIURL = "http://api.example.com"
		}, []apitesting.Want{apitesting.Invalid("spec.unstableConfigurationFields.kubernetesCredentials.apiURL")}},
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
		mutate func(*appstudio.Environment)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.Environment) {}, nil},
		// Every field of an Environment's spec may change.
		{"display name and strategy", func(e *appstudio.Environment) {
			e.Spec.DisplayName = "Staging"
			e.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual
		}, nil},
		{"claim to credentials", withCredentials, nil},
		{"invalid parent", func(e *appstudio.Environment) { e.Spec.ParentEnvironment = "Dev" }, []apitesting.Want{apitesting.Invalid("spec.parentEnvironment")}},
		{"renamed", func(e *appstudio.Environment) { e.Name = "prod" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*appstudio.Environment)
		want   []apitesting.Want
	}{
		{"valid", func(e *appstudio.Environment) { e.Status = otherStatus }, nil},
		// The spec was checked when it was written; a status write does not judge it.
		{"invalid spec", func(e *appstudio.Environment) { e.Spec.DisplayName = "" }, nil},
		{"condition without reason", func(e *appstudio.Environment) { e.Status.Conditions[0].Reason = "" },
			[]apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{"renamed", func(e *appstudio.Environment) { e.Name = "prod" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *appstudio.Environment
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.deploymentStrategy": "AppStudioAutomated", "spec.parentEnvironment": "dev"}},
		{"empty", &appstudio.Environment{}, fields.Set{"spec.deploymentStrategy": "", "spec.parentEnvironment": ""}},
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
		mutate func(*appstudio.Environment)
		want   []interface{}
	}{
		{"claim", func(*appstudio.Environment) {},
			[]interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "claim/staging-dtc", "True", "<unknown>"}},
		{"credentials", withCredentials,
			[]interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "https://api.example.com:6443", "True", "<unknown>"}},
		{"this namespace, not reconciled yet", func(e *appstudio.Environment) {
			e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = ""
			e.Status = otherStatus
		}, []interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "", "", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("environments")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("environment")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.Environment"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.EnvironmentList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string{"env"}},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "staging", "metadata.namespace": "jane",
			"spec.deploymentStrategy": "AppStudioAutomated", "spec.parentEnvironment": "dev"}},
		{"columns", headers, []string{"Name", "Display Name", "Strategy", "Parent", "Target", "Reconciled (wide)", "Age"}},
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
