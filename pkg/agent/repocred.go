package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Labels and annotation of the Argo CD repository Secret of a credential. The tenant namespace
// label (argocd.LabelTenantNamespace) and the credential's name find the Secrets of a credential that
// is gone; the UID tells an earlier credential of the same name from the current one.
const (
	LabelRepositoryCredentialUID       = "managed-gitops.redhat.com/repositorycredential-uid"
	AnnotationRepositoryCredentialName = "managed-gitops.redhat.com/repositorycredential-name"
	argoSecretTypeRepository           = "repository"
	// LabelClaimsRepository is "true" when the repository Secret claims its URL for its
	// project (repocred_isolation.go), "false" when it does not: its credentials
	// authenticate nothing, or the repository can be read without them.
	LabelClaimsRepository = "managed-gitops.redhat.com/claims-repository"
)

// Argo CD's ConfigMaps of trusted TLS certificates (keyed by host name) and SSH known hosts.
const (
	argoTLSCertsConfigMap   = "argocd-tls-certs-cm"
	argoKnownHostsConfigMap = "argocd-ssh-known-hosts-cm"
	argoKnownHostsKey       = "ssh_known_hosts"
)

// revalidateEvery re-runs ls-remote on a credential nothing has changed: a password revoked at
// the Git host shows within this time. (A host key or CA changed in Argo CD's ConfigMaps
// requeues every credential at once.)
const revalidateEvery = 10 * time.Minute

// Index names: credentials by "namespace/secret" of the Secret they reference, and repository
// Secrets of the Argo CD namespace by "namespace/name" of their credential.
const (
	bySecret     = "repocred-secret"
	byCredential = "repocred-credential"
)

// repoCreds turns each GitOpsDeploymentRepositoryCredential into an Argo CD repository Secret
// once a real ls-remote has shown that its credentials work, and reports the outcome in its
// conditions.
type repoCreds struct {
	*Agent
	ctl         *controller
	creds       listers.GitOpsDeploymentRepositoryCredentialLister
	credIndex   cache.Indexer
	secrets     corelisters.SecretLister
	repoSecrets cache.Indexer

	// checked remembers the last outcome per credential, so that the status write a check
	// causes does not cause another ls-remote.
	checked sync.Map // key → checkedOutcome
	// lsRemote is the check itself; tests replace it.
	lsRemote func(ctx context.Context, repoURL string, creds gitCredentials, trust gitTrust) error
}

type checkedOutcome struct {
	// input identifies what was checked: the credential (UID, generation and spec), the
	// Secret's resourceVersion and what Argo CD trusts for the host.
	input   string
	at      time.Time
	outcome credentialOutcome
	// claims is repositoryClaim's answer for a valid credential.
	claims bool
}

// setupRepositoryCredentials wires the controller: its own events, those of the Secrets the
// credentials reference, and those of the repository Secrets it writes queue a credential.
func (a *Agent) setupRepositoryCredentials() error {
	r := &repoCreds{Agent: a, lsRemote: lsRemote}
	r.ctl = newController("repositorycredentials", r.sync)
	a.controllers = append(a.controllers, r.ctl)

	credInformer := a.gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentRepositoryCredentials()
	if err := credInformer.Informer().AddIndexers(cache.Indexers{bySecret: credentialSecretKey}); err != nil {
		return err
	}
	r.creds = credInformer.Lister()
	r.credIndex = credInformer.Informer().GetIndexer()
	if err := a.addInformer(credInformer.Informer(), r.ctl.handler()); err != nil {
		return err
	}

	secrets, err := a.watchTenantSecrets(managedv1alpha1.RepositoryCredentialSecretType, r.credIndex, bySecret, r.ctl)
	if err != nil {
		return err
	}
	r.secrets = secrets

	argoSecretInformer := a.argoKubeInformers.Core().V1().Secrets().Informer()
	if err := argoSecretInformer.AddIndexers(cache.Indexers{byCredential: credentialOfRepoSecret}); err != nil {
		return err
	}
	r.repoSecrets = argoSecretInformer.GetIndexer()
	// Someone else editing or deleting a repository Secret brings its credential back here.
	enqueueOwner := func(obj interface{}) {
		obj = unwrapTombstone(obj)
		if keys, _ := credentialOfRepoSecret(obj); len(keys) == 1 {
			r.ctl.add(keys[0])
		}
	}
	if err := a.addInformer(argoSecretInformer, cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueOwner,
		UpdateFunc: func(_, obj interface{}) { enqueueOwner(obj) },
		DeleteFunc: enqueueOwner,
	}); err != nil {
		return err
	}
	// A CA or host key changed in Argo CD's trust ConfigMaps may make a credential valid or
	// invalid: every credential is checked again.
	onTrustChange := func(obj interface{}) {
		cm, ok := unwrapTombstone(obj).(*corev1.ConfigMap)
		if !ok || (cm.Name != argoTLSCertsConfigMap && cm.Name != argoKnownHostsConfigMap) {
			return
		}
		creds, err := r.creds.List(labels.Everything())
		if err != nil {
			return
		}
		for _, c := range creds {
			r.ctl.enqueue(c)
		}
	}
	if err := a.addInformer(a.argoKubeInformers.Core().V1().ConfigMaps().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    onTrustChange,
		UpdateFunc: func(_, obj interface{}) { onTrustChange(obj) },
		DeleteFunc: onTrustChange,
	}); err != nil {
		return err
	}
	return a.setupRepositoryIsolation()
}

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
	if !ok || s.Labels[LabelArgoSecretType] != argoSecretTypeRepository {
		return nil, nil
	}
	ns, name := s.Labels[argocd.LabelTenantNamespace], s.Annotations[AnnotationRepositoryCredentialName]
	if ns == "" || name == "" || s.Labels[LabelRepositoryCredentialUID] == "" {
		return nil, nil
	}
	return []string{ns + "/" + name}, nil
}

// RepositorySecretName is the name of the Argo CD repository Secret of a credential. It derives
// from the UID, so two tenants' credentials for the same repository never share a Secret.
func RepositorySecretName(uid types.UID) string { return "repo-cred-" + string(uid) }

// sync brings one credential key in line: conditions from a check of its Secret and
// repository, and a repository Secret in the Argo CD namespace exactly while it is valid.
func (r *repoCreds) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cred, err := r.creds.GitOpsDeploymentRepositoryCredentials(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		r.checked.Delete(key)
		return r.deleteRepoSecrets(ctx, key, "")
	}
	if err != nil {
		return err
	}
	if err := r.deleteRepoSecrets(ctx, key, cred.UID); err != nil {
		return err
	}
	if cred.DeletionTimestamp != nil {
		return r.deleteRepoSecrets(ctx, key, "")
	}

	secret, outcome, claims, err := r.check(ctx, key, cred)
	if err != nil {
		return err
	}
	if outcome.valid() {
		err = r.applyRepoSecret(ctx, cred, secret, claims)
	} else {
		err = r.deleteRepoSecrets(ctx, key, "")
	}
	if err != nil {
		return err
	}
	if err := r.updateStatus(ctx, cred, outcome); err != nil {
		return err
	}
	// Nothing announces a password revoked at the Git host, nor a public repository made private.
	r.ctl.queue.AddAfter(key, revalidateEvery)
	return nil
}

// check finds the outcome for cred: from the Secret alone when it is unusable, otherwise from
// ls-remote, which runs again only when the credential or its Secret changed or the last run is
// older than revalidateEvery. For a valid credential it also tells whether its repository
// Secret claims the repository (repositoryClaim), from a second, anonymous ls-remote.
func (r *repoCreds) check(ctx context.Context, key string, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential) (*corev1.Secret, credentialOutcome, bool, error) {
	secret, outcome, err := r.credentialSecret(ctx, cred)
	if err != nil || outcome != (credentialOutcome{}) {
		r.checked.Delete(key)
		return nil, outcome, false, err
	}
	trust, err := r.trust(cred.Spec.Repository)
	if err != nil {
		return nil, credentialOutcome{}, false, err
	}
	input := strings.Join([]string{string(cred.UID), strconv.FormatInt(cred.Generation, 10), secret.ResourceVersion,
		cred.Spec.Repository, cred.Spec.Secret, trust.CAPEM, trust.KnownHosts}, "\x00")
	if v, ok := r.checked.Load(key); ok {
		if c := v.(checkedOutcome); c.input == input && r.now().Sub(c.at) < revalidateEvery {
			return secret, c.outcome, c.claims, nil
		}
	}
	creds := credentialsOf(secret)
	outcome, err = outcomeOfLsRemote(r.lsRemote(ctx, cred.Spec.Repository, creds, trust))
	if err != nil {
		return nil, credentialOutcome{}, false, err
	}
	claims := false
	if outcome.valid() {
		// The same repository with the same trust, without any credentials.
		var anonymous error
		if !creds.none() {
			anonymous = r.lsRemote(ctx, anonymousURL(cred.Spec.Repository), gitCredentials{}, trust)
		}
		if claims, err = repositoryClaim(creds, anonymous); err != nil {
			return nil, credentialOutcome{}, false, err
		}
	}
	klog.V(2).InfoS("checked repository credential", "key", key, "reason", outcome.Reason, "claimsRepository", claims)
	r.checked.Store(key, checkedOutcome{input: input, at: r.now(), outcome: outcome, claims: claims})
	return secret, outcome, claims, nil
}

// repositoryClaim decides whether the repository Secret of a valid credential claims its
// repository for the tenant (repocred_isolation.go), from the credentials and the outcome of an
// anonymous ls-remote of the same repository (not run, nil, when there are no credentials):
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

// credentialSecret is the Secret cred references, or the outcome that says why there is none
// to use.
func (r *repoCreds) credentialSecret(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential) (*corev1.Secret, credentialOutcome, error) {
	if cred.Spec.Secret == "" {
		return nil, credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretNotSpecified}, nil
	}
	secret, err := r.secrets.Secrets(cred.Namespace).Get(cred.Spec.Secret)
	if err == nil {
		return secret, credentialOutcome{}, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, credentialOutcome{}, err
	}
	// The cache holds Secrets of the right type only: ask the server whether one of another
	// type is there, which deserves its own reason.
	other, err := r.kube.CoreV1().Secrets(cred.Namespace).Get(ctx, cred.Spec.Secret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretNotFound}, nil
	case err != nil:
		return nil, credentialOutcome{}, err
	case other.Type != managedv1alpha1.RepositoryCredentialSecretType:
		return nil, credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretInvalidType}, nil
	default:
		// Of the right type but not in the cache yet: its event will bring the key back.
		return nil, credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretNotFound}, nil
	}
}

func credentialsOf(s *corev1.Secret) gitCredentials {
	return gitCredentials{
		Username:      string(s.Data[managedv1alpha1.RepositoryCredentialSecretUsernameKey]),
		Password:      string(s.Data[managedv1alpha1.RepositoryCredentialSecretPasswordKey]),
		SSHPrivateKey: string(s.Data[managedv1alpha1.RepositoryCredentialSecretSSHPrivateKeyKey]),
	}
}

// trust is what Argo CD trusts for the repository's host, from its ConfigMaps: the CA of an
// https host, or the known hosts for ssh (only what applies, so that an edit of the other
// re-checks no credential). A missing ConfigMap trusts nothing beyond the system roots.
func (r *repoCreds) trust(repoURL string) (gitTrust, error) {
	var t gitTrust
	cms := r.argoConfigMaps.ConfigMaps(r.argoNamespace)
	if host := hostOf(repoURL); host != "" {
		cm, err := cms.Get(argoTLSCertsConfigMap)
		if err == nil {
			t.CAPEM = cm.Data[host]
		} else if !apierrors.IsNotFound(err) {
			return t, err
		}
		return t, nil
	}
	cm, err := cms.Get(argoKnownHostsConfigMap)
	if err == nil {
		t.KnownHosts = cm.Data[argoKnownHostsKey]
	} else if !apierrors.IsNotFound(err) {
		return t, err
	}
	return t, nil
}

// applyRepoSecret writes the Argo CD repository Secret of a valid credential by server-side
// apply, unless it already is what it should be.
func (r *repoCreds) applyRepoSecret(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, secret *corev1.Secret,
	claims bool) error {
	want := desiredRepoSecret(cred, secret, r.argoNamespace, claims)
	if obj, ok, err := r.repoSecrets.GetByKey(r.argoNamespace + "/" + want.Name); err == nil && ok {
		cur := obj.(*corev1.Secret)
		if secretHas(cur, want.Labels, stringMap(want.Data)) && cur.Annotations[AnnotationRepositoryCredentialName] == cred.Name {
			return nil
		}
	}
	body, err := json.Marshal(want)
	if err != nil {
		return err
	}
	_, err = r.kube.CoreV1().Secrets(r.argoNamespace).Patch(ctx, want.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("applying repository Secret %s: %w", want.Name, err)
	}
	klog.V(2).InfoS("applied repository Secret", "secret", want.Name, "repositorycredential", cred.Namespace+"/"+cred.Name)
	return nil
}

// desiredRepoSecret is the Argo CD repository Secret (argocd.md §1.7) of a credential. It is
// scoped to the tenant's AppProject: Argo CD picks a Secret whose project matches the
// Application's first and never hands a project-scoped Secret to another project
// (util/db getRepositorySecret), so another tenant's Applications cannot use these
// credentials, and two tenants' Secrets for the same URL do not clash. Only the credentials
// that were checked go in: an SSH key, or else username and password. LabelClaimsRepository
// carries claims: whether the Secret keeps the repository from other tenants' AppProjects.
func desiredRepoSecret(cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, secret *corev1.Secret, argoNamespace string,
	claims bool) *corev1.Secret {
	c := credentialsOf(secret)
	data := map[string][]byte{
		"type":    []byte("git"),
		"url":     []byte(cred.Spec.Repository),
		"project": []byte(ProjectName(cred.Namespace)),
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
			Name:      RepositorySecretName(cred.UID),
			Namespace: argoNamespace,
			Labels: map[string]string{
				LabelArgoSecretType:          argoSecretTypeRepository,
				argocd.LabelTenantNamespace:  cred.Namespace,
				LabelRepositoryCredentialUID: string(cred.UID),
				LabelClaimsRepository:        strconv.FormatBool(claims),
			},
			Annotations: map[string]string{AnnotationRepositoryCredentialName: cred.Name},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

func stringMap(data map[string][]byte) map[string]string {
	out := make(map[string]string, len(data))
	for k, v := range data {
		out[k] = string(v)
	}
	return out
}

// deleteRepoSecrets deletes the repository Secrets written for the credential key, except that
// of keep.
func (r *repoCreds) deleteRepoSecrets(ctx context.Context, key string, keep types.UID) error {
	objs, err := r.repoSecrets.ByIndex(byCredential, key)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		s := obj.(*corev1.Secret)
		if keep != "" && s.Labels[LabelRepositoryCredentialUID] == string(keep) {
			continue
		}
		if err := r.deleteSecret(ctx, s.Name); err != nil {
			return err
		}
		klog.V(2).InfoS("deleted repository Secret", "secret", s.Name, "repositorycredential", key)
	}
	return nil
}

// updateStatus writes the conditions of outcome, and only when they differ, and then records
// the Events of the change.
func (r *repoCreds) updateStatus(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, outcome credentialOutcome) error {
	conds := withCredentialConditions(cred.Status.Conditions, cred.Spec, outcome, cred.Generation, metav1.NewTime(r.now()))
	if apiequality.Semantic.DeepEqual(conds, cred.Status.Conditions) {
		return nil
	}
	upd := cred.DeepCopy()
	upd.Status.Conditions = conds
	written, err := r.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(cred.Namespace).UpdateStatus(ctx, upd,
		metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeploymentRepositoryCredential %s/%s: %w", cred.Namespace, cred.Name, err)
	}
	r.recordEvents(written, credentialEvents(cred, outcome))
	return nil
}
