package v1alpha1

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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Operation records one change that the agent makes in Argo CD. It is internal to the
// service: only the service's own accounts may read or write it.
type Operation struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec OperationSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status OperationStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// OperationSpec is the change to make.
type OperationSpec struct {
	// OperationID identifies the change.
	// +optional
	OperationID string `json:"operationID,omitempty" protobuf:"bytes,1,opt,name=operationID"`
	// ResourceType is the kind of Argo CD object that is changed.
	// +optional
	ResourceType OperationResourceType `json:"resourceType,omitempty" protobuf:"bytes,2,opt,name=resourceType,casttype=OperationResourceType"`
	// Target is the Argo CD object that is changed.
	// +optional
	Target OperationTarget `json:"target,omitempty" protobuf:"bytes,3,opt,name=target"`
	// Source is the GitOps object whose change caused this operation.
	// +optional
	Source OperationSource `json:"source,omitempty" protobuf:"bytes,4,opt,name=source"`
}

// OperationTarget is an object in the Argo CD namespace.
type OperationTarget struct {
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,1,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,3,opt,name=name"`
}

// OperationSource is a GitOps API object.
type OperationSource struct {
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,1,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,3,opt,name=name"`
	// +optional
	UID string `json:"uid,omitempty" protobuf:"bytes,4,opt,name=uid"`
}

// OperationStatus is the progress of the change.
type OperationStatus struct {
	// +optional
	State OperationStateType `json:"state,omitempty" protobuf:"bytes,1,opt,name=state,casttype=OperationStateType"`
	// Message is a human-readable description of the outcome, or of the last error.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
	// Attempts counts how often the agent has tried the change.
	// +optional
	Attempts int32 `json:"attempts,omitempty" protobuf:"varint,3,opt,name=attempts"`
	// LastStateUpdate is when State last changed.
	// +optional
	LastStateUpdate *metav1.Time `json:"lastStateUpdate,omitempty" protobuf:"bytes,4,opt,name=lastStateUpdate"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// OperationList is a list of Operations.
type OperationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Operation `json:"items" protobuf:"bytes,2,rep,name=items"`
}
