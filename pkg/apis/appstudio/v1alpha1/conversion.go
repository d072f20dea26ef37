package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldlabels"
)

// SelectableFields are, per kind, the fields beyond metadata.name and metadata.namespace that
// field selectors accept (kubectl get --field-selector). The server's registry computes exactly
// these for every object.
var SelectableFields = map[string][]string{
	"Environment":                {"spec.deploymentStrategy", "spec.parentEnvironment"},
	"Snapshot":                   {"spec.application"},
	"SnapshotEnvironmentBinding": {"spec.application", "spec.environment", "spec.snapshot"},
	"PromotionRun":               {"spec.application", "spec.snapshot", "status.state"},
	"DeploymentTarget":           {"spec.deploymentTargetClassName", "spec.claimRef", "status.phase"},
	"DeploymentTargetClaim":      {"spec.deploymentTargetClassName", "spec.targetName", "status.phase"},
	"DeploymentTargetClass":      {"spec.provisioner"},
	"Component":                  {"spec.application"},
	"PromotionApproval":          {"spec.promotionRun", "spec.environment", "spec.decision", "spec.username"},
}

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return fieldlabels.Register(scheme, SchemeGroupVersion, SelectableFields)
}
