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
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec PromotionRunSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status PromotionRunStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// PromotionRunSpec is what to promote and where. It is immutable.
type PromotionRunSpec struct {
	Snapshot    string `json:"snapshot" protobuf:"bytes,1,opt,name=snapshot"`
	Application string `json:"application" protobuf:"bytes,2,opt,name=application"`
	// +optional
	ManualPromotion ManualPromotionConfiguration `json:"manualPromotion,omitempty" protobuf:"bytes,3,opt,name=manualPromotion"`
	// AutomatedPromotion walks the Environment graph from its initialEnvironment, entering
	// the AppStudioAutomated children of each Environment promoted into, level by level.
	// Exactly one of manualPromotion and automatedPromotion is set.
	// +optional
	AutomatedPromotion AutomatedPromotionConfiguration `json:"automatedPromotion,omitempty" protobuf:"bytes,4,opt,name=automatedPromotion"`
}

// ManualPromotionConfiguration promotes into one Environment.
type ManualPromotionConfiguration struct {
	TargetEnvironment string `json:"targetEnvironment" protobuf:"bytes,1,opt,name=targetEnvironment"`
}

// AutomatedPromotionConfiguration promotes along the Environment graph.
type AutomatedPromotionConfiguration struct {
	InitialEnvironment string `json:"initialEnvironment" protobuf:"bytes,1,opt,name=initialEnvironment"`
}

// PromotionRunStatus is the progress of the promotion.
type PromotionRunStatus struct {
	State PromotionRunState `json:"state" protobuf:"bytes,1,opt,name=state,casttype=PromotionRunState"`
	// +optional
	CompletionResult PromotionRunCompleteResult `json:"completionResult,omitempty" protobuf:"bytes,2,opt,name=completionResult,casttype=PromotionRunCompleteResult"`
	// +optional
	// +listType=atomic
	EnvironmentStatus []PromotionRunEnvironmentStatus `json:"environmentStatus,omitempty" protobuf:"bytes,3,rep,name=environmentStatus"`
	// +optional
	// +listType=atomic
	ActiveBindings []string `json:"activeBindings,omitempty" protobuf:"bytes,4,rep,name=activeBindings"`
	// +optional
	PromotionStartTime metav1.Time `json:"promotionStartTime,omitempty" protobuf:"bytes,5,opt,name=promotionStartTime"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []PromotionRunCondition `json:"conditions,omitempty" protobuf:"bytes,6,rep,name=conditions"`
}

// PromotionRunEnvironmentStatus is the promotion into one Environment.
type PromotionRunEnvironmentStatus struct {
	Step            int32                              `json:"step" protobuf:"varint,1,opt,name=step"`
	EnvironmentName string                             `json:"environmentName" protobuf:"bytes,2,opt,name=environmentName"`
	Status          PromotionRunEnvironmentStatusField `json:"status" protobuf:"bytes,3,opt,name=status,casttype=PromotionRunEnvironmentStatusField"`
	DisplayStatus   string                             `json:"displayStatus" protobuf:"bytes,4,opt,name=displayStatus"`

	// StartTime is when the controller began the step: when it first wrote the step's status,
	// in the pass that pointed the binding at the Snapshot (or found it there).
	//
	// StartTime and CompletionTime are extensions beyond application-api, whose wire format
	// PromotionRun otherwise follows: clients built on application-api ignore them, and steps
	// written before they existed have neither.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,5,opt,name=startTime"`
	// CompletionTime is when the step ended, with status Success or Failed; it is not before
	// StartTime. An extension beyond application-api, as StartTime is.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,6,opt,name=completionTime"`
}

// PromotionRunCondition is one observation about a PromotionRun.
type PromotionRunCondition struct {
	Type PromotionRunConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=PromotionRunConditionType"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// +optional
	LastTransitionTime *metav1.Time                `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	Status             PromotionRunConditionStatus `json:"status" protobuf:"bytes,5,opt,name=status,casttype=PromotionRunConditionStatus"`
	// +optional
	Reason PromotionRunReasonType `json:"reason,omitempty" protobuf:"bytes,6,opt,name=reason,casttype=PromotionRunReasonType"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionRunList is a list of PromotionRuns.
type PromotionRunList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []PromotionRun `json:"items" protobuf:"bytes,2,rep,name=items"`
}
