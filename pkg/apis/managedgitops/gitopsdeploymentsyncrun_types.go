package managedgitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentSyncRun asks Argo CD to sync a manual GitOpsDeployment once.
type GitOpsDeploymentSyncRun struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GitOpsDeploymentSyncRunSpec `json:"spec,omitempty"`
	// +optional
	Status GitOpsDeploymentSyncRunStatus `json:"status,omitempty"`
}

// GitOpsDeploymentSyncRunSpec names what to sync. Both fields are immutable.
type GitOpsDeploymentSyncRunSpec struct {
	// GitopsDeploymentName is the GitOpsDeployment to sync, in the same namespace.
	GitopsDeploymentName string `json:"gitopsDeploymentName"`
	// RevisionID is the commit to sync to; empty means the deployment's target revision.
	// +optional
	RevisionID string `json:"revisionID,omitempty"`
}

// GitOpsDeploymentSyncRunConditionType is the type of a SyncRun condition.
type GitOpsDeploymentSyncRunConditionType string

// GitOpsDeploymentSyncRunConditionErrorOccurred is the only SyncRun condition type.
const GitOpsDeploymentSyncRunConditionErrorOccurred GitOpsDeploymentSyncRunConditionType = "ErrorOccurred"

// SyncRunReasonType is the reason of a SyncRun condition.
type SyncRunReasonType string

// SyncRunReasonErrorOccurred is the reason while an error holds; it is empty once resolved.
const SyncRunReasonErrorOccurred SyncRunReasonType = "ErrorOccurred"

// Messages of the ErrorOccurred condition that tell the user what to fix.
const (
	SyncRunUserErrorDeploymentNameImmutable = "deployment name field is immutable: changing it from its initial value is not supported"
	SyncRunUserErrorRevisionImmutable       = "revision change is not supported: changing it from its initial value is not supported"
)

// GitOpsDeploymentSyncRunStatus reports the outcome of the sync.
type GitOpsDeploymentSyncRunStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []GitOpsDeploymentSyncRunCondition `json:"conditions,omitempty"`
}

// GitOpsDeploymentSyncRunCondition is one observation about a SyncRun.
type GitOpsDeploymentSyncRunCondition struct {
	Type    GitOpsDeploymentSyncRunConditionType `json:"type"`
	Message string                               `json:"message"`
	// +optional
	LastTransitionTime *metav1.Time          `json:"lastTransitionTime,omitempty"`
	Status             GitOpsConditionStatus `json:"status"`
	Reason             SyncRunReasonType     `json:"reason"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentSyncRunList is a list of GitOpsDeploymentSyncRuns.
type GitOpsDeploymentSyncRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeploymentSyncRun `json:"items"`
}
