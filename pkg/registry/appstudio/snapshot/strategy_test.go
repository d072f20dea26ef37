package snapshot

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
var testKind = registrytest.Kind[object, appstudio.SnapshotStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.SnapshotStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid Snapshot as stored: at generation 3, with a status.
func stored() *appstudio.Snapshot {
	return &appstudio.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "my-snapshot", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.SnapshotSpec{
			Application: "new-demo-app",
			DisplayName: "Good snapshot",
			Components: []appstudio.SnapshotComponent{
				{Name: "component-a", ContainerImage: "quay.io/org/a:v1"},
				{Name: "component-b", ContainerImage: "quay.io/org/b:v1",
					Source: appstudio.ComponentSource{GitSource: &appstudio.GitSource{URL: "https://github.com/org/b", Revision: "main"}}},
			},
		},
		Status: appstudio.SnapshotStatus{Conditions: []metav1.Condition{
			{Type: "AppStudioTestSucceeded", Status: metav1.ConditionTrue, Reason: "Passed", LastTransitionTime: now},
		}},
	}
}

var otherStatus = appstudio.SnapshotStatus{Conditions: []metav1.Condition{
	{Type: "AppStudioTestSucceeded", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: now},
}}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Snapshot]{
		{Name: "status sent", Mutate: func(*appstudio.Snapshot) {}},
		{Name: "generation sent", Mutate: func(s *appstudio.Snapshot) { s.Generation = 9; s.Status = appstudio.SnapshotStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.Snapshot]{
		{Name: "unchanged", Mutate: func(*appstudio.Snapshot) {}, Want: 3},
		{Name: "label added", Mutate: func(s *appstudio.Snapshot) { s.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(s *appstudio.Snapshot) { s.Status = otherStatus }, Want: 3},
		{Name: "display name", Mutate: func(s *appstudio.Snapshot) { s.Spec.DisplayName = "Better snapshot" }, Want: 4},
		{Name: "artifacts", Mutate: func(s *appstudio.Snapshot) {
			s.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{"sbom":["a"]}`)}
		}, Want: 4},
		// Refused by validation, but the generation is decided first.
		{Name: "image", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "quay.io/org/a:v2" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Snapshot]{
		{Name: "status written", Mutate: func(s *appstudio.Snapshot) { s.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components = nil; s.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(s *appstudio.Snapshot) { s.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Snapshot]{
		{Name: "valid", Mutate: func(*appstudio.Snapshot) {}},
		{Name: "no components", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components = nil }},
		{Name: "no application", Mutate: func(s *appstudio.Snapshot) { s.Spec.Application = "" }, Want: []apitesting.Want{apitesting.Required("spec.application")}},
		{Name: "repeated component", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components[1].Name = "component-a" },
			Want: []apitesting.Want{apitesting.Duplicate("spec.components[1].name")}},
		{Name: "component without image", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "" },
			Want: []apitesting.Want{apitesting.Required("spec.components[0].containerImage")}},
		{Name: "no namespace", Mutate: func(s *appstudio.Snapshot) { s.Namespace = "" }, Want: []apitesting.Want{apitesting.Required("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Snapshot]{
		{Name: "unchanged", Mutate: func(*appstudio.Snapshot) {}},
		// What a Snapshot captured never changes; how it is shown may.
		{Name: "display fields and artifacts", Mutate: func(s *appstudio.Snapshot) {
			s.Spec.DisplayName = "Better snapshot"
			s.Spec.DisplayDescription = "described"
			s.Spec.Artifacts.UnstableFields = &runtime.RawExtension{Raw: []byte(`{}`)}
		}},
		{Name: "application", Mutate: func(s *appstudio.Snapshot) { s.Spec.Application = "other-app" }, Want: []apitesting.Want{apitesting.Invalid("spec.application")}},
		{Name: "image", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components[0].ContainerImage = "quay.io/org/a:v2" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{Name: "git revision", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components[1].Source.GitSource.Revision = "dev" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{Name: "component removed", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components = s.Spec.Components[:1] },
			Want: []apitesting.Want{apitesting.Forbidden("spec.components")}},
		{Name: "renamed", Mutate: func(s *appstudio.Snapshot) { s.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Snapshot]{
		{Name: "valid", Mutate: func(s *appstudio.Snapshot) { s.Status = otherStatus }},
		// The spec is not judged by a status write, nor changed by it.
		{Name: "spec changed", Mutate: func(s *appstudio.Snapshot) { s.Spec.Application = "" }},
		{Name: "repeated condition", Mutate: func(s *appstudio.Snapshot) {
			s.Status.Conditions = append(s.Status.Conditions, s.Status.Conditions[0])
		}, Want: []apitesting.Want{apitesting.Duplicate("status.conditions[1].type")}},
		{Name: "renamed", Mutate: func(s *appstudio.Snapshot) { s.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.Snapshot]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.application": "new-demo-app"}},
		{Name: "empty", Obj: &appstudio.Snapshot{}, Want: fields.Set{"spec.application": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.Snapshot]{
		{Name: "two components", Mutate: func(*appstudio.Snapshot) {}, Want: []interface{}{"my-snapshot", "new-demo-app", int64(2), "Good snapshot", "<unknown>"}},
		{Name: "none", Mutate: func(s *appstudio.Snapshot) { s.Spec.Components = nil; s.Spec.DisplayName = "" },
			Want: []interface{}{"my-snapshot", "new-demo-app", int64(0), "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("snapshots"),
		Singular:       appstudio.Resource("snapshot"),
		New:            "*appstudio.Snapshot",
		NewList:        "*appstudio.SnapshotList",
		Namespaced:     true,
		ShortNames:     []string{"as", "snapshot"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "my-snapshot", "metadata.namespace": "jane", "spec.application": "new-demo-app"},
		Columns:        []string{"Name", "Application", "Components", "Display Name (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:         true,
	})
}
