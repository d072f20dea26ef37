package appstudio

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Component is one buildable, deployable part of an Application. It has the wire format of
// api/v1alpha1/component_types.go of konflux-ci/application-api at commit 18f545e;
// application-service reconciles it, this server only stores it.
type Component struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ComponentSpec `json:"spec"`
	// +optional
	Status ComponentStatus `json:"status,omitempty"`
}

// ComponentSpec is what the user asks of a Component. ComponentName, Application and the Git
// source's URL are immutable.
type ComponentSpec struct {
	// ComponentName is the component's name in its Application, a DNS-1123 label.
	ComponentName string `json:"componentName"`
	// Application is the Application in the same namespace that the Component belongs to.
	Application string `json:"application"`
	// Secret is the Secret with the token for the Git repository or the pull secret for the image.
	// +optional
	Secret string `json:"secret,omitempty"`
	// Source is the Git repository the Component is built from; without one, ContainerImage
	// is required on create.
	// +optional
	Source ComponentSource `json:"source,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Upstream's Go ints are int32 here, as Kubernetes' API conventions and this group's
	// SnapshotEnvironmentBinding have them: the JSON is the same, and every valid count and
	// port fits.

	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// +optional
	TargetPort int32 `json:"targetPort,omitempty"`
	// +optional
	Route string `json:"route,omitempty"`
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// ContainerImage is the image built, or deployed as it is.
	// +optional
	ContainerImage string `json:"containerImage,omitempty"`
	// +optional
	SkipGitOpsResourceGeneration bool `json:"skipGitOpsResourceGeneration,omitempty"`
	// BuildNudgesRef are the Components whose builds a successful build of this one nudges.
	// +optional
	// +listType=atomic
	BuildNudgesRef []string `json:"build-nudges-ref,omitempty"`
}

// ComponentStatus is written by application-service.
type ComponentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	Webhook string `json:"webhook,omitempty"`
	// +optional
	ContainerImage string `json:"containerImage,omitempty"`
	// +optional
	Devfile string `json:"devfile,omitempty"`
	// +optional
	GitOps GitOpsStatus `json:"gitops,omitempty"`
	// +optional
	LastBuiltCommit string `json:"lastBuiltCommit,omitempty"`
	// BuildNudgedBy are the Components whose spec.build-nudges-ref names this one.
	// +optional
	// +listType=atomic
	BuildNudgedBy []string `json:"build-nudged-by,omitempty"`
}

// GitOpsStatus is where application-service keeps a Component's GitOps resources.
type GitOpsStatus struct {
	// +optional
	RepositoryURL string `json:"repositoryURL,omitempty"`
	// +optional
	Branch string `json:"branch,omitempty"`
	// +optional
	Context string `json:"context,omitempty"`
	// +optional
	ResourceGenerationSkipped bool `json:"resourceGenerationSkipped,omitempty"`
	// +optional
	CommitID string `json:"commitID,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentList is a list of Components.
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Component `json:"items"`
}
