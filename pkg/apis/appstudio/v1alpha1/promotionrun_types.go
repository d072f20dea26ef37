package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PromotionRunState is where a PromotionRun is.
type PromotionRunState string

const (
	PromotionRunStateActive   PromotionRunState = "Active"
	PromotionRunStateWaiting  PromotionRunState = "Waiting"
	PromotionRunStateComplete PromotionRunState = "Complete"
)

// PromotionRunCompleteResult is the outcome of a complete PromotionRun.
type PromotionRunCompleteResult string

const (
	PromotionRunCompleteResultSuccess PromotionRunCompleteResult = "Success"
	PromotionRunCompleteResultFailure PromotionRunCompleteResult = "Failure"
)

// PromotionRunEnvironmentStatusField is the state of the promotion into one Environment.
type PromotionRunEnvironmentStatusField string

const (
	PromotionRunEnvironmentStatusSuccess    PromotionRunEnvironmentStatusField = "Success"
	PromotionRunEnvironmentStatusInProgress PromotionRunEnvironmentStatusField = "In Progress"
	PromotionRunEnvironmentStatusFailed     PromotionRunEnvironmentStatusField = "Failed"
)

// PromotionRunConditionType is the type of a PromotionRun condition.
type PromotionRunConditionType string

// PromotionRunConditionErrorOccurred is the only PromotionRun condition type.
const PromotionRunConditionErrorOccurred PromotionRunConditionType = "ErrorOccurred"

// PromotionRunReasonType is the reason of a PromotionRun condition.
type PromotionRunReasonType string

// PromotionRunReasonErrorOccurred is the reason while an error holds; it is empty once resolved.
const PromotionRunReasonErrorOccurred PromotionRunReasonType = "ErrorOccurred"

// PromotionRunConditionStatus is the status of a PromotionRun condition.
type PromotionRunConditionStatus string

const (
	PromotionRunConditionStatusTrue    PromotionRunConditionStatus = "True"
	PromotionRunConditionStatusFalse   PromotionRunConditionStatus = "False"
	PromotionRunConditionStatusUnknown PromotionRunConditionStatus = "Unknown"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionRun promotes a Snapshot of an Application into an Environment.
type PromotionRun struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec PromotionRunSpec `json:"spec,omitempty"`
	// +optional
	Status PromotionRunStatus `json:"status,omitempty"`
}

// PromotionRunSpec is what to promote and where. It is immutable.
type PromotionRunSpec struct {
	Snapshot    string `json:"snapshot"`
	Application string `json:"application"`
	// +optional
	ManualPromotion ManualPromotionConfiguration `json:"manualPromotion,omitempty"`
	// AutomatedPromotion walks the Environment graph from its initialEnvironment, entering
	// the AppStudioAutomated children of each Environment promoted into, level by level.
	// Exactly one of manualPromotion and automatedPromotion is set.
	// +optional
	AutomatedPromotion AutomatedPromotionConfiguration `json:"automatedPromotion,omitempty"`
}

// ManualPromotionConfiguration promotes into one Environment.
type ManualPromotionConfiguration struct {
	TargetEnvironment string `json:"targetEnvironment"`
}

// AutomatedPromotionConfiguration promotes along the Environment graph.
type AutomatedPromotionConfiguration struct {
	InitialEnvironment string `json:"initialEnvironment"`
}

// PromotionRunStatus is the progress of the promotion.
type PromotionRunStatus struct {
	State PromotionRunState `json:"state"`
	// +optional
	CompletionResult PromotionRunCompleteResult `json:"completionResult,omitempty"`
	// +optional
	// +listType=atomic
	EnvironmentStatus []PromotionRunEnvironmentStatus `json:"environmentStatus,omitempty"`
	// +optional
	// +listType=atomic
	ActiveBindings []string `json:"activeBindings,omitempty"`
	// +optional
	PromotionStartTime metav1.Time `json:"promotionStartTime,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []PromotionRunCondition `json:"conditions,omitempty"`
}

// PromotionRunEnvironmentStatus is the promotion into one Environment.
type PromotionRunEnvironmentStatus struct {
	Step            int32                              `json:"step"`
	EnvironmentName string                             `json:"environmentName"`
	Status          PromotionRunEnvironmentStatusField `json:"status"`
	DisplayStatus   string                             `json:"displayStatus"`

	// StartTime is when the controller began the step: when it first wrote the step's status,
	// in the pass that pointed the binding at the Snapshot (or found it there).
	//
	// StartTime and CompletionTime are extensions beyond application-api, whose wire format
	// PromotionRun otherwise follows: clients built on application-api ignore them, and steps
	// written before they existed have neither.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the step ended, with status Success or Failed; it is not before
	// StartTime. An extension beyond application-api, as StartTime is.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// PromotionRunCondition is one observation about a PromotionRun.
type PromotionRunCondition struct {
	Type PromotionRunConditionType `json:"type"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +optional
	LastTransitionTime *metav1.Time                `json:"lastTransitionTime,omitempty"`
	Status             PromotionRunConditionStatus `json:"status"`
	// +optional
	Reason PromotionRunReasonType `json:"reason,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionRunList is a list of PromotionRuns.
type PromotionRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionRun `json:"items"`
}
