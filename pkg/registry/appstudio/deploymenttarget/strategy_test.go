package deploymenttarget

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

const creds = "spec.kubernetesCredentials."

// stored is a valid, bound DeploymentTarget as stored: at generation 3, with a status.
func stored() *appstudio.DeploymentTarget {
	return &appstudio.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-dt", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace:         "jane-prod",
				APIURL:                   "https://api.example.com:6443",
				ClusterCredentialsSecret: "prod-dt-secret",
			},
			ClaimRef: "prod-dtc",
		},
		Status: appstudio.DeploymentTargetStatus{Phase: appstudio.DeploymentTargetPhaseBound},
	}
}

var otherStatus = appstudio.DeploymentTargetStatus{
	Phase: appstudio.DeploymentTargetPhaseFailed,
	Conditions: []metav1.Condition{{Type: appstudio.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: appstudio.DeploymentTargetReasonErrorOccurred, LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*appstudio.DeploymentTarget)
	}{
		// Only the binder says a target is bound.
		{"status sent", func(*appstudio.DeploymentTarget) {}},
		{"generation sent", func(d *appstudio.DeploymentTarget) { d.Generation = 9; d.Status = appstudio.DeploymentTargetStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = appstudio.DeploymentTargetStatus{}
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
		mutate func(*appstudio.DeploymentTarget)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*appstudio.DeploymentTarget) {}, 3},
		{"annotation added", func(d *appstudio.DeploymentTarget) {
			d.Annotations = map[string]string{appstudio.AnnBindCompleted: appstudio.AnnBinderValueTrue}
		}, 3},
		{"status sent", func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }, 3},
		{"released by its claim", func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "" }, 4},
		{"insecure", func(d *appstudio.DeploymentTarget) {
			d.Spec.KubernetesClusterCredentials.AllowInsecureSkipTLSVerify = true
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
		mutate func(*appstudio.DeploymentTarget)
	}{
		{"status written", func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }},
		{"spec sent", func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = ""; d.Status = otherStatus }},
		{"labels sent", func(d *appstudio.DeploymentTarget) { d.Labels = nil }},
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
		mutate func(*appstudio.DeploymentTarget)
		want   []apitesting.Want
	}{
		{"valid", func(*appstudio.DeploymentTarget) {}, nil},
		{"unbound", func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "" }, nil},
		{"no class", func(d *appstudio.DeploymentTarget) { d.Spec.DeploymentTargetClassName = "" },
			[]apitesting.Want{apitesting.Required("spec.deploymentTargetClassName")}},
		{"http API URL", func(d *appstudio.DeploymentTarget) {
			d.Spec.KubernetesClusterCredentials.APIURL = "http://api.example.com"
		},
			[]apitesting.Want{apitesting.Invalid(creds + "apiURL")}},
		{"no secret", func(d *appstudio.DeploymentTarget) { d.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" },
			[]apitesting.Want{apitesting.Required(creds + "clusterCredentialsSecret")}},
		{"invalid claim", func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "prod_dtc" }, []apitesting.Want{apitesting.Invalid("spec.claimRef")}},
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
		mutate func(*appstudio.DeploymentTarget)
		want   []apitesting.Want
	}{
		{"unchanged", func(*appstudio.DeploymentTarget) {}, nil},
		// The binder binds and releases targets by writing claimRef; the provisioner may
		// rotate the credentials.
		{"claim released and credentials changed", func(d *appstudio.DeploymentTarget) {
			d.Spec.ClaimRef = ""
			d.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "rotated"
		}, nil},
		{"invalid namespace", func(d *appstudio.DeploymentTarget) { d.Spec.KubernetesClusterCredentials.DefaultNamespace = "a.b" },
			[]apitesting.Want{apitesting.Invalid(creds + "defaultNamespace")}},
		{"renamed", func(d *appstudio.DeploymentTarget) { d.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*appstudio.DeploymentTarget)
		want   []apitesting.Want
	}{
		{"valid", func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }, nil},
		{"spec changed", func(d *appstudio.DeploymentTarget) { d.Spec.DeploymentTargetClassName = "" }, nil},
		{"unknown phase", func(d *appstudio.DeploymentTarget) { d.Status.Phase = "Lost" }, []apitesting.Want{apitesting.NotSupported("status.phase")}},
		{"condition without reason", func(d *appstudio.DeploymentTarget) {
			d.Status = otherStatus
			d.Status.Conditions = []metav1.Condition{{Type: "ErrorOccurred", Status: metav1.ConditionTrue, LastTransitionTime: now}}
		}, []apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{"renamed", func(d *appstudio.DeploymentTarget) { d.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *appstudio.DeploymentTarget
		want fields.Set
	}{
		{"bound", stored(), fields.Set{"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.claimRef": "prod-dtc", "status.phase": "Bound"}},
		{"empty", &appstudio.DeploymentTarget{}, fields.Set{"spec.deploymentTargetClassName": "", "spec.claimRef": "", "status.phase": ""}},
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
		mutate func(*appstudio.DeploymentTarget)
		want   []interface{}
	}{
		{"bound", func(*appstudio.DeploymentTarget) {},
			[]interface{}{"prod-dt", "isolation-level-namespace", "jane-prod", "prod-dtc", "Bound", "https://api.example.com:6443", "<unknown>"}},
		{"available", func(d *appstudio.DeploymentTarget) {
			d.Spec.ClaimRef = ""
			d.Spec.KubernetesClusterCredentials.DefaultNamespace = ""
			d.Status.Phase = appstudio.DeploymentTargetPhaseAvailable
		}, []interface{}{"prod-dt", "isolation-level-namespace", "", "", "Available", "https://api.example.com:6443", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, appstudio.Resource("deploymenttargets")},
		{"singular", r.SingularQualifiedResource, appstudio.Resource("deploymenttarget")},
		{"new", fmt.Sprintf("%T", r.New()), "*appstudio.DeploymentTarget"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*appstudio.DeploymentTargetList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "prod-dt", "metadata.namespace": "jane",
			"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.claimRef": "prod-dtc", "status.phase": "Bound"}},
		{"columns", headers, []string{"Name", "Class", "Namespace", "Claim", "Phase", "API URL (wide)", "Age"}},
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
