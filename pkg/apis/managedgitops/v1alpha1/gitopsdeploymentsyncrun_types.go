package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentSyncRun asks Argo CD to sync a manual GitOpsDeployment once.
type GitOpsDeploymentSyncRun struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec GitOpsDeploymentSyncRunSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status GitOpsDeploymentSyncRunStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// GitOpsDeploymentSyncRunSpec names what to sync. Both fields are immutable.
type GitOpsDeploymentSyncRunSpec struct {
	// GitopsDeploymentName is the GitOpsDeployment to sync, in the same namespace.
	GitopsDeploymentName string `json:"gitopsDeploymentName" protobuf:"bytes,1,opt,name=gitopsDeploymentName"`
	// RevisionID is the commit to sync to; empty means the deployment's target revision.
	// +optional
	RevisionID string `json:"revisionID,omitempty" protobuf:"bytes,2,opt,name=revisionID"`
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
	Conditions []GitOpsDeploymentSyncRunCondition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
}

// GitOpsDeploymentSyncRunCondition is one observation about a SyncRun.
type GitOpsDeploymentSyncRunCondition struct {
	Type    GitOpsDeploymentSyncRunConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=GitOpsDeploymentSyncRunConditionType"`
	Message string                               `json:"message" protobuf:"bytes,2,opt,name=message"`
	// +optional
	LastTransitionTime *metav1.Time          `json:"lastTransitionTime,omitempty" protobuf:"bytes,3,opt,name=lastTransitionTime"`
	Status             GitOpsConditionStatus `json:"status" protobuf:"bytes,4,opt,name=status,casttype=GitOpsConditionStatus"`
	Reason             SyncRunReasonType     `json:"reason" protobuf:"bytes,5,opt,name=reason,casttype=SyncRunReasonType"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentSyncRunList is a list of GitOpsDeploymentSyncRuns.
type GitOpsDeploymentSyncRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []GitOpsDeploymentSyncRun `json:"items" protobuf:"bytes,2,rep,name=items"`
}
