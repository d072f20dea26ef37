package operation

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

// stored is a valid Operation as stored: at generation 3, completed.
func stored() *gitops.Operation {
	return &gitops.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: "operation-6b9f0c1e", Namespace: "gitops-service-argocd", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.OperationSpec{
			OperationID:  "6b9f0c1e",
			ResourceType: gitops.OperationResourceTypeApplication,
			Target:       gitops.OperationTarget{Kind: "Application", Namespace: "gitops-service-argocd", Name: "gitopsdepl-1"},
		},
		Status: gitops.OperationStatus{State: gitops.OperationStateCompleted, Attempts: 2, Message: "done", LastStateUpdate: &now},
	}
}

var otherStatus = gitops.OperationStatus{State: gitops.OperationStateFailed, Attempts: 3, Message: "no such cluster", LastStateUpdate: &now}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.Operation)
	}{
		{"status sent", func(*gitops.Operation) {}},
		{"generation sent", func(o *gitops.Operation) { o.Generation = 9; o.Status = gitops.OperationStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = gitops.OperationStatus{}
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
		mutate func(*gitops.Operation)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*gitops.Operation) {}, 3},
		{"label added", func(o *gitops.Operation) { o.Labels["tier"] = "gold" }, 3},
		{"status sent", func(o *gitops.Operation) { o.Status = otherStatus }, 3},
		{"target", func(o *gitops.Operation) { o.Spec.Target.Name = "gitopsdepl-2" }, 4},
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
		mutate func(*gitops.Operation)
	}{
		{"status written", func(o *gitops.Operation) { o.Status = otherStatus }},
		{"spec sent", func(o *gitops.Operation) { o.Spec.ResourceType = ""; o.Status = otherStatus }},
		{"labels sent", func(o *gitops.Operation) { o.Labels = nil }},
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
		mutate func(*gitops.Operation)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.Operation) {}, nil},
		// The original agent created Operations with only an ID.
		{"only an ID", func(o *gitops.Operation) { o.Spec = gitops.OperationSpec{OperationID: "6b9f0c1e"} }, nil},
		{"unknown resource type", func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" },
			[]apitesting.Want{apitesting.NotSupported("spec.resourceType")}},
		{"invalid name", func(o *gitops.Operation) { o.Name = "Operation_1" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*gitops.Operation)
		want   []apitesting.Want
	}{
		{"unchanged", func(*gitops.Operation) {}, nil},
		{"target", func(o *gitops.Operation) { o.Spec.Target.Name = "gitopsdepl-2" }, nil},
		{"unknown resource type", func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" },
			[]apitesting.Want{apitesting.NotSupported("spec.resourceType")}},
		{"renamed", func(o *gitops.Operation) { o.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*gitops.Operation)
		want   []apitesting.Want
	}{
		{"valid", func(o *gitops.Operation) { o.Status = otherStatus }, nil},
		{"spec changed", func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" }, nil},
		{"unknown state", func(o *gitops.Operation) { o.Status.State = "Done" }, []apitesting.Want{apitesting.NotSupported("status.state")}},
		{"negative attempts", func(o *gitops.Operation) { o.Status.Attempts = -1 }, []apitesting.Want{apitesting.Invalid("status.attempts")}},
		{"renamed", func(o *gitops.Operation) { o.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *gitops.Operation
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.resourceType": "Application", "status.state": "Completed"}},
		{"empty", &gitops.Operation{}, fields.Set{"spec.resourceType": "", "status.state": ""}},
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
		mutate func(*gitops.Operation)
		want   []interface{}
	}{
		{"completed", func(*gitops.Operation) {},
			[]interface{}{"operation-6b9f0c1e", "Application", "gitopsdepl-1", "Completed", int64(2), "done", "<unknown>"}},
		{"failed", func(o *gitops.Operation) { o.Status = otherStatus },
			[]interface{}{"operation-6b9f0c1e", "Application", "gitopsdepl-1", "Failed", int64(3), "no such cluster", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, gitops.Resource("operations")},
		{"singular", r.SingularQualifiedResource, gitops.Resource("operation")},
		{"new", fmt.Sprintf("%T", r.New()), "*managedgitops.Operation"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*managedgitops.OperationList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		// Operations are the agent's: kubectl get gitops must not list them.
		{"no categories", r.Categories(), []string(nil)},
		{"field selectors", attrs, fields.Set{"metadata.name": "operation-6b9f0c1e", "metadata.namespace": "gitops-service-argocd",
			"spec.resourceType": "Application", "status.state": "Completed"}},
		{"columns", headers, []string{"Name", "Type", "Target", "State", "Attempts", "Message (wide)", "Age"}},
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
