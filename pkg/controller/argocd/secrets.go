package argocd

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Argo CD's Secrets: the label that makes a Secret of the Argo CD namespace a cluster or a
// repository Secret (reference argocd.md §1.6–1.7).
const (
	LabelSecretType      = "argocd.argoproj.io/secret-type"
	SecretTypeCluster    = "cluster"
	SecretTypeRepository = "repository"
)

// The data keys of Argo CD's cluster Secrets (reference argocd.md §1.6).
const (
	ClusterKeyName          = "name"
	ClusterKeyServer        = "server"
	ClusterKeyConfig        = "config"
	ClusterKeyNamespaces    = "namespaces"
	ClusterKeyClusterScoped = "clusterResources"
)

// AnnotationImpersonate on a ManagedEnvironment's cluster Secret is the ServiceAccount
// ("namespace:name") that syncs through it impersonate (pkg/controller/managedenvironment
// writes it; the GitOpsDeployment controller puts it in the AppProject's
// destinationServiceAccounts).
const AnnotationImpersonate = "managed-gitops.redhat.com/impersonate"

// Labels and annotation of the Argo CD repository Secret of a GitOpsDeploymentRepositoryCredential
// (pkg/controller/repositorycredential writes it). The tenant namespace label
// (LabelTenantNamespace) and the credential's name find the Secrets of a credential that is gone;
// the UID tells an earlier credential of the same name from the current one.
const (
	LabelRepositoryCredentialUID       = "managed-gitops.redhat.com/repositorycredential-uid"
	AnnotationRepositoryCredentialName = "managed-gitops.redhat.com/repositorycredential-name"
	// LabelClaimsRepository is "true" when the repository Secret claims its URL for its
	// project (see RepositoryAllowed), "false" when it does not: its credentials authenticate
	// nothing, or the repository can be read without them.
	LabelClaimsRepository = "managed-gitops.redhat.com/claims-repository"
)

// RepositorySecretName is the name of the Argo CD repository Secret of a credential. It derives
// from the UID, so two tenants' credentials for the same repository never share a Secret.
func RepositorySecretName(uid types.UID) string { return "repo-cred-" + string(uid) }

// Why project-scoped repository Secrets are not enough: Argo CD 2.14's repo-server keeps one
// local clone per repository URL (normalized) and one cache of its refs, whichever project
// asks. An Application of another project that names a private repository and a commit SHA
// skips ls-remote and fetch (the commit is already in the clone) and gets the manifests without
// any credentials. So a tenant's AppProject lists a repository only if no other tenant holds
// credentials for it, or the tenant holds its own: Argo CD then refuses the Application before
// the repo-server is asked.
//
// A public repository needs no such protection: anyone can read it, shared clone or not. So a
// repository Secret claims its URL (and counts as the tenant's own) only if its credentials
// authenticate something and the repository is not readable anonymously (the
// RepositoryCredential controller decides); the others are marked with LabelClaimsRepository
// "false". Otherwise any tenant could take a public repository away from every other tenant
// with a credential that holds nothing. The marker is written by the agent in the Argo CD
// namespace, where tenants cannot write; a repository Secret without it (an older agent's, or
// one written by hand) claims, as before.

// ByRepositoryURL indexes the repository Secrets of the Argo CD namespace by RepositoryKey of
// their url.
const ByRepositoryURL = "repocred-url"

// AddRepositoryURLIndex adds the ByRepositoryURL index to an informer of the Argo CD
// namespace's Secrets, unless it has it.
func AddRepositoryURLIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ByRepositoryURL]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{ByRepositoryURL: RepositoryURLOfSecret})
}

// RepositoryURLOfSecret is the RepositoryKey of a repository Secret's url; other Secrets have none.
func RepositoryURLOfSecret(obj interface{}) ([]string, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Labels[LabelSecretType] != SecretTypeRepository || len(s.Data["url"]) == 0 {
		return nil, nil
	}
	return []string{RepositoryKey(string(s.Data["url"]))}, nil
}

// RepositoryKey is what Argo CD's repo-server would share a clone between, or coarser: case,
// surrounding space, a ".git" or "/" at the end, user and the "ssh://" of scp-like addresses do
// not count. Coarser only means a tenant is refused a repository it could have used.
func RepositoryKey(repoURL string) string {
	s := strings.ToLower(strings.TrimSpace(repoURL))
	if !strings.Contains(s, "://") {
		// git@host:org/repo is ssh://git@host/org/repo.
		if at := strings.Index(s, "@"); at >= 0 {
			if colon := strings.Index(s[at:], ":"); colon >= 0 {
				s = "ssh://" + s[:at+colon] + "/" + s[at+colon+1:]
			}
		}
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Scheme + "://" + u.Host + u.Path
	}
	s = strings.TrimRight(s, "/")
	s = strings.TrimSuffix(s, ".git")
	return strings.TrimRight(s, "/")
}

// RepositoryAllowed tells whether the AppProject of namespace may list repoURL: not when a
// repository Secret of another tenant's project holds credentials for it and none of the
// namespace's own does. Secrets without a project (an Argo CD administrator's, for everyone)
// claim nothing. secrets is the indexer of the Argo CD namespace's Secrets, with the
// ByRepositoryURL index.
func RepositoryAllowed(secrets cache.Indexer, namespace, repoURL string) bool {
	objs, err := secrets.ByIndex(ByRepositoryURL, RepositoryKey(repoURL))
	if err != nil {
		return false // the index is missing: fail closed
	}
	return allowedBy(namespace, objs)
}

// allowedBy decides RepositoryAllowed from the repository Secrets for the URL. A Secret marked
// as not claiming counts for nobody: it neither takes the repository from other tenants nor
// gives it to its own.
func allowedBy(namespace string, repoSecrets []interface{}) bool {
	own, claimed := ProjectName(namespace), false
	for _, obj := range repoSecrets {
		s := obj.(*corev1.Secret)
		if s.Labels[LabelClaimsRepository] == "false" {
			continue
		}
		switch p := string(s.Data["project"]); p {
		case own:
			return true
		case "":
		default:
			claimed = true
		}
	}
	return !claimed
}

// DeleteSecret deletes a Secret of the Argo CD namespace; a missing one is not an error.
func DeleteSecret(ctx context.Context, kube kubernetes.Interface, namespace, name string) error {
	err := kube.CoreV1().Secrets(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s: %w", name, err)
	}
	return nil
}

// SecretHas tells whether s already carries the labels and exactly the data given, so that an
// unchanged Secret costs no write.
func SecretHas(s *corev1.Secret, labels, data map[string]string) bool {
	for k, v := range labels {
		if s.Labels[k] != v {
			return false
		}
	}
	if len(s.Data) != len(data) {
		return false
	}
	for k, v := range data {
		if string(s.Data[k]) != v {
			return false
		}
	}
	return true
}

// HasAnnotations tells whether s already carries the annotations given.
func HasAnnotations(s *corev1.Secret, annotations map[string]string) bool {
	for k, v := range annotations {
		if s.Annotations[k] != v {
			return false
		}
	}
	return true
}

// StringData is a Secret's data as strings.
func StringData(data map[string][]byte) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}
