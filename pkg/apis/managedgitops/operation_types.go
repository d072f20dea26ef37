package managedgitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperationResourceType is the kind of Argo CD object an Operation changes.
type OperationResourceType string

const (
	OperationResourceTypeApplication           OperationResourceType = "Application"
	OperationResourceTypeSyncOperation         OperationResourceType = "SyncOperation"
	OperationResourceTypeManagedEnvironment    OperationResourceType = "ManagedEnvironment"
	OperationResourceTypeRepositoryCredentials OperationResourceType = "RepositoryCredentials"
	OperationResourceTypeAppProject            OperationResourceType = "AppProject"
)

// OperationStateType is where an Operation is in its life.
type OperationStateType string

const (
	OperationStateWaiting    OperationStateType = "Waiting"
	OperationStateInProgress OperationStateType = "In_Progress"
	OperationStateCompleted  OperationStateType = "Completed"
	OperationStateFailed     OperationStateType = "Failed"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Operation records one change that the agent makes in Argo CD. It is internal to the
// service: only the service's own accounts may read or write it.
type Operation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec OperationSpec `json:"spec,omitempty"`
	// +optional
	Status OperationStatus `json:"status,omitempty"`
}

// OperationSpec is the change to make.
type OperationSpec struct {
	// OperationID identifies the change.
	// +optional
	OperationID string `json:"operationID,omitempty"`
	// ResourceType is the kind of Argo CD object that is changed.
	// +optional
	ResourceType OperationResourceType `json:"resourceType,omitempty"`
	// Target is the Argo CD object that is changed.
	// +optional
	Target OperationTarget `json:"target,omitempty"`
	// Source is the GitOps object whose change caused this operation.
	// +optional
	Source OperationSource `json:"source,omitempty"`
}

// OperationTarget is an object in the Argo CD namespace.
type OperationTarget struct {
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}

// OperationSource is a GitOps API object.
type OperationSource struct {
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	UID string `json:"uid,omitempty"`
}

// OperationStatus is the progress of the change.
type OperationStatus struct {
	// +optional
	State OperationStateType `json:"state,omitempty"`
	// Message is a human-readable description of the outcome, or of the last error.
	// +optional
	Message string `json:"message,omitempty"`
	// Attempts counts how often the agent has tried the change.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// LastStateUpdate is when State last changed.
	// +optional
	LastStateUpdate *metav1.Time `json:"lastStateUpdate,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OperationList is a list of Operations.
type OperationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Operation `json:"items"`
}
