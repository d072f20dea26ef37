package gitopsdeploymentrepositorycredential

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

// stored is a valid GitOpsDeploymentRepositoryCredential as stored: at generation 3, checked.
func stored() *gitops.GitOpsDeploymentRepositoryCredential {
	return &gitops.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "private-repo-creds", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.RepositoryCredentialSpec{
			Repository: "https://github.com/org/private-app",
			Secret:     "private-repo-secret",
		},
		Status: gitops.RepositoryCredentialStatus{Conditions: []metav1.Condition{{
			Type: gitops.RepositoryCredentialConditionValidRepositoryCredential, Status: metav1.ConditionTrue,
			Reason: gitops.RepositoryCredentialReasonRepositoryCredentialUpToDate, LastTransitionTime: now,
		}}},
	}
}

var otherStatus = gitops.RepositoryCredentialStatus{Conditions: []metav1.Condition{{
	Type: gitops.RepositoryCredentialConditionValidRepositoryCredential, Status: metav1.ConditionFalse,
	Reason: gitops.RepositoryCredentialReasonInvalidCredentials, LastTransitionTime: now,
}}}

func TestPrepareForCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
	}{
		// A client cannot create credentials that claim to have been checked.
		{"status sent", func(*gitops.GitOpsDeploymentRepositoryCredential) {}},
		{"generation sent", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Generation = 9
			c.Status = gitops.RepositoryCredentialStatus{}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies()
			obj := stored()
			tc.mutate(obj)
			want := obj.DeepCopy()
			want.Status = gitops.RepositoryCredentialStatus{}
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
		// want is the generation after the update; the stored one is 3.
		want int64
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentRepositoryCredential) {}, 3},
		{"label added", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Labels["tier"] = "gold" }, 3},
		{"status sent", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }, 3},
		{"secret", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "rotated" }, 4},
		{"repository", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "https://github.com/org/other"
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
	}{
		{"status written", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }},
		{"spec sent", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "other"; c.Status = otherStatus }},
		{"labels sent", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Labels = nil }},
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.GitOpsDeploymentRepositoryCredential) {}, nil},
		{"ssh", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "ssh://git@github.com/org/private-app.git"
		}, nil},
		// Credentials are only ever sent over https or ssh.
		{"http", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "http://github.com/org/private-app"
		},
			[]apitesting.Want{apitesting.Invalid("spec.repository")}},
		{"no repository", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Repository = "" },
			[]apitesting.Want{apitesting.Required("spec.repository")}},
		{"no secret", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "" },
			[]apitesting.Want{apitesting.Required("spec.secret")}},
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
		want   []apitesting.Want
	}{
		{"unchanged", func(*gitops.GitOpsDeploymentRepositoryCredential) {}, nil},
		{"repository and secret", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "https://github.com/org/other"
			c.Spec.Secret = "rotated"
		}, nil},
		{"invalid secret", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "Rotated" },
			[]apitesting.Want{apitesting.Invalid("spec.secret")}},
		{"renamed", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
		want   []apitesting.Want
	}{
		{"valid", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }, nil},
		{"spec changed", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "" }, nil},
		{"condition without transition time", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Status.Conditions[0].LastTransitionTime = metav1.Time{}
		}, []apitesting.Want{apitesting.Required("status.conditions[0].lastTransitionTime")}},
		{"renamed", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
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
		obj  *gitops.GitOpsDeploymentRepositoryCredential
		want fields.Set
	}{
		{"full", stored(), fields.Set{"spec.repository": "https://github.com/org/private-app", "spec.secret": "private-repo-secret"}},
		{"empty", &gitops.GitOpsDeploymentRepositoryCredential{}, fields.Set{"spec.repository": "", "spec.secret": ""}},
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
		mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
		want   []interface{}
	}{
		{"valid", func(*gitops.GitOpsDeploymentRepositoryCredential) {},
			[]interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "True", "<unknown>"}},
		{"invalid", func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus },
			[]interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "False", "<unknown>"}},
		// Only the credential condition answers the column: a valid URL is not valid credentials.
		{"only the URL checked", func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Status.Conditions[0].Type = gitops.RepositoryCredentialConditionValidRepositoryURL
		}, []interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "", "<unknown>"}},
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
		{"resource", r.DefaultQualifiedResource, gitops.Resource("gitopsdeploymentrepositorycredentials")},
		{"singular", r.SingularQualifiedResource, gitops.Resource("gitopsdeploymentrepositorycredential")},
		{"new", fmt.Sprintf("%T", r.New()), "*managedgitops.GitOpsDeploymentRepositoryCredential"},
		{"new list", fmt.Sprintf("%T", r.NewList()), "*managedgitops.GitOpsDeploymentRepositoryCredentialList"},
		{"namespaced", r.NamespaceScoped(), true},
		{"short names", r.ShortNames(), []string(nil)},
		{"categories", r.Categories(), []string{"gitops"}},
		{"field selectors", attrs, fields.Set{"metadata.name": "private-repo-creds", "metadata.namespace": "jane",
			"spec.repository": "https://github.com/org/private-app", "spec.secret": "private-repo-secret"}},
		{"columns", headers, []string{"Name", "Repository", "Secret", "Valid", "Age"}},
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
