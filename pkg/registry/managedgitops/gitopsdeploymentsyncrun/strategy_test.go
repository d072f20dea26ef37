package gitopsdeploymentsyncrun

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

// stored is a valid GitOpsDeploymentSyncRun as stored: at generation 3, failed.
func stored() *gitops.GitOpsDeploymentSyncRun {
	return &gitops.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: "sync-1", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app", RevisionID: "0a1b2c3d"},
		Status: gitops.GitOpsDeploymentSyncRunStatus{Conditions: []gitops.GitOpsDeploymentSyncRunCondition{{
			Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusTrue,
			Reason: gitops.SyncRunReasonErrorOccurred, Message: "no such revision", LastTransitionTime: &now,
		}}},
	}
}

var otherStatus = gitops.GitOpsDeploymentSyncRunStatus{Conditions: []gitops.GitOpsDeploymentSyncRunCondition{{
	Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusFalse, LastTransitionTime: &now,
}}}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeploymentSyncRun)
	}{
		{"status sent", func(*gitops.GitOpsDeploymentSyncRun) {}},
		{"generation sent", func(r *gitops.GitOpsDeploymentSyncRun) {
			r.Generation = 9
			r.Status = gitops.GitOpsDeploymentSyncRunStatus{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = gitops.GitOpsDeploymentSyncRunStatus{}
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentSyncRun) {}, 3},
		{"label added", func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels["tier"] = "gold" }, 3},
		{"status sent", func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }, 3},
		// Refused by validation, but the generation is decided first.
		{"revision", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "ffff" }, 4},
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
	}{
		{"status written", func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }},
		{"spec sent", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = ""; r.Status = otherStatus }},
		{"labels sent", func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels = nil }},
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.GitOpsDeploymentSyncRun) {}, nil},
		{"deployment's target revision", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "" }, nil},
		{"no deployment", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "" },
			[]apitesting.Want{apitesting.Required("spec.gitopsDeploymentName")}},
		{"revision with whitespace", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "a b" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []apitesting.Want
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentSyncRun) {}, nil},
		{"labels", func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels = nil }, nil},
		// A SyncRun stands for one sync: what it syncs never changes.
		{"deployment", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "other" },
			[]apitesting.Want{apitesting.Invalid("spec.gitopsDeploymentName")}},
		{"revision", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "ffff" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{"revision cleared", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{"renamed", func(r *gitops.GitOpsDeploymentSyncRun) { r.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []apitesting.Want
	}{
		{"valid", func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }, nil},
		{"spec changed", func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "" }, nil},
		{"unknown condition type", func(r *gitops.GitOpsDeploymentSyncRun) { r.Status.Conditions[0].Type = "Synced" },
			[]apitesting.Want{apitesting.NotSupported("status.conditions[0].type")}},
		{"renamed", func(r *gitops.GitOpsDeploymentSyncRun) { r.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *gitops.GitOpsDeploymentSyncRun
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.gitopsDeploymentName": "app"}},
		{"empty", &gitops.GitOpsDeploymentSyncRun{}, fields.Set{"spec.gitopsDeploymentName": ""}},
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
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []interface{}
	}{
		{"failed", func(*gitops.GitOpsDeploymentSyncRun) {}, []interface{}{"sync-1", "app", "0a1b2c3d", "True", "<unknown>"}},
		{"resolved", func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }, []interface{}{"sync-1", "app", "0a1b2c3d", "False", "<unknown>"}},
		{"new", func(r *gitops.GitOpsDeploymentSyncRun) {
			r.Status = gitops.GitOpsDeploymentSyncRunStatus{}
			r.Spec.RevisionID = ""
		},
			[]interface{}{"sync-1", "app", "", "", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, gitops.Resource("gitopsdeploymentsyncruns")},
		{"singular", r.SingularQualifiedResource, gitops.Resource("gitopsdeploymentsyncrun")},
		{"new", fmt.Sprintf("%T", r.New()), "*managedgitops.GitOpsDeploymentSyncRun"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*managedgitops.GitOpsDeploymentSyncRunList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "sync-1", "metadata.namespace": "jane", "spec.gitopsDeploymentName": "app"}},
		{"columns", headers, []string{"Name", "Deployment", "Revision", "Error", "Age"}},
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
