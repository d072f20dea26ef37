package gitopsdeployment

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
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// strategies are built as the storage builds them, with the server's validation options.
func strategies(opts validation.Options) (strategy.Strategy, strategy.StatusStrategy) {
	k := kind(scheme, opts)
	return strategy.New(&k), strategy.NewStatus(&k)
}

var now = metav1.Now()

// stored is a valid GitOpsDeployment as stored: at generation 3, synced and healthy.
func stored() *gitops.GitOpsDeployment {
	return &gitops.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.GitOpsDeploymentSpec{
			Source: gitops.ApplicationSource{
				RepoURL: "https://github.com/org/repo",
				Path:    "environments/overlays/dev",
			},
			Destination: gitops.ApplicationDestination{Environment: "my-cluster", Namespace: "prod"},
			Type:        gitops.GitOpsDeploymentSpecTypeAutomated,
		},
		Status: gitops.GitOpsDeploymentStatus{
			Sync:   gitops.SyncStatus{Status: gitops.SyncStatusCodeSynced, Revision: "abc"},
			Health: gitops.HealthStatus{Status: gitops.HealthStatusCodeHealthy},
			ReconciledState: gitops.ReconciledState{
				Source: gitops.GitOpsDeploymentSource{RepoURL: "https://github.com/org/repo", Path: "environments/overlays/dev"},
			},
		},
	}
}

var otherStatus = gitops.GitOpsDeploymentStatus{
	Conditions: []gitops.GitOpsDeploymentCondition{{Type: gitops.GitOpsDeploymentConditionErrorOccurred,
		Status: gitops.GitOpsConditionStatusTrue, Reason: gitops.GitOpsDeploymentReasonErrorOccurred, LastTransitionTime: &now}},
	Sync:   gitops.SyncStatus{Status: gitops.SyncStatusCodeOutOfSync},
	Health: gitops.HealthStatus{Status: gitops.HealthStatusCodeDegraded},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeployment)
	}{
		// A client cannot create a deployment that claims to be synced.
		{"status sent", func(*gitops.GitOpsDeployment) {}},
		{"generation sent", func(d *gitops.GitOpsDeployment) { d.Generation = 9; d.Status = gitops.GitOpsDeploymentStatus{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(validation.Options{})
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = gitops.GitOpsDeploymentStatus{}
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
		mutate func(*gitops.GitOpsDeployment)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*gitops.GitOpsDeployment) {}, 3},
		{"finalizer added", func(d *gitops.GitOpsDeployment) { d.Finalizers = []string{gitops.GitOpsDeploymentFinalizer} }, 3},
		{"status sent", func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }, 3},
		{"target revision", func(d *gitops.GitOpsDeployment) { d.Spec.Source.TargetRevision = "v2" }, 4},
		{"sync options", func(d *gitops.GitOpsDeployment) {
			d.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue}}
		}, 4},
		{"manual", func(d *gitops.GitOpsDeployment) { d.Spec.Type = gitops.GitOpsDeploymentSpecTypeManual }, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(validation.Options{})
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
		mutate func(*gitops.GitOpsDeployment)
	}{
		{"status written", func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }},
		{"spec sent", func(d *gitops.GitOpsDeployment) { d.Spec.Source.Path = "other"; d.Status = otherStatus }},
		{"finalizers sent", func(d *gitops.GitOpsDeployment) { d.Finalizers = []string{gitops.GitOpsDeploymentFinalizer} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, status := strategies(validation.Options{})
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
	fileRepo := func(d *gitops.GitOpsDeployment) { d.Spec.Source.RepoURL = "file:///repos/app" }
	cases := []struct {
		name   string
		opts   validation.Options
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"valid", validation.Options{}, func(*gitops.GitOpsDeployment) {}, nil},
		{"this cluster", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination = gitops.ApplicationDestination{} }, nil},
		{"no path", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Source.Path = "" },
			[]apitesting.Want{apitesting.Required("spec.source.path")}},
		{"no type", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Type = "" }, []apitesting.Want{apitesting.Required("spec.type")}},
		{"cluster without namespace", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination.Namespace = "" },
			[]apitesting.Want{apitesting.Required("spec.destination.namespace")}},
		// The server's options reach the kind's validation.
		{"file repository", validation.Options{}, fileRepo, []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{"file repository, allowed", validation.Options{AllowFileRepositories: true}, fileRepo, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(tc.opts)
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, s.Validate(context.Background(), obj), tc.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	fileRepo := func(d *gitops.GitOpsDeployment) { d.Spec.Source.RepoURL = "file:///repos/app" }
	cases := []struct {
		name   string
		opts   validation.Options
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"unchanged", validation.Options{}, func(*gitops.GitOpsDeployment) {}, nil},
		// Every field of a GitOpsDeployment's spec may change.
		{"source and destination", validation.Options{}, func(d *gitops.GitOpsDeployment) {
			d.Spec.Source = gitops.ApplicationSource{RepoURL: "git@github.com:org/other.git", Path: "x", TargetRevision: "main"}
			d.Spec.Destination = gitops.ApplicationDestination{Namespace: "jane"}
		}, nil},
		{"other namespace on this cluster", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination.Environment = "" },
			[]apitesting.Want{apitesting.Invalid("spec.destination.namespace")}},
		{"file repository", validation.Options{}, fileRepo, []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{"file repository, allowed", validation.Options{AllowFileRepositories: true}, fileRepo, nil},
		{"renamed", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(tc.opts)
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
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"valid", func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }, nil},
		{"spec changed", func(d *gitops.GitOpsDeployment) { d.Spec.Type = "" }, nil},
		{"unknown sync status", func(d *gitops.GitOpsDeployment) { d.Status.Sync.Status = "InSync" },
			[]apitesting.Want{apitesting.NotSupported("status.sync.status")}},
		{"condition without status", func(d *gitops.GitOpsDeployment) {
			d.Status = otherStatus
			d.Status.Conditions[0].Status = ""
		}, []apitesting.Want{apitesting.Required("status.conditions[0].status")}},
		{"renamed", func(d *gitops.GitOpsDeployment) { d.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, status := strategies(validation.Options{})
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
		obj  *gitops.GitOpsDeployment
		want fields.Set
	}{
		{"full", stored(), fields.Set{
			"spec.type": "automated", "spec.source.repoURL": "https://github.com/org/repo",
			"spec.destination.environment": "my-cluster", "spec.destination.namespace": "prod",
			"status.sync.status": "Synced", "status.health.status": "Healthy",
		}},
		{"empty", &gitops.GitOpsDeployment{}, fields.Set{
			"spec.type": "", "spec.source.repoURL": "", "spec.destination.environment": "", "spec.destination.namespace": "",
			"status.sync.status": "", "status.health.status": "",
		}},
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
		mutate func(*gitops.GitOpsDeployment)
		want   []interface{}
	}{
		{"synced", func(*gitops.GitOpsDeployment) {},
			[]interface{}{"app", "Synced", "Healthy", "automated", "https://github.com/org/repo", "environments/overlays/dev", "my-cluster", "<unknown>"}},
		{"new, on this cluster", func(d *gitops.GitOpsDeployment) {
			d.Status = gitops.GitOpsDeploymentStatus{}
			d.Spec.Destination = gitops.ApplicationDestination{}
		}, []interface{}{"app", "", "", "automated", "https://github.com/org/repo", "environments/overlays/dev", "", "<unknown>"}},
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
	r, status, err := NewREST(scheme, noStorage{}, validation.Options{})
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
	// The server's options reach the storage's strategy.
	fileRepo := stored()
	fileRepo.Spec.Source.RepoURL = "file:///repos/app"
	strict, _, err := NewREST(scheme, noStorage{}, validation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lenient, _, err := NewREST(scheme, noStorage{}, validation.Options{AllowFileRepositories: true})
	if err != nil {
		t.Fatal(err)
	}
	v1alpha1 := fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1")
	cases := []struct {
		name      string
		got, want interface{}
	}{
		{"resource", r.DefaultQualifiedResource, gitops.Resource("gitopsdeployments")},
		{"singular", r.SingularQualifiedResource, gitops.Resource("gitopsdeployment")},
		{"new", fmt.Sprintf("%T", r.New()), "*managedgitops.GitOpsDeployment"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*managedgitops.GitOpsDeploymentList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "app", "metadata.namespace": "jane",
			"spec.type": "automated", "spec.source.repoURL": "https://github.com/org/repo",
			"spec.destination.environment": "my-cluster", "spec.destination.namespace": "prod",
			"status.sync.status": "Synced", "status.health.status": "Healthy"}},
		{"columns", headers, []string{"Name", "Sync Status", "Health Status", "Type (wide)", "Repository (wide)", "Path (wide)", "Environment (wide)", "Age"}},
		{"reset fields", r.GetResetFields()[v1alpha1].String(), fieldpath.NewSet(fieldpath.MakePathOrDie("status")).String()},
		{"/status reset fields", status.GetResetFields()[v1alpha1].String(), fieldpath.NewSet(strategy.StatusResetPaths()...).String()},
		{"file repository refused", len(strict.CreateStrategy.Validate(context.Background(), fileRepo)), 1},
		{"file repository allowed", len(lenient.CreateStrategy.Validate(context.Background(), fileRepo)), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
