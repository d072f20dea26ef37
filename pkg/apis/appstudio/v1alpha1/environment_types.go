package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EnvironmentType is the deprecated type of an Environment.
type EnvironmentType string

const (
	EnvironmentTypePOC    EnvironmentType = "POC"
	EnvironmentTypeNonPOC EnvironmentType = "Non-POC"
)

// DeploymentStrategyType is how changes are promoted into an Environment.
type DeploymentStrategyType string

const (
	DeploymentStrategyManual             DeploymentStrategyType = "Manual"
	DeploymentStrategyAppStudioAutomated DeploymentStrategyType = "AppStudioAutomated"
)

// ConfigurationClusterType is the kind of cluster an Environment points at.
type ConfigurationClusterType string

const (
	ConfigurationClusterTypeKubernetes ConfigurationClusterType = "Kubernetes"
	ConfigurationClusterTypeOpenShift  ConfigurationClusterType = "OpenShift"
)

// Condition types and reasons of an Environment.
const (
	EnvironmentConditionErrorOccurred = "ErrorOccurred"
	EnvironmentConditionReconciled    = "Reconciled"
	// EnvironmentConditionPromotionGraphValid is False while the Environment cannot be promoted
	// into automatically: it, or an Environment above it, is in a cycle of parents or names a
	// parent that does not exist (reasons Cycle, ParentNotFound).
	EnvironmentConditionPromotionGraphValid = "PromotionGraphValid"

	EnvironmentReasonErrorOccurred                 = "ErrorOccurred"
	EnvironmentReasonDeploymentTargetClaimNotFound = "DeploymentTargetClaimNotFound"
	EnvironmentReasonDeploymentTargetNotFound      = "DeploymentTargetNotFound"
	EnvironmentReasonInvalidEnvironment            = "InvalidEnvironment"
	EnvironmentReasonSecretNotFound                = "SecretNotFound"
	// EnvironmentReasonResolvedSuffix is appended to a reason once the problem is gone.
	EnvironmentReasonResolvedSuffix = "Resolved"
)

// EnvironmentSecretLabel marks a Secret that the service copied for an Environment; its value
// is the Environment's name.
const EnvironmentSecretLabel = "appstudio.openshift.io/environment-secret"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Environment is a place that an application is deployed to: a namespace of the local cluster,
// a remote cluster, or a DeploymentTargetClaim.
type Environment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec EnvironmentSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status EnvironmentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// EnvironmentSpec describes an Environment.
type EnvironmentSpec struct {
	// Type is deprecated.
	// +optional
	Type EnvironmentType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=EnvironmentType"`
	// DisplayName is the name users see.
	DisplayName string `json:"displayName" protobuf:"bytes,2,opt,name=displayName"`
	// DeploymentStrategy is Manual or AppStudioAutomated.
	DeploymentStrategy DeploymentStrategyType `json:"deploymentStrategy" protobuf:"bytes,3,opt,name=deploymentStrategy,casttype=DeploymentStrategyType"`
	// ParentEnvironment is the Environment promoted from, in the promotion graph.
	// +optional
	ParentEnvironment string `json:"parentEnvironment,omitempty" protobuf:"bytes,4,opt,name=parentEnvironment"`
	// +optional
	// +listType=atomic
	Tags []string `json:"tags,omitempty" protobuf:"bytes,5,rep,name=tags"`
	// +optional
	Configuration EnvironmentConfiguration `json:"configuration,omitempty" protobuf:"bytes,6,opt,name=configuration"`
	// UnstableConfigurationFields holds the credentials of a remote cluster; it is expected to change.
	// +optional
	UnstableConfigurationFields *UnstableEnvironmentConfiguration `json:"unstableConfigurationFields,omitempty" protobuf:"bytes,7,opt,name=unstableConfigurationFields"`
}

// EnvironmentConfiguration is configuration for workloads deployed into the Environment.
type EnvironmentConfiguration struct {
	// +optional
	// +listType=atomic
	Env []EnvVarPair `json:"env,omitempty" protobuf:"bytes,1,rep,name=env"`
	// Target selects a DeploymentTargetClaim to deploy to.
	// +optional
	Target EnvironmentTarget `json:"target,omitempty" protobuf:"bytes,2,opt,name=target"`
}

// EnvironmentTarget points at a DeploymentTargetClaim.
type EnvironmentTarget struct {
	DeploymentTargetClaim DeploymentTargetClaimConfig `json:"deploymentTargetClaim" protobuf:"bytes,1,opt,name=deploymentTargetClaim"`
}

// DeploymentTargetClaimConfig names a DeploymentTargetClaim in the same namespace.
type DeploymentTargetClaimConfig struct {
	ClaimName string `json:"claimName" protobuf:"bytes,1,opt,name=claimName"`
}

// EnvVarPair is an environment variable.
type EnvVarPair struct {
	Name  string `json:"name" protobuf:"bytes,1,opt,name=name"`
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}

// UnstableEnvironmentConfiguration points an Environment at a remote cluster.
type UnstableEnvironmentConfiguration struct {
	// +optional
	ClusterType ConfigurationClusterType `json:"clusterType,omitempty" protobuf:"bytes,1,opt,name=clusterType,casttype=ConfigurationClusterType"`
	// +optional
	KubernetesClusterCredentials KubernetesClusterCredentials `json:"kubernetesCredentials,omitempty" protobuf:"bytes,2,opt,name=kubernetesCredentials"`
}

// KubernetesClusterCredentials are the API URL and credentials of a cluster.
type KubernetesClusterCredentials struct {
	// TargetNamespace is the namespace deployed to.
	TargetNamespace string `json:"targetNamespace" protobuf:"bytes,1,opt,name=targetNamespace"`
	// APIURL is the https URL of the cluster's API server.
	APIURL string `json:"apiURL" protobuf:"bytes,2,opt,name=apiURL"`
	// IngressDomain is the cluster's ingress domain; required for clusterType Kubernetes.
	// +optional
	IngressDomain string `json:"ingressDomain,omitempty" protobuf:"bytes,3,opt,name=ingressDomain"`
	// ClusterCredentialsSecret is a Secret of type managed-gitops.redhat.com/managed-environment.
	ClusterCredentialsSecret   string `json:"clusterCredentialsSecret" protobuf:"bytes,4,opt,name=clusterCredentialsSecret"`
	AllowInsecureSkipTLSVerify bool   `json:"allowInsecureSkipTLSVerify" protobuf:"varint,5,opt,name=allowInsecureSkipTLSVerify"`
	// +optional
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty" protobuf:"bytes,6,rep,name=namespaces"`
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty" protobuf:"varint,7,opt,name=clusterResources"`
}

// EnvironmentStatus reports whether the Environment could be reconciled.
type EnvironmentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EnvironmentList is a list of Environments.
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []Environment `json:"items" protobuf:"bytes,2,rep,name=items"`
}
