package appstudio

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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotEnvironmentBinding deploys a Snapshot of an Application to an Environment. There is at
// most one per (application, environment) in a namespace.
type SnapshotEnvironmentBinding struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SnapshotEnvironmentBindingSpec `json:"spec"`
	// +optional
	Status SnapshotEnvironmentBindingStatus `json:"status,omitempty"`
}

// SnapshotEnvironmentBindingSpec is the application, environment and snapshot bound together.
// Application and Environment are immutable.
type SnapshotEnvironmentBindingSpec struct {
	Application string `json:"application"`
	Environment string `json:"environment"`
	Snapshot    string `json:"snapshot"`
	// +listType=map
	// +listMapKey=name
	Components []BindingComponent `json:"components"`
}

// BindingComponent is the per-environment configuration of one component.
type BindingComponent struct {
	Name string `json:"name"`
	// +optional
	Configuration BindingComponentConfiguration `json:"configuration,omitempty"`
}

// BindingComponentConfiguration overrides a component's settings in the Environment.
type BindingComponentConfiguration struct {
	// +optional
	// +listType=atomic
	Env []EnvVarPair `json:"env,omitempty"`
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// SnapshotEnvironmentBindingStatus is the state of the binding's deployments.
type SnapshotEnvironmentBindingStatus struct {
	// GitOpsDeployments are the GitOpsDeployments generated for the components, by component name.
	// +optional
	// +listType=map
	// +listMapKey=componentName
	GitOpsDeployments []BindingStatusGitOpsDeployment `json:"gitopsDeployments,omitempty"`
	// Components is the GitOps repository of each component, written by the application service.
	// +optional
	// +listType=atomic
	Components []BindingComponentStatus `json:"components,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	GitOpsRepoConditions []metav1.Condition `json:"gitopsRepoConditions,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	ComponentDeploymentConditions []metav1.Condition `json:"componentDeploymentConditions,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	BindingConditions []metav1.Condition `json:"bindingConditions,omitempty"`
}

// BindingStatusGitOpsDeployment is the deployment state of one component.
type BindingStatusGitOpsDeployment struct {
	ComponentName string `json:"componentName"`
	// +optional
	GitOpsDeployment string `json:"gitopsDeployment,omitempty"`
	// +optional
	SyncStatus string `json:"syncStatus,omitempty"`
	// +optional
	Health string `json:"health,omitempty"`
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// BindingComponentStatus is where in Git a component's manifests for the Environment are.
type BindingComponentStatus struct {
	Name string `json:"name"`
	// +optional
	GeneratedRouteName string                           `json:"generatedRouteName,omitempty"`
	GitOpsRepository   BindingComponentGitOpsRepository `json:"gitopsRepository"`
}

// BindingComponentGitOpsRepository is a path of a GitOps repository.
type BindingComponentGitOpsRepository struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
	// +listType=atomic
	GeneratedResources []string `json:"generatedResources"`
	CommitID           string   `json:"commitID"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotEnvironmentBindingList is a list of SnapshotEnvironmentBindings.
type SnapshotEnvironmentBindingList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SnapshotEnvironmentBinding `json:"items"`
}
