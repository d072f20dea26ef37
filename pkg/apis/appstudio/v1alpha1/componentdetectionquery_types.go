package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentDetectionQuery asks application-service which Components a Git repository holds.
// It has the wire format of api/v1alpha1/componentdetectionquery_types.go of
// konflux-ci/application-api at commit 18f545e; this server only stores it.
type ComponentDetectionQuery struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec ComponentDetectionQuerySpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ComponentDetectionQueryStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ComponentDetectionQuerySpec is the repository to look into.
type ComponentDetectionQuerySpec struct {
	GitSource GitSource `json:"git" protobuf:"bytes,1,opt,name=git"`
	// +optional
	Secret string `json:"secret,omitempty" protobuf:"bytes,2,opt,name=secret"`
	// GenerateComponentName asks for random suffixes instead of predictable component names.
	// +optional
	GenerateComponentName bool `json:"generateComponentName,omitempty" protobuf:"varint,3,opt,name=generateComponentName"`
}

// ComponentDetectionDescription is one Component found.
type ComponentDetectionDescription struct {
	// +optional
	DevfileFound bool `json:"devfileFound,omitempty" protobuf:"varint,1,opt,name=devfileFound"`
	// +optional
	Language string `json:"language,omitempty" protobuf:"bytes,2,opt,name=language"`
	// +optional
	ProjectType string `json:"projectType,omitempty" protobuf:"bytes,3,opt,name=projectType"`
	// +optional
	ComponentStub ComponentSpec `json:"componentStub,omitempty" protobuf:"bytes,4,opt,name=componentStub"`
}

// ComponentDetectionMap is the Components found, by name.
type ComponentDetectionMap map[string]ComponentDetectionDescription

// ComponentDetectionQueryStatus is written by application-service.
type ComponentDetectionQueryStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
	// +optional
	ComponentDetected ComponentDetectionMap `json:"componentDetected,omitempty" protobuf:"bytes,2,rep,name=componentDetected,casttype=ComponentDetectionMap"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentDetectionQueryList is a list of ComponentDetectionQueries.
type ComponentDetectionQueryList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ComponentDetectionQuery `json:"items" protobuf:"bytes,2,rep,name=items"`
}
