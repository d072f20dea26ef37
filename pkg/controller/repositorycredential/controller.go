// Package repositorycredential is the GitOpsDeploymentRepositoryCredential controller: a
// credential becomes an Argo CD repository Secret, scoped to its tenant's AppProject, once a
// real `git ls-remote` has shown that its credentials work, and the outcome becomes its
// conditions (and Events). The decisions are pure functions (plan.go, status.go, events.go);
// the reconcile reads the caches, runs the check and carries them out. It is one of the agent's
// Argo CD controllers, run under the Argo CD Lease.
//
// The repository Secret also says whether it claims its repository for its tenant
// (argocd.LabelClaimsRepository); the GitOpsDeployment controller reads that when it computes an
// AppProject's repositories (argocd.RepositoryAllowed) and watches the repository Secrets
// itself, so this controller queues nothing but its own keys.
package repositorycredential

import (
	"context"
	"encoding/json"
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
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "repositorycredentials"

// fieldManager is the field manager of the controller's writes.
const fieldManager = argocd.FieldManager

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

// Controller turns each GitOpsDeploymentRepositoryCredential into an Argo CD repository Secret
// once a real ls-remote has shown that its credentials work, and reports the outcome in its
// conditions.
type Controller struct {
	*framework.Controller

	gitops versioned.Interface
	// kube reads the tenants' Secrets; argoKube writes the Argo CD namespace's repository
	// Secrets, on the cluster Argo CD runs on (kube when nil: the API's own cluster).
	kube, argoKube kubernetes.Interface
	recorder       record.EventRecorder
	// argoNamespace is the namespace of the Argo CD instance: its repository Secrets and trust
	// ConfigMaps.
	argoNamespace string

	creds       listers.GitOpsDeploymentRepositoryCredentialLister
	secrets     corelisters.SecretLister
	repoSecrets cache.Indexer
	configMaps  corelisters.ConfigMapLister
	// served are the tenant namespaces served (serve.go): every one when nil.
	served *tenancy.Tenants

	// checked remembers the last outcome per credential, so that the status write a check
	// causes does not cause another ls-remote.
	checked sync.Map // key → checkedOutcome
	// lsRemote is the check itself; tests replace it.
	lsRemote func(ctx context.Context, repoURL string, creds gitCredentials, trust gitTrust) error

	now func() time.Time
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

// New wires the controller's handlers and indexes into the informers: its own events, those of
// the Secrets the credentials reference (credentialSecrets: the tenants' Secrets of
// RepositoryCredentialSecretType, in every namespace), those of the repository Secrets it
// writes (argoSecrets: the Argo CD namespace's Secrets) and those of Argo CD's trust ConfigMaps
// (argoConfigMaps) queue a credential. The Secret and ConfigMap informers are shared with the
// other Argo CD controllers.
func New(
	creds managedinformers.GitOpsDeploymentRepositoryCredentialInformer,
	credentialSecrets framework.Secrets,
	argoSecrets coreinformers.SecretInformer,
	argoConfigMaps coreinformers.ConfigMapInformer,
	argoNamespace string,
	gitops versioned.Interface,
	kube, argoKube kubernetes.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	credInformer, argoSecretInformer := creds.Informer(), argoSecrets.Informer()
	if err := credInformer.AddIndexers(cache.Indexers{bySecret: credentialSecretKey}); err != nil {
		return nil, err
	}
	if err := argoSecretInformer.AddIndexers(cache.Indexers{byCredential: credentialOfRepoSecret}); err != nil {
		return nil, err
	}
	c := &Controller{
		gitops:        gitops,
		kube:          kube,
		argoKube:      argoKube,
		recorder:      recorder,
		argoNamespace: argoNamespace,
		creds:         creds.Lister(),
		secrets:       credentialSecrets.Lister(),
		repoSecrets:   argoSecretInformer.GetIndexer(),
		configMaps:    argoConfigMaps.Lister(),
		lsRemote:      lsRemote,
		now:           time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)

	if err := c.Watch(credInformer, c.Handler()); err != nil {
		return nil, err
	}

	// A referenced Secret that comes, changes or goes queues the credentials that name it.
	if err := c.Watch(credentialSecrets, c.EnqueueUsers(credInformer.GetIndexer(), bySecret)); err != nil {
		return nil, err
	}

	// Someone else editing or deleting a repository Secret brings its credential back here.
	enqueueOwner := func(obj interface{}) {
		obj = framework.UnwrapTombstone(obj)
		if keys, _ := credentialOfRepoSecret(obj); len(keys) == 1 {
			c.Add(keys[0])
		}
	}
	if err := c.Watch(argoSecretInformer, cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueOwner,
		UpdateFunc: func(_, obj interface{}) { enqueueOwner(obj) },
		DeleteFunc: enqueueOwner,
	}); err != nil {
		return nil, err
	}

	// A CA or host key changed in Argo CD's trust ConfigMaps may make a credential valid or
	// invalid: every credential is checked again.
	onTrustChange := func(obj interface{}) {
		cm, ok := framework.UnwrapTombstone(obj).(*corev1.ConfigMap)
		if !ok || (cm.Name != argoTLSCertsConfigMap && cm.Name != argoKnownHostsConfigMap) {
			return
		}
		all, err := c.creds.List(labels.Everything())
		if err != nil {
			return
		}
		for _, cred := range all {
			c.Enqueue(cred)
		}
	}
	if err := c.Watch(argoConfigMaps.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    onTrustChange,
		UpdateFunc: func(_, obj interface{}) { onTrustChange(obj) },
		DeleteFunc: onTrustChange,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles credentials with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.Controller.Run(ctx, workers) }

// sync brings one credential key in line: conditions from a check of its Secret and
// repository, and a repository Secret in the Argo CD namespace exactly while it is valid.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if !c.served.Keeps(namespace) {
		c.checked.Delete(key)
		return c.deleteRepoSecrets(ctx, key, "")
	}
	cred, err := c.creds.GitOpsDeploymentRepositoryCredentials(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.checked.Delete(key)
		return c.deleteRepoSecrets(ctx, key, "")
	}
	if err != nil {
		return err
	}
	if err := c.deleteRepoSecrets(ctx, key, cred.UID); err != nil {
		return err
	}
	if cred.DeletionTimestamp != nil {
		return c.deleteRepoSecrets(ctx, key, "")
	}

	secret, outcome, claims, err := c.check(ctx, key, cred)
	if err != nil {
		return err
	}
	if outcome.valid() {
		err = c.applyRepoSecret(ctx, cred, secret, claims)
	} else {
		err = c.deleteRepoSecrets(ctx, key, "")
	}
	if err != nil {
		return err
	}
	if err := c.updateStatus(ctx, cred, outcome); err != nil {
		return err
	}
	// Nothing announces a password revoked at the Git host, nor a public repository made private.
	c.Queue.AddAfter(key, revalidateEvery)
	return nil
}

// check finds the outcome for cred: from the Secret alone when it is unusable, otherwise from
// ls-remote, which runs again only when the credential or its Secret changed or the last run is
// older than revalidateEvery. For a valid credential it also tells whether its repository
// Secret claims the repository (repositoryClaim), from a second, anonymous ls-remote.
func (c *Controller) check(ctx context.Context, key string, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential) (*corev1.Secret, credentialOutcome, bool, error) {
	secret, outcome, err := c.credentialSecret(ctx, cred)
	if err != nil || outcome != (credentialOutcome{}) {
		c.checked.Delete(key)
		return nil, outcome, false, err
	}
	trust, err := c.trust(cred.Spec.Repository)
	if err != nil {
		return nil, credentialOutcome{}, false, err
	}
	input := strings.Join([]string{string(cred.UID), strconv.FormatInt(cred.Generation, 10), secret.ResourceVersion,
		cred.Spec.Repository, cred.Spec.Secret, trust.CAPEM, trust.KnownHosts}, "\x00")
	if v, ok := c.checked.Load(key); ok {
		if prev := v.(checkedOutcome); prev.input == input && c.now().Sub(prev.at) < revalidateEvery {
			return secret, prev.outcome, prev.claims, nil
		}
	}
	creds := credentialsOf(secret)
	outcome, err = outcomeOfLsRemote(c.lsRemote(ctx, cred.Spec.Repository, creds, trust))
	if err != nil {
		return nil, credentialOutcome{}, false, err
	}
	claims := false
	if outcome.valid() {
		// The same repository with the same trust, without any credentials.
		var anonymous error
		if !creds.none() {
			anonymous = c.lsRemote(ctx, anonymousURL(cred.Spec.Repository), gitCredentials{}, trust)
		}
		if claims, err = repositoryClaim(creds, anonymous); err != nil {
			return nil, credentialOutcome{}, false, err
		}
	}
	klog.V(2).InfoS("checked repository credential", "key", key, "reason", outcome.Reason, "claimsRepository", claims)
	c.checked.Store(key, checkedOutcome{input: input, at: c.now(), outcome: outcome, claims: claims})
	return secret, outcome, claims, nil
}

// credentialSecret is the Secret cred references, or the outcome that says why there is none
// to use.
func (c *Controller) credentialSecret(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential) (*corev1.Secret, credentialOutcome, error) {
	if cred.Spec.Secret == "" {
		return nil, credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretNotSpecified}, nil
	}
	secret, err := c.secrets.Secrets(cred.Namespace).Get(cred.Spec.Secret)
	if err == nil {
		return secret, credentialOutcome{}, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, credentialOutcome{}, err
	}
	// The cache holds Secrets of the right type only: ask the server whether one of another
	// type is there, which deserves its own reason.
	other, err := c.kube.CoreV1().Secrets(cred.Namespace).Get(ctx, cred.Spec.Secret, metav1.GetOptions{})
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

// trust is what Argo CD trusts for the repository's host, from its ConfigMaps: the CA of an
// https host, or the known hosts for ssh (only what applies, so that an edit of the other
// re-checks no credential). A missing ConfigMap trusts nothing beyond the system roots.
func (c *Controller) trust(repoURL string) (gitTrust, error) {
	var t gitTrust
	cms := c.configMaps.ConfigMaps(c.argoNamespace)
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
func (c *Controller) applyRepoSecret(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, secret *corev1.Secret,
	claims bool) error {
	want := desiredRepoSecret(cred, secret, c.argoNamespace, claims)
	if obj, ok, err := c.repoSecrets.GetByKey(c.argoNamespace + "/" + want.Name); err == nil && ok {
		cur := obj.(*corev1.Secret)
		if argocd.SecretHas(cur, want.Labels, argocd.StringData(want.Data)) && cur.Annotations[argocd.AnnotationRepositoryCredentialName] == cred.Name {
			return nil
		}
	}
	body, err := json.Marshal(want)
	if err != nil {
		return err
	}
	_, err = c.argoClient().CoreV1().Secrets(c.argoNamespace).Patch(ctx, want.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("applying repository Secret %s: %w", want.Name, err)
	}
	klog.V(2).InfoS("applied repository Secret", "secret", want.Name, "repositorycredential", cred.Namespace+"/"+cred.Name)
	return nil
}

// deleteRepoSecrets deletes the repository Secrets written for the credential key, except that
// of keep.
func (c *Controller) deleteRepoSecrets(ctx context.Context, key string, keep types.UID) error {
	objs, err := c.repoSecrets.ByIndex(byCredential, key)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		s := obj.(*corev1.Secret)
		if keep != "" && s.Labels[argocd.LabelRepositoryCredentialUID] == string(keep) {
			continue
		}
		if err := argocd.DeleteSecret(ctx, c.argoClient(), c.argoNamespace, s.Name); err != nil {
			return err
		}
		klog.V(2).InfoS("deleted repository Secret", "secret", s.Name, "repositorycredential", key)
	}
	return nil
}

// updateStatus writes the conditions of outcome, and only when they differ, and then records
// the Events of the change.
func (c *Controller) updateStatus(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, outcome credentialOutcome) error {
	conds := withCredentialConditions(cred.Status.Conditions, cred.Spec, outcome, cred.Generation, metav1.NewTime(c.now()))
	if apiequality.Semantic.DeepEqual(conds, cred.Status.Conditions) {
		return nil
	}
	upd := cred.DeepCopy()
	upd.Status.Conditions = conds
	written, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(cred.Namespace).UpdateStatus(ctx, upd,
		metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeploymentRepositoryCredential %s/%s: %w", cred.Namespace, cred.Name, err)
	}
	c.recordEvents(written, credentialEvents(cred, outcome))
	return nil
}

// argoClient is the client of the cluster Argo CD runs on.
func (c *Controller) argoClient() kubernetes.Interface {
	if c.argoKube != nil {
		return c.argoKube
	}
	return c.kube
}
