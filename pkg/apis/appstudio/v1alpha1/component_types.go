package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Component is one buildable, deployable part of an Application. It has the wire format of
// api/v1alpha1/component_types.go of konflux-ci/application-api at commit 18f545e;
// application-service reconciles it, this server only stores it.
type Component struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec ComponentSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ComponentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ComponentSpec is what the user asks of a Component. ComponentName, Application and the Git
// source's URL are immutable.
type ComponentSpec struct {
	// ComponentName is the component's name in its Application, a DNS-1123 label.
	ComponentName string `json:"componentName" protobuf:"bytes,13,opt,name=componentName"`
	// Application is the Application in the same namespace that the Component belongs to.
	Application string `json:"application" protobuf:"bytes,14,opt,name=application"`
	// Secret is the Secret with the token for the Git repository or the pull secret for the image.
	// +optional
	Secret string `json:"secret,omitempty" protobuf:"bytes,15,opt,name=secret"`
	// Source is the Git repository the Component is built from; without one, ContainerImage
	// is required on create.
	// +optional
	Source ComponentSource `json:"source,omitempty" protobuf:"bytes,16,opt,name=source"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty" protobuf:"bytes,17,opt,name=resources"`

	// Upstream's Go ints are int32 here, as Kubernetes' API conventions and this group's
	// SnapshotEnvironmentBinding have them: the JSON is the same, and every valid count and
	// port fits.

	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,18,opt,name=replicas"`
	// +optional
	TargetPort int32 `json:"targetPort,omitempty" protobuf:"varint,19,opt,name=targetPort"`
	// +optional
	Route string `json:"route,omitempty" protobuf:"bytes,20,opt,name=route"`
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty" protobuf:"bytes,21,rep,name=env"`
	// ContainerImage is the image built, or deployed as it is.
	// +optional
	ContainerImage string `json:"containerImage,omitempty" protobuf:"bytes,22,opt,name=containerImage"`
	// +optional
	SkipGitOpsResourceGeneration bool `json:"skipGitOpsResourceGeneration,omitempty" protobuf:"varint,23,opt,name=skipGitOpsResourceGeneration"`
	// BuildNudgesRef are the Components whose builds a successful build of this one nudges.
	// +optional
	// +listType=atomic
	BuildNudgesRef []string `json:"build-nudges-ref,omitempty" protobuf:"bytes,12,rep,name=buildNudgesRef"`
}

// ComponentStatus is written by application-service.
type ComponentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,8,rep,name=conditions"`
	// +optional
	Webhook string `json:"webhook,omitempty" protobuf:"bytes,9,opt,name=webhook"`
	// +optional
	ContainerImage string `json:"containerImage,omitempty" protobuf:"bytes,10,opt,name=containerImage"`
	// +optional
	Devfile string `json:"devfile,omitempty" protobuf:"bytes,11,opt,name=devfile"`
	// +optional
	GitOps GitOpsStatus `json:"gitops,omitempty" protobuf:"bytes,12,opt,name=gitops"`
	// +optional
	LastBuiltCommit string `json:"lastBuiltCommit,omitempty" protobuf:"bytes,13,opt,name=lastBuiltCommit"`
	// BuildNudgedBy are the Components whose spec.build-nudges-ref names this one.
	// +optional
	// +listType=atomic
	BuildNudgedBy []string `json:"build-nudged-by,omitempty" protobuf:"bytes,7,rep,name=buildNudgedBy"`
}

// GitOpsStatus is where application-service keeps a Component's GitOps resources.
type GitOpsStatus struct {
	// +optional
	RepositoryURL string `json:"repositoryURL,omitempty" protobuf:"bytes,1,opt,name=repositoryURL"`
	// +optional
	Branch string `json:"branch,omitempty" protobuf:"bytes,2,opt,name=branch"`
	// +optional
	Context string `json:"context,omitempty" protobuf:"bytes,3,opt,name=context"`
	// +optional
	ResourceGenerationSkipped bool `json:"resourceGenerationSkipped,omitempty" protobuf:"varint,4,opt,name=resourceGenerationSkipped"`
	// +optional
	CommitID string `json:"commitID,omitempty" protobuf:"bytes,5,opt,name=commitID"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ComponentList is a list of Components.
type ComponentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Component `json:"items" protobuf:"bytes,2,rep,name=items"`
}
