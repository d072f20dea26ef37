package snapshotenvironmentbinding

import (
	"testing"

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
var testKind = registrytest.Kind[object, appstudio.SnapshotEnvironmentBindingStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.SnapshotEnvironmentBindingStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid SnapshotEnvironmentBinding as stored: at generation 3, with a status.
func stored() *appstudio.SnapshotEnvironmentBinding {
	return &appstudio.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "appa-staging-binding", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.SnapshotEnvironmentBindingSpec{
			Application: "new-demo-app",
			Environment: "staging",
			Snapshot:    "my-snapshot",
			Components: []appstudio.BindingComponent{
				{Name: "component-a", Configuration: appstudio.BindingComponentConfiguration{Replicas: ptr.To[int32](3)}},
			},
		},
		Status: appstudio.SnapshotEnvironmentBindingStatus{
			GitOpsDeployments: []appstudio.BindingStatusGitOpsDeployment{{ComponentName: "component-a", GitOpsDeployment: "appa-staging-component-a"}},
			ComponentDeploymentConditions: []metav1.Condition{{Type: appstudio.ComponentDeploymentConditionAllComponentsDeployed,
				Status: metav1.ConditionTrue, Reason: appstudio.ComponentDeploymentConditionCommitsSynced, Message: "1 of 1 components deployed",
				LastTransitionTime: now}},
		},
	}
}

var otherStatus = appstudio.SnapshotEnvironmentBindingStatus{
	BindingConditions: []metav1.Condition{{Type: appstudio.BindingConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: appstudio.BindingReasonErrorOccurred, LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "status sent", Mutate: func(*appstudio.SnapshotEnvironmentBinding) {}},
		{Name: "generation sent", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Generation = 9
			b.Status = appstudio.SnapshotEnvironmentBindingStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "unchanged", Mutate: func(*appstudio.SnapshotEnvironmentBinding) {}, Want: 3},
		{Name: "label added", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }, Want: 3},
		// A new snapshot is the binding's usual change: the controllers must see it.
		{Name: "snapshot", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "next-snapshot" }, Want: 4},
		{Name: "replicas", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Components[0].Configuration.Replicas = ptr.To[int32](1)
		}, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "status written", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Snapshot = "next-snapshot"
			b.Status = otherStatus
		}},
		{Name: "labels sent", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "valid", Mutate: func(*appstudio.SnapshotEnvironmentBinding) {}},
		{Name: "no application", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "" },
			Want: []apitesting.Want{apitesting.Required("spec.application")}},
		{Name: "environment not a DNS label", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Environment = "staging.a" },
			Want: []apitesting.Want{apitesting.Invalid("spec.environment")}},
		{Name: "no snapshot", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "" },
			Want: []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{Name: "negative replicas", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Components[0].Configuration.Replicas = ptr.To[int32](-1)
		}, Want: []apitesting.Want{apitesting.Invalid("spec.components[0].configuration.replicas")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "unchanged", Mutate: func(*appstudio.SnapshotEnvironmentBinding) {}},
		{Name: "snapshot and components", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) {
			b.Spec.Snapshot = "next-snapshot"
			b.Spec.Components = append(b.Spec.Components, appstudio.BindingComponent{Name: "component-b"})
		}},
		// The unique index of application and environment relies on both staying as created.
		{Name: "application", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "other-app" },
			Want: []apitesting.Want{apitesting.Invalid("spec.application")}},
		{Name: "environment", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Environment = "prod" },
			Want: []apitesting.Want{apitesting.Invalid("spec.environment")}},
		{Name: "spec rules still apply", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Snapshot = "" },
			Want: []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{Name: "renamed", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "valid", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Spec.Application = "" }},
		{Name: "deployment without component", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.GitOpsDeployments[0].ComponentName = "" },
			Want: []apitesting.Want{apitesting.Required("status.gitopsDeployments[0].componentName")}},
		{Name: "condition without reason", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status.ComponentDeploymentConditions[0].Reason = "" },
			Want: []apitesting.Want{apitesting.Required("status.componentDeploymentConditions[0].reason")}},
		{Name: "renamed", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.application": "new-demo-app", "spec.environment": "staging", "spec.snapshot": "my-snapshot"}},
		{Name: "empty", Obj: &appstudio.SnapshotEnvironmentBinding{}, Want: fields.Set{"spec.application": "", "spec.environment": "", "spec.snapshot": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.SnapshotEnvironmentBinding]{
		{Name: "deployed", Mutate: func(*appstudio.SnapshotEnvironmentBinding) {},
			Want: []interface{}{"appa-staging-binding", "new-demo-app", "staging", "my-snapshot", "1 of 1 components deployed", "<unknown>"}},
		{Name: "not reported yet", Mutate: func(b *appstudio.SnapshotEnvironmentBinding) { b.Status = otherStatus },
			Want: []interface{}{"appa-staging-binding", "new-demo-app", "staging", "my-snapshot", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("snapshotenvironmentbindings"),
		Singular:   appstudio.Resource("snapshotenvironmentbinding"),
		New:        "*appstudio.SnapshotEnvironmentBinding",
		NewList:    "*appstudio.SnapshotEnvironmentBindingList",
		Namespaced: true,
		ShortNames: []string{"aseb", "binding"},
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "appa-staging-binding", "metadata.namespace": "jane",
			"spec.application": "new-demo-app", "spec.environment": "staging", "spec.snapshot": "my-snapshot"},
		Columns:    []string{"Name", "Application", "Environment", "Snapshot", "Deployed", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:     true,
	})
}
