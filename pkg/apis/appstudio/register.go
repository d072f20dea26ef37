package appstudio

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group name of this API.
const GroupName = "appstudio.redhat.com"

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
		&Environment{}, &EnvironmentList{},
		&Snapshot{}, &SnapshotList{},
		&SnapshotEnvironmentBinding{}, &SnapshotEnvironmentBindingList{},
		&PromotionRun{}, &PromotionRunList{},
		&DeploymentTarget{}, &DeploymentTargetList{},
		&DeploymentTargetClaim{}, &DeploymentTargetClaimList{},
		&DeploymentTargetClass{}, &DeploymentTargetClassList{},
		&Application{}, &ApplicationList{},
		&Component{}, &ComponentList{},
		&ComponentDetectionQuery{}, &ComponentDetectionQueryList{},
		&PromotionGate{}, &PromotionGateList{},
		&PromotionApproval{}, &PromotionApprovalList{},
		&EnvironmentHold{}, &EnvironmentHoldList{},
	)
	return nil
}
