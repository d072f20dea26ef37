package component

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, appstudio.ComponentStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.ComponentStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid Component as stored: at generation 3, with a status.
func stored() *appstudio.Component {
	return &appstudio.Component{
		ObjectMeta: metav1.ObjectMeta{Name: "component-a", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.ComponentSpec{
			ComponentName: "component-a",
			Application:   "new-demo-app",
			Source:        appstudio.ComponentSource{GitSource: &appstudio.GitSource{URL: "https://github.com/org/a", Revision: "main"}},
			Replicas:      ptr.To[int32](1),
			Env:           []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}},
		},
		Status: appstudio.ComponentStatus{
			Conditions: []metav1.Condition{
				{Type: "Created", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now},
				{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionFalse, Reason: "GenerateError", LastTransitionTime: now},
			},
			ContainerImage: "quay.io/org/a:latest",
		},
	}
}

var otherStatus = appstudio.ComponentStatus{
	Conditions:      []metav1.Condition{{Type: "Created", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: now}},
	LastBuiltCommit: "41fbdb124775323f58fd5ce93c70bb7d79c20650",
	BuildNudgedBy:   []string{"component-b"},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Component]{
		{Name: "status sent", Mutate: func(*appstudio.Component) {}},
		{Name: "generation sent", Mutate: func(c *appstudio.Component) { c.Generation = 9; c.Status = appstudio.ComponentStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.Component]{
		{Name: "unchanged", Mutate: func(*appstudio.Component) {}, Want: 3},
		{Name: "label added", Mutate: func(c *appstudio.Component) { c.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(c *appstudio.Component) { c.Status = otherStatus }, Want: 3},
		{Name: "replicas", Mutate: func(c *appstudio.Component) { c.Spec.Replicas = ptr.To[int32](2) }, Want: 4},
		{Name: "nudges", Mutate: func(c *appstudio.Component) { c.Spec.BuildNudgesRef = []string{"component-b"} }, Want: 4},
		// Refused by validation, but the generation is decided first.
		{Name: "application", Mutate: func(c *appstudio.Component) { c.Spec.Application = "other-app" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Component]{
		{Name: "status written", Mutate: func(c *appstudio.Component) { c.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(c *appstudio.Component) { c.Spec.Replicas = nil; c.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(c *appstudio.Component) { c.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Component]{
		{Name: "valid", Mutate: func(*appstudio.Component) {}},
		{Name: "image only", Mutate: func(c *appstudio.Component) {
			c.Spec.Source.GitSource = nil
			c.Spec.ContainerImage = "quay.io/org/a:v1"
		}},
		{Name: "neither Git nor image", Mutate: func(c *appstudio.Component) { c.Spec.Source.GitSource = nil },
			Want: []apitesting.Want{apitesting.Required("spec.source")}},
		{Name: "no application", Mutate: func(c *appstudio.Component) { c.Spec.Application = "" },
			Want: []apitesting.Want{apitesting.Required("spec.application")}},
		{Name: "nudges itself", Mutate: func(c *appstudio.Component) { c.Spec.BuildNudgesRef = []string{"component-a"} },
			Want: []apitesting.Want{apitesting.Invalid("spec.build-nudges-ref[0]")}},
		{Name: "DNS-1123 but not DNS-1035 name", Mutate: func(c *appstudio.Component) { c.Name = "1st-component" },
			Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "no namespace", Mutate: func(c *appstudio.Component) { c.Namespace = "" }, Want: []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Component]{
		{Name: "unchanged", Mutate: func(*appstudio.Component) {}},
		{Name: "revision, replicas and nudges", Mutate: func(c *appstudio.Component) {
			c.Spec.Source.GitSource.Revision = "devel"
			c.Spec.Replicas = ptr.To[int32](3)
			c.Spec.BuildNudgesRef = []string{"component-b"}
		}},
		{Name: "component name", Mutate: func(c *appstudio.Component) { c.Spec.ComponentName = "component-b" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.componentName")}},
		{Name: "application", Mutate: func(c *appstudio.Component) { c.Spec.Application = "other-app" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.application")}},
		{Name: "Git URL", Mutate: func(c *appstudio.Component) { c.Spec.Source.GitSource.URL = "https://github.com/org/b" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.source.git.url")}},
		{Name: "renamed", Mutate: func(c *appstudio.Component) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Component]{
		{Name: "valid", Mutate: func(c *appstudio.Component) { c.Status = otherStatus }},
		// The spec is not judged by a status write, nor changed by it.
		{Name: "spec changed", Mutate: func(c *appstudio.Component) { c.Spec.Application = "" }},
		{Name: "repeated condition", Mutate: func(c *appstudio.Component) {
			c.Status.Conditions = append(c.Status.Conditions, c.Status.Conditions[0])
		}, Want: []apitesting.Want{apitesting.Duplicate("status.conditions[2].type")}},
		{Name: "renamed", Mutate: func(c *appstudio.Component) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.Component]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.application": "new-demo-app"}},
		{Name: "empty", Obj: &appstudio.Component{}, Want: fields.Set{"spec.application": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.Component]{
		// The last condition, as the CRD's .status.conditions[-1].
		{Name: "Git", Mutate: func(*appstudio.Component) {},
			Want: []interface{}{"component-a", "new-demo-app", "False", "GenerateError", "GitOpsResourcesGenerated", "https://github.com/org/a", "<unknown>"}},
		{Name: "image, no status", Mutate: func(c *appstudio.Component) {
			c.Spec.Source.GitSource = nil
			c.Spec.ContainerImage = "quay.io/org/a:v1"
			c.Status = appstudio.ComponentStatus{}
		}, Want: []interface{}{"component-a", "new-demo-app", "", "", "", "quay.io/org/a:v1", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("components"),
		Singular:       appstudio.Resource("component"),
		New:            "*appstudio.Component",
		NewList:        "*appstudio.ComponentList",
		Namespaced:     true,
		ShortNames:     []string{"hascmp", "hc", "comp"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "component-a", "metadata.namespace": "jane", "spec.application": "new-demo-app"},
		Columns:        []string{"Name", "Application", "Status", "Reason", "Type", "Source (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:         true,
	})
}
