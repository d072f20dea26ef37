package repositorycredential

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// The controller's decisions, pure functions of what it read: whether a valid credential's
// repository Secret claims its repository (repositoryClaim), the repository Secret itself
// (desiredRepoSecret), and (status.go) the conditions of an outcome; events.go decides the
// Events.

// repositoryClaim decides whether the repository Secret of a valid credential claims its
// repository for the tenant (argocd.RepositoryAllowed), from the credentials and the outcome of
// an anonymous ls-remote of the same repository (not run, nil, when there are no credentials):
//
//   - credentials that hold nothing authenticate nothing: no claim, whatever the repository;
//   - the repository answered without credentials: it is public, anyone can read it, no claim;
//   - git failed without credentials: authentication required, "not found" (what hosts tell
//     strangers of a private repository), but also a timeout or a TLS or network failure: the
//     claim stays. Only a repository shown to be public loses its protection;
//   - the check could not run at all (the agent's own failure): an error, to be retried; the
//     repository Secret stays as it was meanwhile.
func repositoryClaim(creds gitCredentials, anonymous error) (bool, error) {
	switch {
	case creds.none():
		return false, nil
	case anonymous == nil:
		return false, nil
	case errors.Is(anonymous, errGitFailed):
		return true, nil
	default:
		return true, fmt.Errorf("checking whether the repository can be read anonymously: %w", anonymous)
	}
}

func credentialsOf(s *corev1.Secret) gitCredentials {
	return gitCredentials{
		Username:      string(s.Data[managedv1alpha1.RepositoryCredentialSecretUsernameKey]),
		Password:      string(s.Data[managedv1alpha1.RepositoryCredentialSecretPasswordKey]),
		SSHPrivateKey: string(s.Data[managedv1alpha1.RepositoryCredentialSecretSSHPrivateKeyKey]),
	}
}

// desiredRepoSecret is the Argo CD repository Secret (argocd.md §1.7) of a credential. It is
// scoped to the tenant's AppProject: Argo CD picks a Secret whose project matches the
// Application's first and never hands a project-scoped Secret to another project
// (util/db getRepositorySecret), so another tenant's Applications cannot use these
// credentials, and two tenants' Secrets for the same URL do not clash. Only the credentials
// that were checked go in: an SSH key, or else username and password.
// argocd.LabelClaimsRepository carries claims: whether the Secret keeps the repository from
// other tenants' AppProjects.
func desiredRepoSecret(cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, secret *corev1.Secret, argoNamespace string,
	claims bool) *corev1.Secret {
	c := credentialsOf(secret)
	data := map[string][]byte{
		"type":    []byte("git"),
		"url":     []byte(cred.Spec.Repository),
		"project": []byte(argocd.ProjectName(cred.Namespace)),
	}
	if c.SSHPrivateKey != "" {
		data["sshPrivateKey"] = []byte(c.SSHPrivateKey)
	} else {
		if c.Username != "" {
			data["username"] = []byte(c.Username)
		}
		if c.Password != "" {
			data["password"] = []byte(c.Password)
		}
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      argocd.RepositorySecretName(cred.UID),
			Namespace: argoNamespace,
			Labels: map[string]string{
				argocd.LabelSecretType:              argocd.SecretTypeRepository,
				argocd.LabelTenantNamespace:         cred.Namespace,
				argocd.LabelRepositoryCredentialUID: string(cred.UID),
				argocd.LabelClaimsRepository:        strconv.FormatBool(claims),
			},
			Annotations: map[string]string{argocd.AnnotationRepositoryCredentialName: cred.Name},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// Index names: credentials by "namespace/secret" of the Secret they reference, and repository
// Secrets of the Argo CD namespace by "namespace/name" of their credential.
const (
	bySecret     = "repocred-secret"
	byCredential = "repocred-credential"
)

// credentialSecretKey is the "namespace/name" of the Secret a credential references: always in
// its own namespace, there is no way to name another.
func credentialSecretKey(obj interface{}) ([]string, error) {
	c, ok := obj.(*managedv1alpha1.GitOpsDeploymentRepositoryCredential)
	if !ok || c.Spec.Secret == "" {
		return nil, nil
	}
	return []string{c.Namespace + "/" + c.Spec.Secret}, nil
}

// credentialOfRepoSecret is the "namespace/name" of the credential a repository Secret was
// written for; Secrets the agent did not write for a credential have none.
func credentialOfRepoSecret(obj interface{}) ([]string, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Labels[argocd.LabelSecretType] != argocd.SecretTypeRepository {
		return nil, nil
	}
	ns, name := s.Labels[argocd.LabelTenantNamespace], s.Annotations[argocd.AnnotationRepositoryCredentialName]
	if ns == "" || name == "" || s.Labels[argocd.LabelRepositoryCredentialUID] == "" {
		return nil, nil
	}
	return []string{ns + "/" + name}, nil
}
