package appstudio

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentTargetClaimPhase is where a DeploymentTargetClaim is, as a PersistentVolumeClaim's phase.
type DeploymentTargetClaimPhase string

const (
	DeploymentTargetClaimPhasePending DeploymentTargetClaimPhase = "Pending"
	DeploymentTargetClaimPhaseBound   DeploymentTargetClaimPhase = "Bound"
	DeploymentTargetClaimPhaseLost    DeploymentTargetClaimPhase = "Lost"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClaim asks for a DeploymentTarget, as a PersistentVolumeClaim asks for a volume.
type DeploymentTargetClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec DeploymentTargetClaimSpec `json:"spec,omitempty"`
	// +optional
	Status DeploymentTargetClaimStatus `json:"status,omitempty"`
}

// DeploymentTargetClaimSpec describes the wanted DeploymentTarget.
type DeploymentTargetClaimSpec struct {
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName"`
	// TargetName is the DeploymentTarget in the same namespace to bind to.
	// +optional
	TargetName string `json:"targetName,omitempty"`
}

// DeploymentTargetClaimStatus is the phase of a DeploymentTargetClaim.
type DeploymentTargetClaimStatus struct {
	// +optional
	Phase DeploymentTargetClaimPhase `json:"phase,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClaimList is a list of DeploymentTargetClaims.
type DeploymentTargetClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeploymentTargetClaim `json:"items"`
}
