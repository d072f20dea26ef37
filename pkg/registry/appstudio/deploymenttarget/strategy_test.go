package deploymenttarget

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
var testKind = registrytest.Kind[object, appstudio.DeploymentTargetStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.DeploymentTargetStatus { return &o.Status },
}

var now = metav1.Now()

const creds = "spec.kubernetesCredentials."

// stored is a valid, bound DeploymentTarget as stored: at generation 3, with a status.
func stored() *appstudio.DeploymentTarget {
	return &appstudio.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-dt", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.DeploymentTargetSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			KubernetesClusterCredentials: appstudio.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace:         "jane-prod",
				APIURL:                   "https://api.example.com:6443",
				ClusterCredentialsSecret: "prod-dt-secret",
			},
			ClaimRef: "prod-dtc",
		},
		Status: appstudio.DeploymentTargetStatus{Phase: appstudio.DeploymentTargetPhaseBound},
	}
}

var otherStatus = appstudio.DeploymentTargetStatus{
	Phase: appstudio.DeploymentTargetPhaseFailed,
	Conditions: []metav1.Condition{{Type: appstudio.DeploymentTargetConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: appstudio.DeploymentTargetReasonErrorOccurred, LastTransitionTime: now}},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.DeploymentTarget]{
		// Only the binder says a target is bound.
		{Name: "status sent", Mutate: func(*appstudio.DeploymentTarget) {}},
		{Name: "generation sent", Mutate: func(d *appstudio.DeploymentTarget) { d.Generation = 9; d.Status = appstudio.DeploymentTargetStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.DeploymentTarget]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTarget) {}, Want: 3},
		{Name: "annotation added", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Annotations = map[string]string{appstudio.AnnBindCompleted: appstudio.AnnBinderValueTrue}
		}, Want: 3},
		{Name: "status sent", Mutate: func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }, Want: 3},
		{Name: "released by its claim", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "" }, Want: 4},
		{Name: "insecure", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Spec.KubernetesClusterCredentials.AllowInsecureSkipTLSVerify = true
		}, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.DeploymentTarget]{
		{Name: "status written", Mutate: func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = ""; d.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(d *appstudio.DeploymentTarget) { d.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTarget]{
		{Name: "valid", Mutate: func(*appstudio.DeploymentTarget) {}},
		{Name: "unbound", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "" }},
		{Name: "no class", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.DeploymentTargetClassName = "" },
			Want: []apitesting.Want{apitesting.Required("spec.deploymentTargetClassName")}},
		{Name: "http API URL", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Spec.KubernetesClusterCredentials.APIURL = "http://api.example.com"
		},
			Want: []apitesting.Want{apitesting.Invalid(creds + "apiURL")}},
		{Name: "no secret", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "" },
			Want: []apitesting.Want{apitesting.Required(creds + "clusterCredentialsSecret")}},
		{Name: "invalid claim", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.ClaimRef = "prod_dtc" }, Want: []apitesting.Want{apitesting.Invalid("spec.claimRef")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTarget]{
		{Name: "unchanged", Mutate: func(*appstudio.DeploymentTarget) {}},
		// The binder binds and releases targets by writing claimRef; the provisioner may
		// rotate the credentials.
		{Name: "claim released and credentials changed", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Spec.ClaimRef = ""
			d.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret = "rotated"
		}},
		{Name: "invalid namespace", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.KubernetesClusterCredentials.DefaultNamespace = "a.b" },
			Want: []apitesting.Want{apitesting.Invalid(creds + "defaultNamespace")}},
		{Name: "renamed", Mutate: func(d *appstudio.DeploymentTarget) { d.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.DeploymentTarget]{
		{Name: "valid", Mutate: func(d *appstudio.DeploymentTarget) { d.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(d *appstudio.DeploymentTarget) { d.Spec.DeploymentTargetClassName = "" }},
		{Name: "unknown phase", Mutate: func(d *appstudio.DeploymentTarget) { d.Status.Phase = "Lost" }, Want: []apitesting.Want{apitesting.NotSupported("status.phase")}},
		{Name: "condition without reason", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Status = otherStatus
			d.Status.Conditions = []metav1.Condition{{Type: "ErrorOccurred", Status: metav1.ConditionTrue, LastTransitionTime: now}}
		}, Want: []apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
		{Name: "renamed", Mutate: func(d *appstudio.DeploymentTarget) { d.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.DeploymentTarget]{
		{Name: "bound", Obj: stored(), Want: fields.Set{"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.claimRef": "prod-dtc", "status.phase": "Bound"}},
		{Name: "empty", Obj: &appstudio.DeploymentTarget{}, Want: fields.Set{"spec.deploymentTargetClassName": "", "spec.claimRef": "", "status.phase": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.DeploymentTarget]{
		{Name: "bound", Mutate: func(*appstudio.DeploymentTarget) {},
			Want: []interface{}{"prod-dt", "isolation-level-namespace", "jane-prod", "prod-dtc", "Bound", "https://api.example.com:6443", "<unknown>"}},
		{Name: "available", Mutate: func(d *appstudio.DeploymentTarget) {
			d.Spec.ClaimRef = ""
			d.Spec.KubernetesClusterCredentials.DefaultNamespace = ""
			d.Status.Phase = appstudio.DeploymentTargetPhaseAvailable
		}, Want: []interface{}{"prod-dt", "isolation-level-namespace", "", "", "Available", "https://api.example.com:6443", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("deploymenttargets"),
		Singular:   appstudio.Resource("deploymenttarget"),
		New:        "*appstudio.DeploymentTarget",
		NewList:    "*appstudio.DeploymentTargetList",
		Namespaced: true,
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "prod-dt", "metadata.namespace": "jane",
			"spec.deploymentTargetClassName": "isolation-level-namespace", "spec.claimRef": "prod-dtc", "status.phase": "Bound"},
		Columns:    []string{"Name", "Class", "Namespace", "Claim", "Phase", "API URL (wide)", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:     true,
	})
}
