package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedEnvironmentSecretType is the type a Secret must have to hold the kubeconfig of a
// GitOpsDeploymentManagedEnvironment.
const ManagedEnvironmentSecretType = "managed-gitops.redhat.com/managed-environment"

// ManagedEnvironmentSecretKubeconfigKey is the key of the kubeconfig in that Secret.
const ManagedEnvironmentSecretKubeconfigKey = "kubeconfig"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentManagedEnvironment is a cluster that GitOpsDeployments of its namespace can
// deploy to, with the credentials to do so.
type GitOpsDeploymentManagedEnvironment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec ManagedEnvironmentSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ManagedEnvironmentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// ManagedEnvironmentSpec is the API URL of the cluster and where its credentials are.
type ManagedEnvironmentSpec struct {
	// APIURL is the https URL of the cluster's API server.
	APIURL string `json:"apiURL" protobuf:"bytes,1,opt,name=apiURL"`
	// ClusterCredentialsSecret is a Secret of type managed-gitops.redhat.com/managed-environment
	// in the same namespace whose "kubeconfig" key has a context for APIURL.
	ClusterCredentialsSecret string `json:"credentialsSecret" protobuf:"bytes,2,opt,name=credentialsSecret"`
	// AllowInsecureSkipTLSVerify accepts the cluster's certificate without verifying it.
	AllowInsecureSkipTLSVerify bool `json:"allowInsecureSkipTLSVerify" protobuf:"varint,3,opt,name=allowInsecureSkipTLSVerify"`
	// CreateNewServiceAccount makes the service install its own ServiceAccount on the cluster
	// with the given credentials, and deploy with that instead.
	// +optional
	CreateNewServiceAccount bool `json:"createNewServiceAccount,omitempty" protobuf:"varint,4,opt,name=createNewServiceAccount"`
	// Namespaces limits Argo CD to these namespaces of the cluster, as the namespaces field of
	// an Argo CD cluster Secret.
	// +optional
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty" protobuf:"bytes,5,rep,name=namespaces"`
	// ClusterResources allows cluster-scoped resources when Namespaces is set.
	// +optional
	ClusterResources bool `json:"clusterResources,omitempty" protobuf:"varint,6,opt,name=clusterResources"`
}

// ManagedEnvironmentStatusConnectionInitializationSucceeded is the condition type that tells
// whether the service could connect to the cluster.
const ManagedEnvironmentStatusConnectionInitializationSucceeded = "ConnectionInitializationSucceeded"

// ManagedEnvironmentConditionReason is a reason of the ConnectionInitializationSucceeded condition.
type ManagedEnvironmentConditionReason string

const (
	ManagedEnvironmentReasonUnsupportedAPIURL                  ManagedEnvironmentConditionReason = "UnsupportedAPIURL"
	ManagedEnvironmentReasonSucceeded                          ManagedEnvironmentConditionReason = "Succeeded"
	ManagedEnvironmentReasonKubernetesError                    ManagedEnvironmentConditionReason = "KubernetesError"
	ManagedEnvironmentReasonDatabaseError                      ManagedEnvironmentConditionReason = "DatabaseError"
	ManagedEnvironmentReasonInvalidSecretType                  ManagedEnvironmentConditionReason = "InvalidSecretType"
	ManagedEnvironmentReasonMissingKubeConfigField             ManagedEnvironmentConditionReason = "MissingKubeConfigField"
	ManagedEnvironmentReasonUnableToCreateClient               ManagedEnvironmentConditionReason = "UnableToCreateClient"
	ManagedEnvironmentReasonUnableToCreateClusterCredentials   ManagedEnvironmentConditionReason = "UnableToCreateClusterCredentials"
	ManagedEnvironmentReasonUnableToInstallServiceAccount      ManagedEnvironmentConditionReason = "UnableToInstallServiceAccount"
	ManagedEnvironmentReasonUnableToValidateClusterCredentials ManagedEnvironmentConditionReason = "UnableToValidateClusterCredentials"
	ManagedEnvironmentReasonUnableToLocateContext              ManagedEnvironmentConditionReason = "UnableToLocateContext"
	ManagedEnvironmentReasonUnableToParseKubeconfigData        ManagedEnvironmentConditionReason = "UnableToParseKubeconfigData"
	ManagedEnvironmentReasonInvalidNamespaceList               ManagedEnvironmentConditionReason = "InvalidNamespaceList"
	ManagedEnvironmentReasonUnableToRetrieveRestConfig         ManagedEnvironmentConditionReason = "UnableToRetrieveRestConfig"
	ManagedEnvironmentReasonUnknownError                       ManagedEnvironmentConditionReason = "UnknownError"
)

// ManagedEnvironmentStatus reports whether the cluster could be reached.
type ManagedEnvironmentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentManagedEnvironmentList is a list of GitOpsDeploymentManagedEnvironments.
type GitOpsDeploymentManagedEnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []GitOpsDeploymentManagedEnvironment `json:"items" protobuf:"bytes,2,rep,name=items"`
}
