package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RepositoryCredentialSecretType is the type a Secret must have to hold Git credentials.
const RepositoryCredentialSecretType = "managed-gitops.redhat.com/repository-credential"

// Keys of a repository credential Secret.
const (
	RepositoryCredentialSecretUsernameKey      = "username"
	RepositoryCredentialSecretPasswordKey      = "password"
	RepositoryCredentialSecretSSHPrivateKeyKey = "sshPrivateKey"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentRepositoryCredential gives Argo CD the credentials of a private Git repository.
type GitOpsDeploymentRepositoryCredential struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec RepositoryCredentialSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status RepositoryCredentialStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// RepositoryCredentialSpec is a repository and the Secret with its credentials.
type RepositoryCredentialSpec struct {
	// Repository is the https:// or ssh:// URL of the repository.
	Repository string `json:"repository" protobuf:"bytes,1,opt,name=repository"`
	// Secret is a Secret of type managed-gitops.redhat.com/repository-credential in the same
	// namespace, with username and password, or sshPrivateKey.
	Secret string `json:"secret" protobuf:"bytes,2,opt,name=secret"`
}

// Condition types of a GitOpsDeploymentRepositoryCredential; all three are always present.
const (
	RepositoryCredentialConditionErrorOccurred             = "ErrorOccurred"
	RepositoryCredentialConditionValidRepositoryURL        = "ValidRepositoryURL"
	RepositoryCredentialConditionValidRepositoryCredential = "ValidRepositoryCredential"
)

// Reasons of GitOpsDeploymentRepositoryCredential conditions.
const (
	RepositoryCredentialReasonErrorOccurred                = "ErrorOccurred"
	RepositoryCredentialReasonRepositoryCredentialUpToDate = "RepositoryCredentialUpToDate"
	RepositoryCredentialReasonSecretNotSpecified           = "SecretNotSpecified"
	RepositoryCredentialReasonSecretNotFound               = "SecretNotFound"
	RepositoryCredentialReasonSecretInvalidType            = "SecretInvalidType"
	RepositoryCredentialReasonInvalidCredentials           = "InvalidCredentials"
	RepositoryCredentialReasonInvalidRepositoryURL         = "InvalidRepositoryUrl"
	RepositoryCredentialReasonValidRepositoryURL           = "ValidRepositoryUrl"
)

// RepositoryCredentialStatus reports whether the repository and credentials are valid.
type RepositoryCredentialStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentRepositoryCredentialList is a list of GitOpsDeploymentRepositoryCredentials.
type GitOpsDeploymentRepositoryCredentialList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []GitOpsDeploymentRepositoryCredential `json:"items" protobuf:"bytes,2,rep,name=items"`
}
