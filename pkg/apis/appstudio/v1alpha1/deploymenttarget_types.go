package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentTargetClassName names a DeploymentTargetClass.
type DeploymentTargetClassName string

// DeploymentTargetPhase is where a DeploymentTarget is in its life, as a PersistentVolume's phase.
type DeploymentTargetPhase string

const (
	DeploymentTargetPhasePending   DeploymentTargetPhase = "Pending"
	DeploymentTargetPhaseAvailable DeploymentTargetPhase = "Available"
	DeploymentTargetPhaseBound     DeploymentTargetPhase = "Bound"
	DeploymentTargetPhaseReleased  DeploymentTargetPhase = "Released"
	DeploymentTargetPhaseFailed    DeploymentTargetPhase = "Failed"
)

// Finalizer, annotations and labels of DeploymentTargets, DeploymentTargetClaims and the
// SpaceRequests that provision them.
const (
	DeploymentTargetFinalizer = "dt.appstudio.redhat.com/finalizer"
	FinalizerBinder           = "binder.appstudio.redhat.com/finalizer"

	AnnBindCompleted          = "dt.appstudio.redhat.com/bind-complete"
	AnnBoundByController      = "dt.appstudio.redhat.com/bound-by-controller"
	AnnTargetProvisioner      = "provisioner.appstudio.redhat.com/dt-provisioner"
	AnnDynamicallyProvisioned = "provisioner.appstudio.redhat.com/provisioned-by"
	AnnBinderValueTrue        = "true"
	// AnnClaimUID, on a DeploymentTarget, is the UID of the claim the binder bound it to (not
	// in application-api, whose claimRef is a bare name). A claim of the same name made
	// after that one was deleted is another claim: it does not inherit the target, as a
	// PersistentVolume's claimRef.uid keeps a new claim of the old name off the volume.
	AnnClaimUID = "binder.managed-gitops.redhat.com/claim-uid"

	DeploymentTargetClaimLabel = "appstudio.openshift.io/dtc"
	DeploymentTargetLabel      = "appstudio.openshift.io/dt"
)

// Condition type and reasons of DeploymentTargets and DeploymentTargetClaims.
const (
	DeploymentTargetConditionErrorOccurred = "ErrorOccurred"
	DeploymentTargetReasonErrorOccurred    = "ErrorOccurred"
	DeploymentTargetReasonSuccess          = "Success"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTarget is a namespace of a cluster and the credentials to deploy there, as a
// PersistentVolume is a volume.
type DeploymentTarget struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec DeploymentTargetSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status DeploymentTargetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DeploymentTargetSpec describes a DeploymentTarget.
type DeploymentTargetSpec struct {
	DeploymentTargetClassName    DeploymentTargetClassName                    `json:"deploymentTargetClassName" protobuf:"bytes,1,opt,name=deploymentTargetClassName,casttype=DeploymentTargetClassName"`
	KubernetesClusterCredentials DeploymentTargetKubernetesClusterCredentials `json:"kubernetesCredentials" protobuf:"bytes,2,opt,name=kubernetesCredentials"`
	// ClaimRef is the DeploymentTargetClaim in the same namespace that this target is bound to.
	// +optional
	ClaimRef string `json:"claimRef,omitempty" protobuf:"bytes,3,opt,name=claimRef"`
}

// DeploymentTargetKubernetesClusterCredentials are credentials for a namespace of a cluster.
type DeploymentTargetKubernetesClusterCredentials struct {
	// DefaultNamespace is the namespace the credentials give access to.
	DefaultNamespace string `json:"defaultNamespace" protobuf:"bytes,1,opt,name=defaultNamespace"`
	// APIURL is the https URL of the cluster's API server.
	APIURL string `json:"apiURL" protobuf:"bytes,2,opt,name=apiURL"`
	// ClusterCredentialsSecret is a Secret in the same namespace with a kubeconfig.
	ClusterCredentialsSecret   string `json:"clusterCredentialsSecret" protobuf:"bytes,3,opt,name=clusterCredentialsSecret"`
	AllowInsecureSkipTLSVerify bool   `json:"allowInsecureSkipTLSVerify" protobuf:"varint,4,opt,name=allowInsecureSkipTLSVerify"`
}

// DeploymentTargetStatus is the phase of a DeploymentTarget.
type DeploymentTargetStatus struct {
	// +optional
	Phase DeploymentTargetPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=DeploymentTargetPhase"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,2,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetList is a list of DeploymentTargets.
type DeploymentTargetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []DeploymentTarget `json:"items" protobuf:"bytes,2,rep,name=items"`
}
