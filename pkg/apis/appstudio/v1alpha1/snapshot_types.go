package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Snapshot is a set of container images, one per component of an Application.
type Snapshot struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec SnapshotSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status SnapshotStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// SnapshotSpec is the images of a Snapshot. Application and Components are immutable.
type SnapshotSpec struct {
	// Application is the Application in the same namespace.
	Application string `json:"application" protobuf:"bytes,1,opt,name=application"`
	// +optional
	DisplayName string `json:"displayName,omitempty" protobuf:"bytes,2,opt,name=displayName"`
	// +optional
	DisplayDescription string `json:"displayDescription,omitempty" protobuf:"bytes,3,opt,name=displayDescription"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []SnapshotComponent `json:"components,omitempty" protobuf:"bytes,4,rep,name=components"`
	// +optional
	Artifacts SnapshotArtifacts `json:"artifacts,omitempty" protobuf:"bytes,5,opt,name=artifacts"`
}

// SnapshotComponent is the image of one component.
type SnapshotComponent struct {
	Name           string `json:"name" protobuf:"bytes,1,opt,name=name"`
	ContainerImage string `json:"containerImage" protobuf:"bytes,2,opt,name=containerImage"`
	// +optional
	Source ComponentSource `json:"source,omitempty" protobuf:"bytes,3,opt,name=source"`
}

// ComponentSource is where a component was built from.
type ComponentSource struct {
	// +optional
	GitSource *GitSource `json:"git,omitempty" protobuf:"bytes,1,opt,name=git"`
}

// GitSource is a Git repository.
type GitSource struct {
	URL string `json:"url" protobuf:"bytes,1,opt,name=url"`
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,2,opt,name=revision"`
	// +optional
	Context string `json:"context,omitempty" protobuf:"bytes,3,opt,name=context"`
	// +optional
	DevfileURL string `json:"devfileUrl,omitempty" protobuf:"bytes,4,opt,name=devfileUrl"`
	// +optional
	DockerfileURL string `json:"dockerfileUrl,omitempty" protobuf:"bytes,5,opt,name=dockerfileUrl"`
}

// SnapshotArtifacts holds untyped artifact data.
type SnapshotArtifacts struct {
	// UnstableFields is arbitrary JSON.
	// +optional
	UnstableFields *runtime.RawExtension `json:"unstableFields,omitempty" protobuf:"bytes,1,opt,name=unstableFields"`
}

// SnapshotStatus is written by other components; the GitOps Service does not use it.
type SnapshotStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions" protobuf:"bytes,1,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotList is a list of Snapshots.
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Snapshot `json:"items" protobuf:"bytes,2,rep,name=items"`
}
