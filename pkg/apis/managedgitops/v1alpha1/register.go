package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group name of this API.
const GroupName = "managed-gitops.redhat.com"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource takes an unqualified resource and returns a Group qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	localSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addFieldLabelConversionFuncs)
	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
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
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
