package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldlabels"
)

// SelectableFields are, per kind, the fields beyond metadata.name and metadata.namespace that
// field selectors accept (kubectl get --field-selector). The server's registry computes exactly
// these for every object.
var SelectableFields = map[string][]string{
	"GitOpsDeployment": {
		"spec.type", "spec.source.repoURL", "spec.destination.environment", "spec.destination.namespace",
		"status.sync.status", "status.health.status",
	},
	"GitOpsDeploymentSyncRun":              {"spec.gitopsDeploymentName"},
	"GitOpsDeploymentManagedEnvironment":   {"spec.credentialsSecret"},
	"GitOpsDeploymentRepositoryCredential": {"spec.repository", "spec.secret"},
	"Operation":                            {"spec.resourceType", "status.state"},
	"ArgoCDInstance":                       {"spec.draining"},
	"TenantPlacement":                      {"spec.instance", "status.instance"},
	"AuditEntry":                           {"verb", "object.resource", "object.name", "object.subresource", "user.username"},
	"DeploymentRecord":                     {"spec.gitOpsDeploymentName", "spec.trigger.type", "status.phase"},
	"DeploymentPreview":                    {"spec.gitOpsDeploymentName", "status.phase"},
}

func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	return fieldlabels.Register(scheme, SchemeGroupVersion, SelectableFields)
}
