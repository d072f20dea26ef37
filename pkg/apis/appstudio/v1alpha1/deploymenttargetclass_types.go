package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provisioner names what provisions DeploymentTargets of a class.
type Provisioner string

const (
	// ProvisionerDevSandbox provisions namespaces through SpaceRequests.
	ProvisionerDevSandbox Provisioner = "appstudio.redhat.com/devsandbox"
	// ProvisionerNamespace provisions namespaces on the service's own host cluster (the
	// namespace provisioner); its classes may set parameters.namespace.
	ProvisionerNamespace Provisioner = "managed-gitops.redhat.com/namespace"
)

// Labels the namespace provisioner puts on every namespace it makes (besides others of its own):
// the server and the placement read them, so they are part of the contract, not only the
// provisioner's bookkeeping. Only the provisioner may write a namespace carrying them
// (artifacts/admission-policy), and tenants write no namespace.
const (
	// LabelProvisionedTarget is the name of the DeploymentTarget the namespace serves: the mark
	// of a namespace the provisioner made.
	LabelProvisionedTarget = "namespace.provisioner.managed-gitops.redhat.com/target"
	// LabelProvisionedClaimNamespace is the namespace of the claim the namespace was made for.
	LabelProvisionedClaimNamespace = "namespace.provisioner.managed-gitops.redhat.com/claim-namespace"
)

// ReclaimPolicy is what happens to a DeploymentTarget when its claim is deleted.
type ReclaimPolicy string

const (
	ReclaimPolicyDelete ReclaimPolicy = "Delete"
	ReclaimPolicyRetain ReclaimPolicy = "Retain"
)

// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClass is a kind of DeploymentTarget and how it is provisioned, as a
// StorageClass is for volumes. It is cluster-scoped.
type DeploymentTargetClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec DeploymentTargetClassSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status DeploymentTargetClassStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DeploymentTargetClassSpec describes a DeploymentTargetClass.
type DeploymentTargetClassSpec struct {
	Provisioner Provisioner `json:"provisioner" protobuf:"bytes,1,opt,name=provisioner,casttype=Provisioner"`
	// Parameters are the provisioner's settings. application-api's have no fields; this
	// service adds Namespace, for the provisioner ProvisionerNamespace only.
	// +optional
	Parameters DeploymentTargetParameters `json:"parameters,omitempty" protobuf:"bytes,2,opt,name=parameters"`
	// ReclaimPolicy is Delete (the default) or Retain.
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy" protobuf:"bytes,3,opt,name=reclaimPolicy,casttype=ReclaimPolicy"`
}

// DeploymentTargetParameters are parameters of a provisioner. An empty object, all that
// application-api knows, stays valid for every provisioner.
type DeploymentTargetParameters struct {
	// Namespace configures the managed-gitops.redhat.com/namespace provisioner (beyond
	// application-api, whose parameters are empty). It may only be set on classes of that
	// provisioner.
	// +optional
	Namespace *NamespaceProvisionerParameters `json:"namespace,omitempty" protobuf:"bytes,1,opt,name=namespace"`
}

// NamespaceProvisionerParameters are the settings of the managed-gitops.redhat.com/namespace
// provisioner: what each namespace it makes for a claim of the class gets.
type NamespaceProvisionerParameters struct {
	// TTL, when set, is how long after its DeploymentTarget was provisioned the claim is
	// deleted; the class's reclaimPolicy then applies to the target. At least 1m.
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty" protobuf:"bytes,1,opt,name=ttl"`
	// TokenExpiration is the lifetime of the ServiceAccount tokens in the target's kubeconfig
	// Secret, which are renewed at 80% of it: 24h when unset, at least 10m (the TokenRequest
	// API's minimum) and at most 8760h.
	// +optional
	TokenExpiration *metav1.Duration `json:"tokenExpiration,omitempty" protobuf:"bytes,2,opt,name=tokenExpiration"`
	// ResourceQuota is the hard limits of a ResourceQuota in each namespace, e.g.
	// requests.cpu: "2", requests.memory: 4Gi, count/pods: "20". Unset: the provisioner's
	// default quota (docs/deployment-target-classes.md).
	// +optional
	ResourceQuota corev1.ResourceList `json:"resourceQuota,omitempty" protobuf:"bytes,3,rep,name=resourceQuota,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// ContainerLimits are the limits of a LimitRange of type Container in each namespace.
	// Unset: the provisioner's default limits (docs/deployment-target-classes.md).
	// +optional
	ContainerLimits *ContainerLimits `json:"containerLimits,omitempty" protobuf:"bytes,4,opt,name=containerLimits"`
	// PodSecurityLevel is the Pod Security Standard that each namespace enforces, audits and
	// warns about (its pod-security.kubernetes.io/enforce, audit and warn labels): restricted
	// (the default), baseline or privileged.
	// +optional
	PodSecurityLevel PodSecurityLevel `json:"podSecurityLevel,omitempty" protobuf:"bytes,5,opt,name=podSecurityLevel,casttype=PodSecurityLevel"`
	// NetworkPolicy is what the NetworkPolicy of each namespace lets in; it denies every other
	// ingress. Unset: the namespace's own pods only.
	// +optional
	NetworkPolicy *NamespaceNetworkPolicy `json:"networkPolicy,omitempty" protobuf:"bytes,6,opt,name=networkPolicy"`
	// Labels are put on each namespace, besides the provisioner's own and the Pod Security
	// labels, which they may not name.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,7,rep,name=labels"`
	// Annotations are put on each namespace, besides the provisioner's own.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,8,rep,name=annotations"`
	// MaxClaimsPerNamespace is the most DeploymentTargetClaims (of every class) a namespace
	// may hold for a claim of this class to be created there: the server refuses the claim
	// that would be one too many. Unset: the server's
	// --max-deployment-target-claims-per-namespace.
	// +optional
	MaxClaimsPerNamespace *int32 `json:"maxClaimsPerNamespace,omitempty" protobuf:"varint,9,opt,name=maxClaimsPerNamespace"`
}

// PodSecurityLevel is a Pod Security Standard.
type PodSecurityLevel string

const (
	PodSecurityRestricted PodSecurityLevel = "restricted"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityPrivileged PodSecurityLevel = "privileged"
)

// NamespaceNetworkPolicy is the ingress a provisioned namespace admits; the rest is denied.
type NamespaceNetworkPolicy struct {
	// AllowFromSameNamespace admits the namespace's own pods; true when unset.
	// +optional
	AllowFromSameNamespace *bool `json:"allowFromSameNamespace,omitempty" protobuf:"varint,1,opt,name=allowFromSameNamespace"`
	// AllowFromNamespaces admits the pods of the namespaces that any of these selectors
	// selects, such as an ingress controller's or monitoring's.
	// +optional
	// +listType=atomic
	AllowFromNamespaces []metav1.LabelSelector `json:"allowFromNamespaces,omitempty" protobuf:"bytes,2,rep,name=allowFromNamespaces"`
}

// ContainerLimits are the per-container limits of a LimitRange (a LimitRangeItem of type
// Container). For a resource, min <= defaultRequest <= default <= max where set.
type ContainerLimits struct {
	// Default is the limit of a container that sets none.
	// +optional
	Default corev1.ResourceList `json:"default,omitempty" protobuf:"bytes,1,rep,name=default,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// DefaultRequest is the request of a container that sets none.
	// +optional
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty" protobuf:"bytes,2,rep,name=defaultRequest,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// Max is the largest limit a container may set.
	// +optional
	Max corev1.ResourceList `json:"max,omitempty" protobuf:"bytes,3,rep,name=max,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// Min is the smallest request a container may set.
	// +optional
	Min corev1.ResourceList `json:"min,omitempty" protobuf:"bytes,4,rep,name=min,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
	// MaxLimitRequestRatio is the largest ratio of a container's limit to its request; at
	// least 1.
	// +optional
	MaxLimitRequestRatio corev1.ResourceList `json:"maxLimitRequestRatio,omitempty" protobuf:"bytes,5,rep,name=maxLimitRequestRatio,casttype=k8s.io/api/core/v1.ResourceList,castkey=k8s.io/api/core/v1.ResourceName"`
}

// DeploymentTargetClassStatus is empty.
type DeploymentTargetClassStatus struct{}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentTargetClassList is a list of DeploymentTargetClasses.
type DeploymentTargetClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []DeploymentTargetClass `json:"items" protobuf:"bytes,2,rep,name=items"`
}
