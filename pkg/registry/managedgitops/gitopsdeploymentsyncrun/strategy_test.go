package gitopsdeploymentsyncrun

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
var testKind = registrytest.Kind[object, gitops.GitOpsDeploymentSyncRunStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.GitOpsDeploymentSyncRunStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid GitOpsDeploymentSyncRun as stored: at generation 3, failed.
func stored() *gitops.GitOpsDeploymentSyncRun {
	return &gitops.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: "sync-1", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "app", RevisionID: "0a1b2c3d"},
		Status: gitops.GitOpsDeploymentSyncRunStatus{Conditions: []gitops.GitOpsDeploymentSyncRunCondition{{
			Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusTrue,
			Reason: gitops.SyncRunReasonErrorOccurred, Message: "no such revision", LastTransitionTime: &now,
		}}},
	}
}

var otherStatus = gitops.GitOpsDeploymentSyncRunStatus{Conditions: []gitops.GitOpsDeploymentSyncRunCondition{{
	Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusFalse, LastTransitionTime: &now,
}}}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "status sent", Mutate: func(*gitops.GitOpsDeploymentSyncRun) {}},
		{Name: "generation sent", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) {
			r.Generation = 9
			r.Status = gitops.GitOpsDeploymentSyncRunStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentSyncRun) {}, Want: 3},
		{Name: "label added", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }, Want: 3},
		// Refused by validation, but the generation is decided first.
		{Name: "revision", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "ffff" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "status written", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = ""; r.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "valid", Mutate: func(*gitops.GitOpsDeploymentSyncRun) {}},
		{Name: "deployment's target revision", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "" }},
		{Name: "no deployment", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "" },
			Want: []apitesting.Want{apitesting.Required("spec.gitopsDeploymentName")}},
		{Name: "revision with whitespace", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "a b" },
			Want: []apitesting.Want{apitesting.Invalid("spec.revisionID")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeploymentSyncRun) {}},
		{Name: "labels", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Labels = nil }},
		// A SyncRun stands for one sync: what it syncs never changes.
		{Name: "deployment", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "other" },
			Want: []apitesting.Want{apitesting.Invalid("spec.gitopsDeploymentName")}},
		{Name: "revision", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "ffff" },
			Want: []apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{Name: "revision cleared", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.RevisionID = "" },
			Want: []apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{Name: "renamed", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "valid", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Spec.GitopsDeploymentName = "" }},
		{Name: "unknown condition type", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Status.Conditions[0].Type = "Synced" },
			Want: []apitesting.Want{apitesting.NotSupported("status.conditions[0].type")}},
		{Name: "renamed", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.gitopsDeploymentName": "app"}},
		{Name: "empty", Obj: &gitops.GitOpsDeploymentSyncRun{}, Want: fields.Set{"spec.gitopsDeploymentName": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*gitops.GitOpsDeploymentSyncRun]{
		{Name: "failed", Mutate: func(*gitops.GitOpsDeploymentSyncRun) {}, Want: []interface{}{"sync-1", "app", "0a1b2c3d", "True", "<unknown>"}},
		{Name: "resolved", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) { r.Status = otherStatus }, Want: []interface{}{"sync-1", "app", "0a1b2c3d", "False", "<unknown>"}},
		{Name: "new", Mutate: func(r *gitops.GitOpsDeploymentSyncRun) {
			r.Status = gitops.GitOpsDeploymentSyncRunStatus{}
			r.Spec.RevisionID = ""
		},
			Want: []interface{}{"sync-1", "app", "", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       gitops.Resource("gitopsdeploymentsyncruns"),
		Singular:       gitops.Resource("gitopsdeploymentsyncrun"),
		New:            "*managedgitops.GitOpsDeploymentSyncRun",
		NewList:        "*managedgitops.GitOpsDeploymentSyncRunList",
		Namespaced:     true,
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "sync-1", "metadata.namespace": "jane", "spec.gitopsDeploymentName": "app"},
		Columns:        []string{"Name", "Deployment", "Revision", "Error", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:         true,
	})
}
