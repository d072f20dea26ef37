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
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec EnvironmentSpec `json:"spec,omitempty"`
	// +optional
	Status EnvironmentStatus `json:"status,omitempty"`
}

// EnvironmentSpec describes an Environment.
type EnvironmentSpec struct {
	// Type is deprecated.
	// +optional
	Type EnvironmentType `json:"type,omitempty"`
	// DisplayName is the name users see.
	DisplayName string `json:"displayName"`
	// DeploymentStrategy is Manual or AppStudioAutomated.
	DeploymentStrategy DeploymentStrategyType `json:"deploymentStrategy"`
	// ParentEnvironment is the Environment promoted from, in the promotion graph.
	// +optional
	ParentEnvironment string `json:"parentEnvironment,omitempty"`
	// +optional
	// +listType=atomic
	Tags []string `json:"tags,omitempty"`
	// +optional
	Configuration EnvironmentConfiguration `json:"configuration,omitempty"`
	// UnstableConfigurationFields holds the credentials of a remote cluster; it is expected to change.
	// +optional
	UnstableConfigurationFields *UnstableEnvironmentConfiguration `json:"unstableConfigurationFields,omitempty"`
}

// EnvironmentConfiguration is configuration for workloads deployed into the Environment.
type EnvironmentConfiguration struct {
	// +optional
	// +listType=atomic
	Env []EnvVarPair `json:"env,omitempty"`
	// Target selects a DeploymentTargetClaim to deploy to.
	// +optional
	Target EnvironmentTarget `json:"target,omitempty"`
}

// EnvironmentTarget points at a DeploymentTargetClaim.
type EnvironmentTarget struct {
	DeploymentTargetClaim DeploymentTargetClaimConfig `json:"deploymentTargetClaim"`
}

// DeploymentTargetClaimConfig names a DeploymentTargetClaim in the same namespace.
type DeploymentTargetClaimConfig struct {
	ClaimName string `json:"claimName"`
}

// EnvVarPair is an environment variable.
type EnvVarPair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// UnstableEnvironmentConfiguration points an Environment at a remote cluster.
type UnstableEnvironmentConfiguration struct {
	// +optional
	ClusterType ConfigurationClusterType `json:"clusterType,omitempty"`
	// +optional
	KubernetesClusterCredentials KubernetesClusterCredentials `json:"kubernetesCredentials,omitempty"`
}

// KubernetesClusterCredentials are the API URL and credentials of a cluster.
type KubernetesClusterCredentials struct {
	// TargetNamespace is the namespace deployed to.
	TargetNamespace string `json:"targetNamespace"`
	// APIURL is the https URL of the cluster's API server.
	APIURL string `json:"apiURL"`
	// IngressDomain is the cluster's ingress domain; required for clusterType Kubernetes.
	// +optional
	IngressDomain string `json:"ingressDomain,omitempty"`
	// ClusterCredentialsSecret is a Secret of type managed-gitops.redhat.com/managed-environment.
	ClusterCredentialsSecret   string `json:"clusterCredentialsSecret"`
	AllowInsecureSkipTLSVerify bool   `json:"allowInsecureSkipTLSVerify"`
	// +optional
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty"`
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty"`
}

// EnvironmentStatus reports whether the Environment could be reconciled.
type EnvironmentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EnvironmentList is a list of Environments.
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Environment `json:"items"`
}
