package gitopsdeploymentmanagedenvironment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, gitops.ManagedEnvironmentStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.ManagedEnvironmentStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid GitOpsDeploymentManagedEnvironment as stored: at generation 3, connected.
func stored() *gitops.GitOpsDeploymentManagedEnvironment {
	return &gitops.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "my-cluster", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.ManagedEnvironmentSpec{
			APIURL:                   "https://api.example.com:6443",
			ClusterCredentialsSecret: "my-cluster-secret",
			Namespaces:               []string{"prod"},
		},
		Status: gitops.ManagedEnvironmentStatus{Conditions: []metav1.Condition{{
			Type: gitops.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionTrue,
			Reason: string(gitops.ManagedEnvironmentReasonSucceeded), LastTransitionTime: now,
		}}},
	}
}

var otherStatus = gitops.ManagedEnvironmentStatus{Conditions: []metav1.Condition{{
	Type: gitops.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
	Reason: string(gitops.ManagedEnvironmentReasonUnableToCreateClient), LastTransitionTime: now,
}}}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentManagedEnvironment]{
		// A client cannot create an environment that claims to be connected.
		{Name: "status sent", Mutate: func(*gitops.GitOpsDeploymentManagedEnvironment) {}},
		{Name: "generation sent", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Generation = 9
			e.Status = gitops.ManagedEnvironmentStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentManagedEnvironment) {}, Want: 3},
		{Name: "label added", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }, Want: 3},
		{Name: "secret", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterCredentialsSecret = "rotated" }, Want: 4},
		{Name: "cluster resources", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterResources = true }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "status written", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = "https://other"
			e.Status = otherStatus
		}},
		{Name: "labels sent", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "valid", Mutate: func(*gitops.GitOpsDeploymentManagedEnvironment) {}},
		{Name: "http API URL", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "http://api.example.com" },
			Want: []apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		// The service appends its own query parameter to cluster URLs.
		{Name: "API URL with query", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "https://api.example.com?x=1" },
			Want: []apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{Name: "no secret", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.ClusterCredentialsSecret = "" },
			Want: []apitesting.Want{apitesting.Required("spec.credentialsSecret")}},
		{Name: "repeated namespace", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"prod", "prod"} },
			Want: []apitesting.Want{apitesting.Duplicate("spec.namespaces[1]")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentManagedEnvironment) {}},
		// Every field of the spec may change: the cluster can move and its credentials rotate.
		{Name: "URL, secret and namespaces", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) {
			e.Spec.APIURL = "https://api.other.example.com"
			e.Spec.ClusterCredentialsSecret = "rotated"
			e.Spec.Namespaces = nil
		}},
		{Name: "invalid namespace", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.Namespaces = []string{"Prod"} },
			Want: []apitesting.Want{apitesting.Invalid("spec.namespaces[0]")}},
		{Name: "renamed", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "valid", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Spec.APIURL = "" }},
		{Name: "condition without reason", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status.Conditions[0].Reason = "" },
			Want: []apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{Name: "renamed", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.credentialsSecret": "my-cluster-secret"}},
		{Name: "empty", Obj: &gitops.GitOpsDeploymentManagedEnvironment{}, Want: fields.Set{"spec.credentialsSecret": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*gitops.GitOpsDeploymentManagedEnvironment]{
		{Name: "connected", Mutate: func(*gitops.GitOpsDeploymentManagedEnvironment) {},
			Want: []interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "True", "<unknown>"}},
		{Name: "failed", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = otherStatus },
			Want: []interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "False", "<unknown>"}},
		{Name: "not tried yet", Mutate: func(e *gitops.GitOpsDeploymentManagedEnvironment) { e.Status = gitops.ManagedEnvironmentStatus{} },
			Want: []interface{}{"my-cluster", "https://api.example.com:6443", "my-cluster-secret", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       gitops.Resource("gitopsdeploymentmanagedenvironments"),
		Singular:       gitops.Resource("gitopsdeploymentmanagedenvironment"),
		New:            "*managedgitops.GitOpsDeploymentManagedEnvironment",
		NewList:        "*managedgitops.GitOpsDeploymentManagedEnvironmentList",
		Namespaced:     true,
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "my-cluster", "metadata.namespace": "jane", "spec.credentialsSecret": "my-cluster-secret"},
		Columns:        []string{"Name", "API URL", "Secret", "Connected", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:         true,
	})
}
