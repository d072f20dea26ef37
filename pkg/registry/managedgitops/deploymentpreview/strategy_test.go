package deploymentpreview

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

var testKind = registrytest.Kind[object, gitops.DeploymentPreviewStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.DeploymentPreviewStatus { return &o.Status },
}

// stored is a valid preview as stored: web at main, rendered.
func stored() *gitops.DeploymentPreview {
	return &gitops.DeploymentPreview{
		ObjectMeta: metav1.ObjectMeta{Name: "web-preview-x7k2p", Namespace: "team-a", ResourceVersion: "1", Generation: 1, Labels: map[string]string{}},
		Spec:       gitops.DeploymentPreviewSpec{GitOpsDeploymentName: "web", Revision: "main"},
		Status: gitops.DeploymentPreviewStatus{Phase: gitops.DeploymentPreviewRendered, Revision: "0123456789abcdef0123456789abcdef01234567",
			ManifestsDigest: "sha256:ab", Message: "rendered; deleted 1h after its creation"},
	}
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(object) {}},
		{Name: "the followed revision", Mutate: func(o object) { o.Spec.Revision = "" }},
		{Name: "no deployment", Mutate: func(o object) { o.Spec.GitOpsDeploymentName = "" },
			Want: []apitesting.Want{apitesting.Required("spec.gitOpsDeploymentName")}},
		{Name: "revision with a space", Mutate: func(o object) { o.Spec.Revision = "main; rm" },
			Want: []apitesting.Want{apitesting.Invalid("spec.revision")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "label", Mutate: func(o object) { o.Labels["x"] = "y" }},
		{Name: "revision changed", Mutate: func(o object) { o.Spec.Revision = "v2" }, Want: []apitesting.Want{apitesting.Invalid("spec.revision")}},
		{Name: "deployment changed", Mutate: func(o object) { o.Spec.GitOpsDeploymentName = "api" },
			Want: []apitesting.Want{apitesting.Invalid("spec.gitOpsDeploymentName")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "failed", Mutate: func(o object) { o.Status.Phase = gitops.DeploymentPreviewFailed }},
		{Name: "unknown phase", Mutate: func(o object) { o.Status.Phase = "Done" }, Want: []apitesting.Want{apitesting.NotSupported("status.phase")}},
		{Name: "negative generation", Mutate: func(o object) { o.Status.ObservedGeneration = -1 },
			Want: []apitesting.Want{apitesting.Invalid("status.observedGeneration")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[object]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.gitOpsDeploymentName": "web", "status.phase": "Rendered"}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[object]{
		{Name: "rendered", Mutate: func(object) {},
			Want: []interface{}{"web-preview-x7k2p", "web", "main", "0123456", "Rendered", "sha256:ab", "rendered; deleted 1h after its creation", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}
