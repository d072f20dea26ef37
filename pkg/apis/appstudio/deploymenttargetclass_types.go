package appstudio

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provisioner names what provisions DeploymentTargets of a class.
type Provisioner string

// ProvisionerDevSandbox provisions namespaces through SpaceRequests.
const ProvisionerDevSandbox Provisioner = "appstudio.redhat.com/devsandbox"

// ReclaimPolicy is what happens to a DeploymentTarget when its claim is deleted.
type ReclaimPolicy string

const (
	ReclaimPolicyDelete ReclaimPolicy = "Delete"
	ReclaimPolicyRetain ReclaimPolicy = "Retain"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClass is a kind of DeploymentTarget and how it is provisioned, as a
// StorageClass is for volumes. It is cluster-scoped.
type DeploymentTargetClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec DeploymentTargetClassSpec `json:"spec,omitempty"`
	// +optional
	Status DeploymentTargetClassStatus `json:"status,omitempty"`
}

// DeploymentTargetClassSpec describes a DeploymentTargetClass.
type DeploymentTargetClassSpec struct {
	Provisioner Provisioner `json:"provisioner"`
	// Parameters has no fields yet.
	// +optional
	Parameters DeploymentTargetParameters `json:"parameters,omitempty"`
	// ReclaimPolicy is Delete (the default) or Retain.
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy"`
}

// DeploymentTargetParameters are parameters of a provisioner.
type DeploymentTargetParameters struct{}

// DeploymentTargetClassStatus is empty.
type DeploymentTargetClassStatus struct{}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClassList is a list of DeploymentTargetClasses.
type DeploymentTargetClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeploymentTargetClass `json:"items"`
}
