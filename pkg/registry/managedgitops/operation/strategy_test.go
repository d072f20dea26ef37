package operation

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
var testKind = registrytest.Kind[object, gitops.OperationStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.OperationStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid Operation as stored: at generation 3, completed.
func stored() *gitops.Operation {
	return &gitops.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: "operation-6b9f0c1e", Namespace: "gitops-service-argocd", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.OperationSpec{
			OperationID:  "6b9f0c1e",
			ResourceType: gitops.OperationResourceTypeApplication,
			Target:       gitops.OperationTarget{Kind: "Application", Namespace: "gitops-service-argocd", Name: "gitopsdepl-1"},
		},
		Status: gitops.OperationStatus{State: gitops.OperationStateCompleted, Attempts: 2, Message: "done", LastStateUpdate: &now},
	}
}

var otherStatus = gitops.OperationStatus{State: gitops.OperationStateFailed, Attempts: 3, Message: "no such cluster", LastStateUpdate: &now}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.Operation]{
		{Name: "status sent", Mutate: func(*gitops.Operation) {}},
		{Name: "generation sent", Mutate: func(o *gitops.Operation) { o.Generation = 9; o.Status = gitops.OperationStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*gitops.Operation]{
		{Name: "unchanged", Mutate: func(*gitops.Operation) {}, Want: 3},
		{Name: "label added", Mutate: func(o *gitops.Operation) { o.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(o *gitops.Operation) { o.Status = otherStatus }, Want: 3},
		{Name: "target", Mutate: func(o *gitops.Operation) { o.Spec.Target.Name = "gitopsdepl-2" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.Operation]{
		{Name: "status written", Mutate: func(o *gitops.Operation) { o.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(o *gitops.Operation) { o.Spec.ResourceType = ""; o.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(o *gitops.Operation) { o.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.Operation]{
		{Name: "valid", Mutate: func(*gitops.Operation) {}},
		// The original agent created Operations with only an ID.
		{Name: "only an ID", Mutate: func(o *gitops.Operation) { o.Spec = gitops.OperationSpec{OperationID: "6b9f0c1e"} }},
		{Name: "unknown resource type", Mutate: func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.resourceType")}},
		{Name: "invalid name", Mutate: func(o *gitops.Operation) { o.Name = "Operation_1" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.Operation]{
		{Name: "unchanged", Mutate: func(*gitops.Operation) {}},
		{Name: "target", Mutate: func(o *gitops.Operation) { o.Spec.Target.Name = "gitopsdepl-2" }},
		{Name: "unknown resource type", Mutate: func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.resourceType")}},
		{Name: "renamed", Mutate: func(o *gitops.Operation) { o.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.Operation]{
		{Name: "valid", Mutate: func(o *gitops.Operation) { o.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(o *gitops.Operation) { o.Spec.ResourceType = "Deployment" }},
		{Name: "unknown state", Mutate: func(o *gitops.Operation) { o.Status.State = "Done" }, Want: []apitesting.Want{apitesting.NotSupported("status.state")}},
		{Name: "negative attempts", Mutate: func(o *gitops.Operation) { o.Status.Attempts = -1 }, Want: []apitesting.Want{apitesting.Invalid("status.attempts")}},
		{Name: "renamed", Mutate: func(o *gitops.Operation) { o.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*gitops.Operation]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.resourceType": "Application", "status.state": "Completed"}},
		{Name: "empty", Obj: &gitops.Operation{}, Want: fields.Set{"spec.resourceType": "", "status.state": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*gitops.Operation]{
		{Name: "completed", Mutate: func(*gitops.Operation) {},
			Want: []interface{}{"operation-6b9f0c1e", "Application", "gitopsdepl-1", "Completed", int64(2), "done", "<unknown>"}},
		{Name: "failed", Mutate: func(o *gitops.Operation) { o.Status = otherStatus },
			Want: []interface{}{"operation-6b9f0c1e", "Application", "gitopsdepl-1", "Failed", int64(3), "no such cluster", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   gitops.Resource("operations"),
		Singular:   gitops.Resource("operation"),
		New:        "*managedgitops.Operation",
		NewList:    "*managedgitops.OperationList",
		Namespaced: true,
		// Operations are the agent's: kubectl get gitops must not list them.
		Categories: nil,
		FieldSelectors: fields.Set{"metadata.name": "operation-6b9f0c1e", "metadata.namespace": "gitops-service-argocd",
			"spec.resourceType": "Application", "status.state": "Completed"},
		Columns:    []string{"Name", "Type", "Target", "State", "Attempts", "Message (wide)", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:     true,
	})
}
