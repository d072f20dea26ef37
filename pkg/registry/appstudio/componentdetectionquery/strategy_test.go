package componentdetectionquery

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
var testKind = registrytest.Kind[object, appstudio.ComponentDetectionQueryStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.ComponentDetectionQueryStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid ComponentDetectionQuery as stored: at generation 3, with a status.
func stored() *appstudio.ComponentDetectionQuery {
	return &appstudio.ComponentDetectionQuery{
		ObjectMeta: metav1.ObjectMeta{Name: "detect", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.ComponentDetectionQuerySpec{GitSource: appstudio.GitSource{URL: "https://github.com/org/a"}},
		Status: appstudio.ComponentDetectionQueryStatus{
			Conditions: []metav1.Condition{
				{Type: "Processing", Status: metav1.ConditionTrue, Reason: "Success", LastTransitionTime: now},
				{Type: "Completed", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now},
			},
			ComponentDetected: appstudio.ComponentDetectionMap{"a": {Language: "Python", DevfileFound: true,
				ComponentStub: appstudio.ComponentSpec{ComponentName: "a", Application: "insert-application-name"}}},
		},
	}
}

var otherStatus = appstudio.ComponentDetectionQueryStatus{
	Conditions: []metav1.Condition{{Type: "Completed", Status: metav1.ConditionFalse, Reason: "Error", LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.ComponentDetectionQuery]{
		{Name: "status sent", Mutate: func(*appstudio.ComponentDetectionQuery) {}},
		{Name: "generation sent", Mutate: func(q *appstudio.ComponentDetectionQuery) {
			q.Generation = 9
			q.Status = appstudio.ComponentDetectionQueryStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.ComponentDetectionQuery]{
		{Name: "unchanged", Mutate: func(*appstudio.ComponentDetectionQuery) {}, Want: 3},
		{Name: "label added", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Status = otherStatus }, Want: 3},
		{Name: "revision", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Spec.GitSource.Revision = "devel" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.ComponentDetectionQuery]{
		{Name: "status written", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Spec.Secret = "token"; q.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.ComponentDetectionQuery]{
		{Name: "valid", Mutate: func(*appstudio.ComponentDetectionQuery) {}},
		{Name: "no URL", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Spec.GitSource.URL = "" },
			Want: []apitesting.Want{apitesting.Required("spec.git.url")}},
		{Name: "no namespace", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Namespace = "" },
			Want: []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.ComponentDetectionQuery]{
		{Name: "unchanged", Mutate: func(*appstudio.ComponentDetectionQuery) {}},
		{Name: "no URL", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Spec.GitSource.URL = "" },
			Want: []apitesting.Want{apitesting.Required("spec.git.url")}},
		{Name: "renamed", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Name = "other" },
			Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.ComponentDetectionQuery]{
		{Name: "valid", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Status = otherStatus }},
		// The spec is not judged by a status write, nor changed by it.
		{Name: "spec changed", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Spec.GitSource.URL = "" }},
		{Name: "repeated condition", Mutate: func(q *appstudio.ComponentDetectionQuery) {
			q.Status.Conditions = append(q.Status.Conditions, q.Status.Conditions[0])
		}, Want: []apitesting.Want{apitesting.Duplicate("status.conditions[2].type")}},
		{Name: "renamed", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Name = "other" },
			Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.ComponentDetectionQuery]{
		// The last condition, as the CRD's .status.conditions[-1].
		{Name: "completed", Mutate: func(*appstudio.ComponentDetectionQuery) {},
			Want: []interface{}{"detect", "True", "OK", "Completed", "https://github.com/org/a", "<unknown>"}},
		{Name: "no status", Mutate: func(q *appstudio.ComponentDetectionQuery) { q.Status = appstudio.ComponentDetectionQueryStatus{} },
			Want: []interface{}{"detect", "", "", "", "https://github.com/org/a", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("componentdetectionqueries"),
		Singular:       appstudio.Resource("componentdetectionquery"),
		New:            "*appstudio.ComponentDetectionQuery",
		NewList:        "*appstudio.ComponentDetectionQueryList",
		Namespaced:     true,
		ShortNames:     []string{"hcdq", "compdetection"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "detect", "metadata.namespace": "jane"},
		Columns:        []string{"Name", "Status", "Reason", "Type", "Repository (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:         true,
	})
}
