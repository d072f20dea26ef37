package deploymenttargetclaim

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
var testKind = registrytest.Kind[object, appstudio.DeploymentTargetClaimStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.DeploymentTargetClaimStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid, bound DeploymentTargetClaim as stored: at generation 3, with a status.
func stored() *appstudio.DeploymentTargetClaim {
	return &appstudio.DeploymentTargetClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-dtc", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetClaimSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			TargetName:                "prod-dt",
		},
		Status: appstudio.DeploymentTargetClaimStatus{Phase: appstudio.DeploymentTargetClaimPhaseBound},
	}
}

var otherStatus = appstudio.DeploymentTargetClaimStatus{
	Phase: appstudio.DeploymentTargetClaimPhaseLost,
	Conditions: []metav1.Condition{{Type: "ErrorOccurred", Status: metav1.ConditionTrue,
		Reason: "TargetDeleted", LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.DeploymentTargetClaim]{
		{Name: "status sent", Mutate: func(*appstudio.DeploymentTargetClaim) {}},
		{Name: "generation sent", Mutate: func(c *appstudio.DeploymentTargetClaim) {
			c.Generation = 9
			c.Status = appstudio.DeploymentTargetClaimStatus{}
		}},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.DeploymentTargetClaim]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTargetClaim) {}, Want: 3},
		{Name: "annotation added", Mutate: func(c *appstudio.DeploymentTargetClaim) {
			c.Annotations = map[string]string{appstudio.AnnBindCompleted: appstudio.AnnBinderValueTrue}
		}, Want: 3},
		{Name: "status sent", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }, Want: 3},
		{Name: "target", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "other-dt" }, Want: 4},
		{Name: "class", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.DeploymentTargetClaim]{
		{Name: "status written", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = ""; c.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTargetClaim]{
		{Name: "valid", Mutate: func(*appstudio.DeploymentTargetClaim) {}},
		// A claim may name its class, its target, or both.
		{Name: "class only", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "" }},
		{Name: "target only", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "" }},
		{Name: "invalid class", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.DeploymentTargetClassName = "Bad Class" },
			Want: []apitesting.Want{apitesting.Invalid("spec.deploymentTargetClassName")}},
		{Name: "invalid target", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" },
			Want: []apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{Name: "no name", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Name = "" }, Want: []apitesting.Want{apitesting.Required("metadata.name")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTargetClaim]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTargetClaim) {}},
		// The binder writes the target it bound the claim to, once: a bound claim keeps it.
		{Name: "another target", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "other-dt" },
			Want: []apitesting.Want{apitesting.Invalid("spec.targetName")}},
		{Name: "invalid target", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" },
			Want: []apitesting.Want{apitesting.Invalid("spec.targetName"), apitesting.Invalid("spec.targetName")}},
		{Name: "renamed", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTargetClaim]{
		{Name: "valid", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Spec.TargetName = "prod_dt" }},
		{Name: "unknown phase", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Status.Phase = "Released" },
			Want: []apitesting.Want{apitesting.NotSupported("status.phase")}},
		{Name: "condition with unknown status", Mutate: func(c *appstudio.DeploymentTargetClaim) {
			c.Status = otherStatus
			c.Status.Conditions[0].Status = "Yes"
		}, Want: []apitesting.Want{apitesting.NotSupported("status.conditions[0].status")}},
		{Name: "renamed", Mutate: func(c *appstudio.DeploymentTargetClaim) { c.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.DeploymentTargetClaim]{
		{Name: "bound", Obj: stored(), Want: fields.Set{"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.targetName": "prod-dt", "status.phase": "Bound"}},
		{Name: "empty", Obj: &appstudio.DeploymentTargetClaim{}, Want: fields.Set{"spec.deploymentTargetClassName": "", "spec.targetName": "", "status.phase": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.DeploymentTargetClaim]{
		{Name: "bound", Mutate: func(*appstudio.DeploymentTargetClaim) {}, Want: []interface{}{"prod-dtc", "isolation-level-namespace", "prod-dt", "Bound", "<unknown>"}},
		{Name: "pending", Mutate: func(c *appstudio.DeploymentTargetClaim) {
			c.Spec.TargetName = ""
			c.Status.Phase = appstudio.DeploymentTargetClaimPhasePending
		}, Want: []interface{}{"prod-dtc", "isolation-level-namespace", "", "Pending", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("deploymenttargetclaims"),
		Singular:   appstudio.Resource("deploymenttargetclaim"),
		New:        "*appstudio.DeploymentTargetClaim",
		NewList:    "*appstudio.DeploymentTargetClaimList",
		Namespaced: true,
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "prod-dtc", "metadata.namespace": "jane",
			"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.targetName": "prod-dt", "status.phase": "Bound"},
		Columns:    []string{"Name", "Class", "Target", "Phase", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:     true,
	})
}
