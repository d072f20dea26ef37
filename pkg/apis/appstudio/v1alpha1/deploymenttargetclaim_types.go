package v1alpha1

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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClaim asks for a DeploymentTarget, as a PersistentVolumeClaim asks for a volume.
type DeploymentTargetClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec DeploymentTargetClaimSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status DeploymentTargetClaimStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DeploymentTargetClaimSpec describes the wanted DeploymentTarget.
type DeploymentTargetClaimSpec struct {
	DeploymentTargetClassName DeploymentTargetClassName `json:"deploymentTargetClassName" protobuf:"bytes,1,opt,name=deploymentTargetClassName,casttype=DeploymentTargetClassName"`
	// TargetName is the DeploymentTarget in the same namespace to bind to.
	// +optional
	TargetName string `json:"targetName,omitempty" protobuf:"bytes,2,opt,name=targetName"`
}

// DeploymentTargetClaimStatus is the phase of a DeploymentTargetClaim.
type DeploymentTargetClaimStatus struct {
	// +optional
	Phase DeploymentTargetClaimPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=DeploymentTargetClaimPhase"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClaimList is a list of DeploymentTargetClaims.
type DeploymentTargetClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []DeploymentTargetClaim `json:"items" protobuf:"bytes,2,rep,name=items"`
}
