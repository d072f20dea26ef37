package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Application is a set of Components deployed together. It has the wire format of
// api/v1alpha1/application_types.go of konflux-ci/application-api at commit 18f545e;
// application-service reconciles it, this server only stores it.
type Application struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec ApplicationSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ApplicationStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ApplicationSpec is what the user asks of an Application. The two repositories are immutable.
type ApplicationSpec struct {
	// DisplayName is the name users see; required on create.
	DisplayName string `json:"displayName" protobuf:"bytes,1,opt,name=displayName"`
	// AppModelRepository holds the application model (a devfile); generated when empty.
	// +optional
	AppModelRepository ApplicationGitRepository `json:"appModelRepository,omitempty" protobuf:"bytes,2,opt,name=appModelRepository"`
	// GitOpsRepository holds the generated GitOps resources; generated when empty.
	// +optional
	GitOpsRepository ApplicationGitRepository `json:"gitOpsRepository,omitempty" protobuf:"bytes,3,opt,name=gitOpsRepository"`
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,4,opt,name=description"`
}

// ApplicationGitRepository is a Git repository of an Application; application-service
// generates one when URL is empty.
type ApplicationGitRepository struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	Branch string `json:"branch,omitempty" protobuf:"bytes,2,opt,name=branch"`
	// +optional
	Context string `json:"context,omitempty" protobuf:"bytes,3,opt,name=context"`
}

// ApplicationStatus is written by application-service.
type ApplicationStatus struct {
	// Conditions are application-service's observations of the Application.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions" protobuf:"bytes,1,rep,name=conditions"`
	// Devfile is the devfile model of the Application.
	// +optional
	Devfile string `json:"devfile,omitempty" protobuf:"bytes,2,opt,name=devfile"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ApplicationList is a list of Applications.
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Application `json:"items" protobuf:"bytes,2,rep,name=items"`
}
