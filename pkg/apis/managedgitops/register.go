package managedgitops

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group name of this API.
const GroupName = "managed-gitops.redhat.com"

// SchemeGroupVersion is the internal version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Resource takes an unqualified resource and returns a Group qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add the internal types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the internal types of this group to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&GitOpsDeployment{}, &GitOpsDeploymentList{},
		&GitOpsDeploymentSyncRun{}, &GitOpsDeploymentSyncRunList{},
		&GitOpsDeploymentManagedEnvironment{}, &GitOpsDeploymentManagedEnvironmentList{},
		&GitOpsDeploymentRepositoryCredential{}, &GitOpsDeploymentRepositoryCredentialList{},
		&Operation{}, &OperationList{},
		&ArgoCDInstance{}, &ArgoCDInstanceList{},
		&TenantPlacement{}, &TenantPlacementList{},
		&AuditEntry{}, &AuditEntryList{},
		&DeploymentRecord{}, &DeploymentRecordList{}, &DeploymentRecordDiff{},
		&GitOpsDeploymentHold{}, &GitOpsDeploymentHoldList{},
		&DeploymentPreview{}, &DeploymentPreviewList{},
	)
	return nil
}
