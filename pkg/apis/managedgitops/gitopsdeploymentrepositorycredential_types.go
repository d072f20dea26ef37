package managedgitops

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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentRepositoryCredential gives Argo CD the credentials of a private Git repository.
type GitOpsDeploymentRepositoryCredential struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RepositoryCredentialSpec `json:"spec,omitempty"`
	// +optional
	Status RepositoryCredentialStatus `json:"status,omitempty"`
}

// RepositoryCredentialSpec is a repository and the Secret with its credentials.
type RepositoryCredentialSpec struct {
	// Repository is the https:// or ssh:// URL of the repository.
	Repository string `json:"repository"`
	// Secret is a Secret of type managed-gitops.redhat.com/repository-credential in the same
	// namespace, with username and password, or sshPrivateKey.
	Secret string `json:"secret"`
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
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentRepositoryCredentialList is a list of GitOpsDeploymentRepositoryCredentials.
type GitOpsDeploymentRepositoryCredentialList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeploymentRepositoryCredential `json:"items"`
}
