package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of a SnapshotEnvironmentBinding.
const (
	BindingConditionErrorOccurred = "ErrorOccurred"
	BindingConditionReconciled    = "Reconciled"

	BindingReasonErrorOccurred                   = "ErrorOccurred"
	BindingReasonReconciled                      = "Reconciled"
	BindingReasonGitOpsRepoNotReady              = "GitOpsRepoNotReady"
	BindingReasonWaitingForComponentStatus       = "WaitingForComponentStatus"
	BindingReasonDuplicateComponents             = "DuplicateComponents"
	BindingReasonErrorGeneratingGitOpsDeployment = "ErrorGeneratingGitOpsDeployment"

	ComponentDeploymentConditionAllComponentsDeployed = "AllComponentsDeployed"
	ComponentDeploymentConditionCommitsSynced         = "CommitsSynced"
	ComponentDeploymentConditionCommitsUnsynced       = "CommitsUnsynced"
	ComponentDeploymentConditionErrorOccurred         = "ErrorOccurred"
)

// Labels that the service sets on the GitOpsDeployments it generates for a binding.
const (
	ApplicationLabel = "appstudio.openshift.io/application"
	ComponentLabel   = "appstudio.openshift.io/component"
	EnvironmentLabel = "appstudio.openshift.io/environment"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotEnvironmentBinding deploys a Snapshot of an Application to an Environment. There is at
// most one per (application, environment) in a namespace.
type SnapshotEnvironmentBinding struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec SnapshotEnvironmentBindingSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status SnapshotEnvironmentBindingStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// SnapshotEnvironmentBindingSpec is the application, environment and snapshot bound together.
// Application and Environment are immutable.
type SnapshotEnvironmentBindingSpec struct {
	Application string `json:"application" protobuf:"bytes,1,opt,name=application"`
	Environment string `json:"environment" protobuf:"bytes,2,opt,name=environment"`
	Snapshot    string `json:"snapshot" protobuf:"bytes,3,opt,name=snapshot"`
	// +listType=map
	// +listMapKey=name
	Components []BindingComponent `json:"components" protobuf:"bytes,4,rep,name=components"`
}

// BindingComponent is the per-environment configuration of one component.
type BindingComponent struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	Configuration BindingComponentConfiguration `json:"configuration,omitempty" protobuf:"bytes,2,opt,name=configuration"`
}

// BindingComponentConfiguration overrides a component's settings in the Environment.
type BindingComponentConfiguration struct {
	// +optional
	// +listType=atomic
	Env []EnvVarPair `json:"env,omitempty" protobuf:"bytes,1,rep,name=env"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" protobuf:"bytes,3,opt,name=resources"`
}

// SnapshotEnvironmentBindingStatus is the state of the binding's deployments.
type SnapshotEnvironmentBindingStatus struct {
	// GitOpsDeployments are the GitOpsDeployments generated for the components, by component name.
	// +optional
	// +listType=map
	// +listMapKey=componentName
	GitOpsDeployments []BindingStatusGitOpsDeployment `json:"gitopsDeployments,omitempty" protobuf:"bytes,1,rep,name=gitopsDeployments"`
	// Components is the GitOps repository of each component, written by the application service.
	// +optional
	// +listType=atomic
	Components []BindingComponentStatus `json:"components,omitempty" protobuf:"bytes,2,rep,name=components"`
	// +optional
	// +listType=map
	// +listMapKey=type
	GitOpsRepoConditions []metav1.Condition `json:"gitopsRepoConditions,omitempty" protobuf:"bytes,3,rep,name=gitopsRepoConditions"`
	// +optional
	// +listType=map
	// +listMapKey=type
	ComponentDeploymentConditions []metav1.Condition `json:"componentDeploymentConditions,omitempty" protobuf:"bytes,4,rep,name=componentDeploymentConditions"`
	// +optional
	// +listType=map
	// +listMapKey=type
	BindingConditions []metav1.Condition `json:"bindingConditions,omitempty" protobuf:"bytes,5,rep,name=bindingConditions"`
}

// BindingStatusGitOpsDeployment is the deployment state of one component.
type BindingStatusGitOpsDeployment struct {
	ComponentName string `json:"componentName" protobuf:"bytes,1,opt,name=componentName"`
	// +optional
	GitOpsDeployment string `json:"gitopsDeployment,omitempty" protobuf:"bytes,2,opt,name=gitopsDeployment"`
	// +optional
	SyncStatus string `json:"syncStatus,omitempty" protobuf:"bytes,3,opt,name=syncStatus"`
	// +optional
	Health string `json:"health,omitempty" protobuf:"bytes,4,opt,name=health"`
	// +optional
	CommitID string `json:"commitID,omitempty" protobuf:"bytes,5,opt,name=commitID"`
}

// BindingComponentStatus is where in Git a component's manifests for the Environment are.
type BindingComponentStatus struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// +optional
	GeneratedRouteName string                           `json:"generatedRouteName,omitempty" protobuf:"bytes,2,opt,name=generatedRouteName"`
	GitOpsRepository   BindingComponentGitOpsRepository `json:"gitopsRepository" protobuf:"bytes,3,opt,name=gitopsRepository"`
}

// BindingComponentGitOpsRepository is a path of a GitOps repository.
type BindingComponentGitOpsRepository struct {
	URL    string `json:"url" protobuf:"bytes,1,opt,name=url"`
	Branch string `json:"branch" protobuf:"bytes,2,opt,name=branch"`
	Path   string `json:"path" protobuf:"bytes,3,opt,name=path"`
	// +listType=atomic
	GeneratedResources []string `json:"generatedResources" protobuf:"bytes,4,rep,name=generatedResources"`
	CommitID           string   `json:"commitID" protobuf:"bytes,5,opt,name=commitID"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotEnvironmentBindingList is a list of SnapshotEnvironmentBindings.
type SnapshotEnvironmentBindingList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []SnapshotEnvironmentBinding `json:"items" protobuf:"bytes,2,rep,name=items"`
}
