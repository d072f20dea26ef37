package gitopsdeploymentrepositorycredential

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
var testKind = registrytest.Kind[object, gitops.RepositoryCredentialStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.RepositoryCredentialStatus { return &o.Status },
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
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentRepositoryCredential]{
		// A client cannot create credentials that claim to have been checked.
		{Name: "status sent", Mutate: func(*gitops.GitOpsDeploymentRepositoryCredential) {}},
		{Name: "generation sent", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Generation = 9
			c.Status = gitops.RepositoryCredentialStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentRepositoryCredential) {}, Want: 3},
		{Name: "label added", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }, Want: 3},
		{Name: "secret", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "rotated" }, Want: 4},
		{Name: "repository", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "https://github.com/org/other"
		}, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "status written", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "other"; c.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "valid", Mutate: func(*gitops.GitOpsDeploymentRepositoryCredential) {}},
		{Name: "ssh", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "ssh://git@github.com/org/private-app.git"
		}},
		// Credentials are only ever sent over https or ssh.
		{Name: "http", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "http://github.com/org/private-app"
		},
			Want: []apitesting.Want{apitesting.Invalid("spec.repository")}},
		{Name: "no repository", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Repository = "" },
			Want: []apitesting.Want{apitesting.Required("spec.repository")}},
		{Name: "no secret", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "" },
			Want: []apitesting.Want{apitesting.Required("spec.secret")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentRepositoryCredential) {}},
		{Name: "repository and secret", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Spec.Repository = "https://github.com/org/other"
			c.Spec.Secret = "rotated"
		}},
		{Name: "invalid secret", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "Rotated" },
			Want: []apitesting.Want{apitesting.Invalid("spec.secret")}},
		{Name: "renamed", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "valid", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Spec.Secret = "" }},
		{Name: "condition without transition time", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Status.Conditions[0].LastTransitionTime = metav1.Time{}
		}, Want: []apitesting.Want{apitesting.Required("status.conditions[0].lastTransitionTime")}},
		{Name: "renamed", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.repository": "https://github.com/org/private-app", "spec.secret": "private-repo-secret"}},
		{Name: "empty", Obj: &gitops.GitOpsDeploymentRepositoryCredential{}, Want: fields.Set{"spec.repository": "", "spec.secret": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*gitops.GitOpsDeploymentRepositoryCredential]{
		{Name: "valid", Mutate: func(*gitops.GitOpsDeploymentRepositoryCredential) {},
			Want: []interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "True", "<unknown>"}},
		{Name: "invalid", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) { c.Status = otherStatus },
			Want: []interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "False", "<unknown>"}},
		// Only the credential condition answers the column: a valid URL is not valid credentials.
		{Name: "only the URL checked", Mutate: func(c *gitops.GitOpsDeploymentRepositoryCredential) {
			c.Status.Conditions[0].Type = gitops.RepositoryCredentialConditionValidRepositoryURL
		}, Want: []interface{}{"private-repo-creds", "https://github.com/org/private-app", "private-repo-secret", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   gitops.Resource("gitopsdeploymentrepositorycredentials"),
		Singular:   gitops.Resource("gitopsdeploymentrepositorycredential"),
		New:        "*managedgitops.GitOpsDeploymentRepositoryCredential",
		NewList:    "*managedgitops.GitOpsDeploymentRepositoryCredentialList",
		Namespaced: true,
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "private-repo-creds", "metadata.namespace": "jane",
			"spec.repository": "https://github.com/org/private-app", "spec.secret": "private-repo-secret"},
		Columns:    []string{"Name", "Repository", "Secret", "Valid", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:     true,
	})
}
