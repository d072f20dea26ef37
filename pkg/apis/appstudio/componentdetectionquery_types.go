package appstudio

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentDetectionQuery asks application-service which Components a Git repository holds.
// It has the wire format of api/v1alpha1/componentdetectionquery_types.go of
// konflux-ci/application-api at commit 18f545e; this server only stores it.
type ComponentDetectionQuery struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ComponentDetectionQuerySpec `json:"spec"`
	// +optional
	Status ComponentDetectionQueryStatus `json:"status,omitempty"`
}

// ComponentDetectionQuerySpec is the repository to look into.
type ComponentDetectionQuerySpec struct {
	GitSource GitSource `json:"git"`
	// +optional
	Secret string `json:"secret,omitempty"`
	// GenerateComponentName asks for random suffixes instead of predictable component names.
	// +optional
	GenerateComponentName bool `json:"generateComponentName,omitempty"`
}

// ComponentDetectionDescription is one Component found.
type ComponentDetectionDescription struct {
	// +optional
	DevfileFound bool `json:"devfileFound,omitempty"`
	// +optional
	Language string `json:"language,omitempty"`
	// +optional
	ProjectType string `json:"projectType,omitempty"`
	// +optional
	ComponentStub ComponentSpec `json:"componentStub,omitempty"`
}

// ComponentDetectionMap is the Components found, by name.
type ComponentDetectionMap map[string]ComponentDetectionDescription

// ComponentDetectionQueryStatus is written by application-service.
type ComponentDetectionQueryStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ComponentDetected ComponentDetectionMap `json:"componentDetected,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentDetectionQueryList is a list of ComponentDetectionQueries.
type ComponentDetectionQueryList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentDetectionQuery `json:"items"`
}
