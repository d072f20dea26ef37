package gitopsdeploymentmanagedenvironment

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
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
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

// stored is a valid GitOpsDeploymentManagedEnvironment as stored: at generation 3, connected.
func stored() *gitops.GitOpsDeploymentManagedEnvironment {
	return &gitops.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.ManagedEnvironmentSpec{
			APIURL:                   "https://api.example.com:6443",
			ClusterCredentialsSecret: "my-cluster-secret",
			Namespaces:               []string{"prod"},
		},
		Status: gitops.ManagedEnvironmentStatus{Conditions: []metav1.Condition{{
			Type: gitops.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionTrue,
			Reason: string(gitops.ManagedEnvironmentReasonSucceeded), LastTransitionTime: now,
		}}},
	}
}

var otherStatus = gitops.ManagedEnvironmentStatus{Conditions: []metav1.Condition{{
	Type: gitops.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
	Reason: string(gitops.ManagedEnvironmentReasonUnableToCreateClient), LastTransitionTime: now,
}}}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
	}{
		// A client cannot create an environment that claims to be connected.
		{"status sent", func(*gitops.GitOpsDeploymentManagedEnvironment) {}},
		{"generation sent", func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Generation = 9
			e.Status = gitops.ManagedEnvironmentStatus{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = gitops.ManagedEnvironmentStatus{}
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentManagedEnvironment) {}, 3},
		{"label added", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Labels["tier"] = "gold" }, 3},
		{"status sent", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }, 3},
		{"secret", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterCredentialsSecret = "rotated" }, 4},
		{"cluster resources", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterResources = true }, 4},
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
	}{
		{"status written", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }},
		{"spec sent", func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = "https://other"
			e.Status = otherStatus
		}},
		{"labels sent", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Labels = nil }},
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.GitOpsDeploymentManagedEnvironment) {}, nil},
		{"http API URL", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "http://api.example.com" },
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		// The service appends its own query parameter to cluster URLs.
		{"API URL with query", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "https://api.example.com?x=1" },
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{"no secret", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterCredentialsSecret = "" },
			[]apitesting.Want{apitesting.Required("spec.credentialsSecret")}},
		{"repeated namespace", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"prod", "prod"} },
			[]apitesting.Want{apitesting.Duplicate("spec.namespaces[1]")}},
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
		want   []apitesting.Want
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentManagedEnvironment) {}, nil},
		// Every field of the spec may change: the cluster can move and its credentials rotate.
		{"URL, secret and namespaces", func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = "https://api.other.example.com"
			e.Spec.ClusterCredentialsSecret = "rotated"
			e.Spec.Namespaces = nil
		}, nil},
		{"invalid namespace", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"Prod"} },
			[]apitesting.Want{apitesting.Invalid("spec.namespaces[0]")}},
		{"renamed", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
		want   []apitesting.Want
	}{
		{"valid", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }, nil},
		{"spec changed", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "" }, nil},
		{"condition without reason", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status.Conditions[0].Reason = "" },
			[]apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{"renamed", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *gitops.GitOpsDeploymentManagedEnvironment
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.credentialsSecret": "my-cluster-secret"}},
		{"empty", &gitops.GitOpsDeploymentManagedEnvironment{}, fields.Set{"spec.credentialsSecret": ""}},
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
		mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
		want   []interface{}
	}{
		{"connected", func(*gitops.GitOpsDeploymentManagedEnvironment) {},
			[]interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "True", "<unknown>"}},
		{"failed", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus },
			[]interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "False", "<unknown>"}},
		{"not tried yet", func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = gitops.ManagedEnvironmentStatus{} },
			[]interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "", "<unknown>"}},
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
	v1alpha1 := fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1")
	cases := []struct {
		name      string
		got, want interface{}
	}{
		{"resource", r.DefaultQualifiedResource, gitops.Resource("gitopsdeploymentmanagedenvironments")},
		{"singular", r.SingularQualifiedResource, gitops.Resource("gitopsdeploymentmanagedenvironment")},
		{"new", fmt.Sprintf("%T", r.New()), "*managedgitops.GitOpsDeploymentManagedEnvironment"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*managedgitops.GitOpsDeploymentManagedEnvironmentList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "my-cluster", "metadata.namespace": "jane", "spec.credentialsSecret": "my-cluster-secret"}},
		{"columns", headers, []string{"Name", "API URL", "Secret", "Connected", "Age"}},
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
