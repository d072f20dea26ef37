package application

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, appstudio.ApplicationStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.ApplicationStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid Application as stored: at generation 3, with a status.
func stored() *appstudio.Application {
	return &appstudio.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "new-demo-app", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.ApplicationSpec{
			DisplayName:      "New demo app",
			GitOpsRepository: appstudio.ApplicationGitRepository{URL: "https://github.com/org/gitops", Branch: "main"},
		},
		Status: appstudio.ApplicationStatus{Conditions: []metav1.Condition{
			{Type: "Created", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now},
			{Type: "Updated", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now},
		}},
	}
}

var otherStatus = appstudio.ApplicationStatus{
	Conditions: []metav1.Condition{{Type: "Created", Status: metav1.ConditionFalse, Reason: "Error", LastTransitionTime: now}},
	Devfile:    "schemaVersion: 2.2.0",
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Application]{
		{Name: "status sent", Mutate: func(*appstudio.Application) {}},
		{Name: "generation sent", Mutate: func(a *appstudio.Application) { a.Generation = 9; a.Status = appstudio.ApplicationStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.Application]{
		{Name: "unchanged", Mutate: func(*appstudio.Application) {}, Want: 3},
		{Name: "label added", Mutate: func(a *appstudio.Application) { a.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(a *appstudio.Application) { a.Status = otherStatus }, Want: 3},
		{Name: "display name", Mutate: func(a *appstudio.Application) { a.Spec.DisplayName = "Renamed" }, Want: 4},
		// Refused by validation, but the generation is decided first.
		{Name: "repository", Mutate: func(a *appstudio.Application) { a.Spec.GitOpsRepository.URL = "https://github.com/org/x" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Application]{
		{Name: "status written", Mutate: func(a *appstudio.Application) { a.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(a *appstudio.Application) { a.Spec.DisplayName = ""; a.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(a *appstudio.Application) { a.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Application]{
		{Name: "valid", Mutate: func(*appstudio.Application) {}},
		{Name: "no display name", Mutate: func(a *appstudio.Application) { a.Spec.DisplayName = "" },
			Want: []apitesting.Want{apitesting.Required("spec.displayName")}},
		{Name: "DNS-1123 but not DNS-1035 name", Mutate: func(a *appstudio.Application) { a.Name = "1st-app" },
			Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "no namespace", Mutate: func(a *appstudio.Application) { a.Namespace = "" }, Want: []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Application]{
		{Name: "unchanged", Mutate: func(*appstudio.Application) {}},
		{Name: "display name and description", Mutate: func(a *appstudio.Application) {
			a.Spec.DisplayName = "Renamed"
			a.Spec.Description = "described"
		}},
		{Name: "gitops repository", Mutate: func(a *appstudio.Application) { a.Spec.GitOpsRepository.Context = "apps" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.gitOpsRepository")}},
		{Name: "app model repository", Mutate: func(a *appstudio.Application) { a.Spec.AppModelRepository.URL = "https://github.com/org/m" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.appModelRepository")}},
		{Name: "renamed", Mutate: func(a *appstudio.Application) { a.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Application]{
		{Name: "valid", Mutate: func(a *appstudio.Application) { a.Status = otherStatus }},
		// The spec is not judged by a status write, nor changed by it.
		{Name: "spec changed", Mutate: func(a *appstudio.Application) { a.Spec.GitOpsRepository.URL = "" }},
		{Name: "repeated condition", Mutate: func(a *appstudio.Application) {
			a.Status.Conditions = append(a.Status.Conditions, a.Status.Conditions[0])
		}, Want: []apitesting.Want{apitesting.Duplicate("status.conditions[2].type")}},
		{Name: "renamed", Mutate: func(a *appstudio.Application) { a.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.Application]{
		// The last condition, as the CRD's .status.conditions[-1].
		{Name: "conditions", Mutate: func(a *appstudio.Application) { a.Status.Conditions[1].Reason = "Updated" },
			Want: []interface{}{"new-demo-app", "True", "Updated", "New demo app", "<unknown>"}},
		{Name: "no status", Mutate: func(a *appstudio.Application) { a.Status = appstudio.ApplicationStatus{} },
			Want: []interface{}{"new-demo-app", "", "", "New demo app", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("applications"),
		Singular:       appstudio.Resource("application"),
		New:            "*appstudio.Application",
		NewList:        "*appstudio.ApplicationList",
		Namespaced:     true,
		ShortNames:     []string{"hasapp", "ha", "app"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "new-demo-app", "metadata.namespace": "jane"},
		Columns:        []string{"Name", "Status", "Reason", "Display Name (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:         true,
	})
}
