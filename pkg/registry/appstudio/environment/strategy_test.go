package environment

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
var testKind = registrytest.Kind[object, appstudio.EnvironmentStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.EnvironmentStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid Environment as stored: at generation 3, with a status.
func stored() *appstudio.Environment {
	return &appstudio.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.EnvironmentSpec{
			DisplayName:        "Staging for Team A",
			DeploymentStrategy: appstudio.DeploymentStrategyAppStudioAutomated,
			ParentEnvironment:  "dev",
			Configuration: appstudio.EnvironmentConfiguration{
				Target: appstudio.EnvironmentTarget{DeploymentTargetClaim: appstudio.DeploymentTargetClaimConfig{ClaimName: "staging-dtc"}},
			},
		},
		Status: appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
			{Type: appstudio.EnvironmentConditionReconciled, Status: metav1.ConditionTrue, Reason: "Reconciled", LastTransitionTime: now},
		}},
	}
}

var otherStatus = appstudio.EnvironmentStatus{Conditions: []metav1.Condition{
	{Type: appstudio.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue, Reason: "ErrorOccurred", LastTransitionTime: now},
}}

func withCredentials(e *appstudio.Environment) {
	e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = ""
	e.Spec.UnstableConfigurationFields = &appstudio.UnstableEnvironmentConfiguration{
		ClusterType: appstudio.ConfigurationClusterTypeOpenShift,
		KubernetesClusterCredentials: appstudio.KubernetesClusterCredentials{
			TargetNamespace:          "my-namespace",
			APIURL:                   "https://api.example.com:6443",
			ClusterCredentialsSecret: "cluster-secret",
		},
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Environment]{
		{Name: "status sent", Mutate: func(*appstudio.Environment) {}},
		{Name: "generation sent", Mutate: func(e *appstudio.Environment) { e.Generation = 9; e.Status = appstudio.EnvironmentStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.Environment]{
		{Name: "unchanged", Mutate: func(*appstudio.Environment) {}, Want: 3},
		{Name: "label added", Mutate: func(e *appstudio.Environment) { e.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(e *appstudio.Environment) { e.Status = otherStatus }, Want: 3},
		{Name: "display name", Mutate: func(e *appstudio.Environment) { e.Spec.DisplayName = "Staging" }, Want: 4},
		{Name: "deployment strategy", Mutate: func(e *appstudio.Environment) { e.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual }, Want: 4},
		{Name: "env var", Mutate: func(e *appstudio.Environment) {
			e.Spec.Configuration.Env = []appstudio.EnvVarPair{{Name: "A", Value: "1"}}
		}, Want: 4},
		{Name: "claim to credentials", Mutate: withCredentials, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.Environment]{
		{Name: "status written", Mutate: func(e *appstudio.Environment) { e.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(e *appstudio.Environment) { e.Spec.DisplayName = "Staging"; e.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(e *appstudio.Environment) { e.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Environment]{
		{Name: "valid", Mutate: func(*appstudio.Environment) {}},
		{Name: "valid with credentials", Mutate: withCredentials},
		// Environment names become part of generated names and labels.
		{Name: "name not a DNS label", Mutate: func(e *appstudio.Environment) { e.Name = "staging.a" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "no display name", Mutate: func(e *appstudio.Environment) { e.Spec.DisplayName = "" }, Want: []apitesting.Want{apitesting.Required("spec.displayName")}},
		{Name: "unknown strategy", Mutate: func(e *appstudio.Environment) { e.Spec.DeploymentStrategy = "Automated" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.deploymentStrategy")}},
		{Name: "both claim and credentials", Mutate: func(e *appstudio.Environment) {
			withCredentials(e)
			e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "staging-dtc"
		}, Want: []apitesting.Want{apitesting.Forbidden("spec.unstableConfigurationFields")}},
		{Name: "http API URL", Mutate: func(e *appstudio.Environment) {
			withCredentials(e)
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.APIURL = "http://api.example.com"
		}, Want: []apitesting.Want{apitesting.Invalid("spec.unstableConfigurationFields.kubernetesCredentials.apiURL")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Environment]{
		{Name: "unchanged", Mutate: func(*appstudio.Environment) {}},
		// Every field of an Environment's spec may change.
		{Name: "display name and strategy", Mutate: func(e *appstudio.Environment) {
			e.Spec.DisplayName = "Staging"
			e.Spec.DeploymentStrategy = appstudio.DeploymentStrategyManual
		}},
		{Name: "claim to credentials", Mutate: withCredentials},
		{Name: "invalid parent", Mutate: func(e *appstudio.Environment) { e.Spec.ParentEnvironment = "Dev" }, Want: []apitesting.Want{apitesting.Invalid("spec.parentEnvironment")}},
		{Name: "renamed", Mutate: func(e *appstudio.Environment) { e.Name = "prod" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.Environment]{
		{Name: "valid", Mutate: func(e *appstudio.Environment) { e.Status = otherStatus }},
		// The spec was checked when it was written; a status write does not judge it.
		{Name: "invalid spec", Mutate: func(e *appstudio.Environment) { e.Spec.DisplayName = "" }},
		{Name: "condition without reason", Mutate: func(e *appstudio.Environment) { e.Status.Conditions[0].Reason = "" },
			Want: []apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{Name: "renamed", Mutate: func(e *appstudio.Environment) { e.Name = "prod" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.Environment]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.deploymentStrategy": "AppStudioAutomated", "spec.parentEnvironment": "dev"}},
		{Name: "empty", Obj: &appstudio.Environment{}, Want: fields.Set{"spec.deploymentStrategy": "", "spec.parentEnvironment": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.Environment]{
		{Name: "claim", Mutate: func(*appstudio.Environment) {},
			Want: []interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "claim/staging-dtc", "True", "<unknown>"}},
		{Name: "credentials", Mutate: withCredentials,
			Want: []interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "https://api.example.com:6443", "True", "<unknown>"}},
		{Name: "this namespace, not reconciled yet", Mutate: func(e *appstudio.Environment) {
			e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = ""
			e.Status = otherStatus
		}, Want: []interface{}{"staging", "Staging for Team A", "AppStudioAutomated", "dev", "", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("environments"),
		Singular:   appstudio.Resource("environment"),
		New:        "*appstudio.Environment",
		NewList:    "*appstudio.EnvironmentList",
		Namespaced: true,
		ShortNames: []string{"env"},
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "staging", "metadata.namespace": "jane",
			"spec.deploymentStrategy": "AppStudioAutomated", "spec.parentEnvironment": "dev"},
		Columns:    []string{"Name", "Display Name", "Strategy", "Parent", "Target", "Reconciled (wide)", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:     true,
	})
}
