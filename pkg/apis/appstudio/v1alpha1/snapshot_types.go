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
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec SnapshotSpec `json:"spec,omitempty"`
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotSpec is the images of a Snapshot. Application and Components are immutable.
type SnapshotSpec struct {
	// Application is the Application in the same namespace.
	Application string `json:"application"`
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// +optional
	DisplayDescription string `json:"displayDescription,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []SnapshotComponent `json:"components,omitempty"`
	// +optional
	Artifacts SnapshotArtifacts `json:"artifacts,omitempty"`
}

// SnapshotComponent is the image of one component.
type SnapshotComponent struct {
	Name           string `json:"name"`
	ContainerImage string `json:"containerImage"`
	// +optional
	Source ComponentSource `json:"source,omitempty"`
}

// ComponentSource is where a component was built from.
type ComponentSource struct {
	// +optional
	GitSource *GitSource `json:"git,omitempty"`
}

// GitSource is a Git repository.
type GitSource struct {
	URL string `json:"url"`
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Context string `json:"context,omitempty"`
	// +optional
	DevfileURL string `json:"devfileUrl,omitempty"`
	// +optional
	DockerfileURL string `json:"dockerfileUrl,omitempty"`
}

// SnapshotArtifacts holds untyped artifact data.
type SnapshotArtifacts struct {
	// UnstableFields is arbitrary JSON.
	// +optional
	UnstableFields *runtime.RawExtension `json:"unstableFields,omitempty"`
}

// SnapshotStatus is written by other components; the GitOps Service does not use it.
type SnapshotStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SnapshotList is a list of Snapshots.
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}
