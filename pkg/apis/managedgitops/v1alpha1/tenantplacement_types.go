package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelTenantOwner on a namespace names the owner its tenancy counts against: the placement
// keeps each owner's tenants to a share of every instance's capacity (the agent's
// --placement-max-owner-share), so that one owner's namespaces cannot take the whole fleet.
// Set by admins (tenants cannot write namespaces). A namespace without it that the namespace
// provisioner made has the owner of the namespace of the claim it was made for; any other is
// its own owner.
const LabelTenantOwner = "managed-gitops.redhat.com/tenant-owner"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantPlacement places one tenant namespace, its name, on one ArgoCDInstance: the agents of
// that instance alone reconcile the namespace's GitOps objects into Argo CD. The service
// places each namespace that has GitOps objects on the least loaded instance with room, and
// keeps it there; an admin may pin it to an instance. It is cluster-scoped and internal to
// the service.
//
// A move is a hand-over through status.instance, the instance that holds the tenant: the
// holder's agent, seeing spec.instance name another, removes the tenant's Argo CD objects
// (but not what they deployed) and clears status.instance; only then may the new instance's
// agent take the tenant. So no two instances ever sync a tenant's Applications at once.
type TenantPlacement struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec TenantPlacementSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status TenantPlacementStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// TenantPlacementSpec is where the tenant should be.
type TenantPlacementSpec struct {
	// Instance is the ArgoCDInstance the tenant is placed on; empty while no instance has room.
	// +optional
	Instance string `json:"instance,omitempty" protobuf:"bytes,1,opt,name=instance"`
	// Pinned keeps the tenant on Instance: the service never moves it, not even off a draining
	// instance. Set by admins.
	// +optional
	Pinned bool `json:"pinned,omitempty" protobuf:"varint,2,opt,name=pinned"`
}

// TenantPlacementStatus is where the tenant is.
type TenantPlacementStatus struct {
	// Instance is the ArgoCDInstance that holds the tenant now, whose agent reconciles its
	// objects; empty while none does. It only ever changes to or from empty: an instance
	// releases a tenant before another takes it.
	// +optional
	Instance string `json:"instance,omitempty" protobuf:"bytes,1,opt,name=instance"`
	// Message says why the tenant is not held where it is placed, when it is not.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
	// LastTransitionTime is when Instance last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,3,opt,name=lastTransitionTime"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantPlacementList is a list of TenantPlacements.
type TenantPlacementList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []TenantPlacement `json:"items" protobuf:"bytes,2,rep,name=items"`
}
