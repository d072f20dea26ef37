package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentHold keeps the GitOpsDeployment of the same name at one commit until it is
// deleted (released): while it exists, Argo CD deploys spec.revision whatever the deployment's
// spec.source.targetRevision says, so that neither a new commit under automated sync nor an
// automated promotion rewriting the deployment undoes a rollback. It is a kind of its own, not
// a field of GitOpsDeployment, because clients built on the original structs drop unknown
// fields when they update a deployment.
type GitOpsDeploymentHold struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec GitOpsDeploymentHoldSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status GitOpsDeploymentHoldStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// GitOpsDeploymentHoldSpec is where the deployment is held, and why.
type GitOpsDeploymentHoldSpec struct {
	// Revision is the commit (or any revision Argo CD resolves) the deployment is held at.
	Revision string `json:"revision" protobuf:"bytes,1,opt,name=revision"`
	// DeploymentRecord is the DeploymentRecord the revision was taken from, for people.
	// +optional
	DeploymentRecord string `json:"deploymentRecord,omitempty" protobuf:"bytes,2,opt,name=deploymentRecord"`
	// Reason is why the deployment is held.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,3,opt,name=reason"`
	// HeldBy is who made the hold: the server sets it from the request on create, whatever the
	// client sent, and keeps it on every update.
	// +optional
	HeldBy string `json:"heldBy,omitempty" protobuf:"bytes,4,opt,name=heldBy"`
	// ReleaseOn is what releases the hold besides its deletion: Manual (the default) keeps it
	// until someone deletes it; NewCommit has the agent delete it as soon as the deployment's
	// own spec.source.targetRevision (a branch) resolves to another commit than it did when the
	// agent first saw the hold's current spec (status.baseRevision): the fix the rollback waited
	// for arrived. Changing the spec (moving the hold, switching it to NewCommit) takes the base
	// again from the branch as it is then.
	// +optional
	ReleaseOn HoldReleasePolicy `json:"releaseOn,omitempty" protobuf:"bytes,5,opt,name=releaseOn,casttype=HoldReleasePolicy"`
}

// HoldReleasePolicy is what releases a GitOpsDeploymentHold.
type HoldReleasePolicy string

const (
	// HoldReleaseManual: only deleting the hold releases it.
	HoldReleaseManual HoldReleasePolicy = "Manual"
	// HoldReleaseNewCommit: the agent deletes the hold once the deployment's targetRevision
	// resolves to a commit other than status.baseRevision.
	HoldReleaseNewCommit HoldReleasePolicy = "NewCommit"
)

// GitOpsDeploymentHoldStatus is whether the agent has put the hold in effect.
type GitOpsDeploymentHoldStatus struct {
	// ObservedGeneration is the generation of the spec the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	// Holding is true when the deployment's Argo CD Application is at spec.revision.
	// +optional
	Holding bool `json:"holding,omitempty" protobuf:"varint,2,opt,name=holding"`
	// Message says where the hold stands ("Holding at <revision>", or why it is not in effect).
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// BaseRevision is, for a hold released on NewCommit, the commit the deployment's
	// spec.source.targetRevision resolved to when the agent first saw the hold's current spec
	// (generation observedGeneration): the commit that was current when the user rolled back or
	// last changed the hold. Another commit there releases the hold. A changed spec has it taken
	// again; a hold not released on NewCommit has none.
	// +optional
	BaseRevision string `json:"baseRevision,omitempty" protobuf:"bytes,4,opt,name=baseRevision"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentHoldList is a list of GitOpsDeploymentHolds.
type GitOpsDeploymentHoldList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []GitOpsDeploymentHold `json:"items" protobuf:"bytes,2,rep,name=items"`
}
