// Package namespaceprovisioner is the namespace provisioner: for a DeploymentTargetClaim
// that the binder (deploymenttargetbinder) marked for provisioning, of a DeploymentTargetClass
// whose provisioner is ProvisionerName ("managed-gitops.redhat.com/namespace"), it makes on the
// host cluster a namespace with a ServiceAccount that has the ClusterRole edit there only, a
// Secret of type managed-gitops.redhat.com/managed-environment in the claim's namespace with a
// kubeconfig for it (a TokenRequest token, renewed at 80% of its lifetime), and the
// DeploymentTarget that the binder then binds (issue 21; reference §2.5–2.7, §3.9–3.11). The
// rules are in planUnit.
//
// The controller's key is the unit "claim namespace/target name": TargetName derives the
// target's name from the claim's namespace, name and UID, so every object of a unit is found
// by name (the namespace by its labels) on the next sync, whether the claim, the target, or
// neither still exists, and a provisioning stopped anywhere converges.
//
// The class's parameters are its spec.parameters.namespace, typed and validated by the API
// server (parametersOf): ttl, tokenExpiration, and the namespace's policy (policyOf): Pod
// Security level, ResourceQuota, LimitRange, a NetworkPolicy that denies the ingress the class
// does not allow, labels and annotations. A class that says nothing gets the safe default.
//
// Which target a namespace serves is recorded on the namespace (AnnTargetUID), which tenants
// cannot write: a DeploymentTarget written by hand with the provisioner's annotation,
// finalizer or labels gets no namespace that was provisioned for another, and the class's ttl
// applies to the claim the namespace was made for, whatever the target's labels say.
//
// The ttl releases the claim by deleting it, as Kubernetes' TTL controller deletes finished
// Jobs: the binder then hands the target back per the class's reclaimPolicy (Delete: target,
// namespace and Secret go; Retain: the target is Released and may be bound again, its
// namespace and credentials kept and still renewed).
//
// Deleting a target of this provisioner, under its finalizer Finalizer: Delete removes the
// Secret and the namespace (ServiceAccount, RoleBinding, quota go with it) and lets the target
// go once the namespace is gone; Retain keeps both, labelled LabelRetained, and lets the
// target go at once: the token is no longer renewed and expires, the namespace is the
// cluster administrator's to delete, as a retained PersistentVolume's storage is.
package namespaceprovisioner

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "namespaceprovisioner"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// byUnit indexes claims and namespaces by their unit, "claim namespace/target name".
const byUnit = "namespaceprovisioner/unit"

// Controller provisions namespaces for DeploymentTargetClaims.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	kube     kubernetes.Interface
	recorder record.EventRecorder

	claims     appstudiolisters.DeploymentTargetClaimLister
	claimIndex cache.Indexer
	targets    appstudiolisters.DeploymentTargetLister
	classes    appstudiolisters.DeploymentTargetClassLister
	namespaces corelisters.NamespaceLister
	nsIndex    cache.Indexer
	secrets    corelisters.SecretLister

	cfg config
	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers.
//
// namespaces may be filtered by the label selector LabelTarget (every namespace the
// provisioner makes has it); secrets must hold at least the Secrets of type
// managed-gitops.redhat.com/managed-environment (the Environment controller's informer, filtered
// on that type, does). server is the https URL by which Argo CD reaches this cluster's API, ca
// the PEM bundle that verifies it: it is required, as the provisioned targets never skip TLS
// verification (pass the CA of the rest.Config, or the public bundle of a publicly trusted
// endpoint).
func New(
	claims appstudioinformers.DeploymentTargetClaimInformer,
	targets appstudioinformers.DeploymentTargetInformer,
	classes appstudioinformers.DeploymentTargetClassInformer,
	namespaces coreinformers.NamespaceInformer,
	secrets framework.Secrets,
	gitops versioned.Interface,
	kube kubernetes.Interface,
	recorder record.EventRecorder,
	server string,
	ca []byte,
) (*Controller, error) {
	if err := validateServer(server, ca); err != nil {
		return nil, err
	}
	c := &Controller{
		gitops:     gitops,
		kube:       kube,
		recorder:   recorder,
		claims:     claims.Lister(),
		claimIndex: claims.Informer().GetIndexer(),
		targets:    targets.Lister(),
		classes:    classes.Lister(),
		namespaces: namespaces.Lister(),
		nsIndex:    namespaces.Informer().GetIndexer(),
		secrets:    secrets.Lister(),
		cfg:        config{server: server, ca: append([]byte(nil), ca...)},
		now:        time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)

	if err := claims.Informer().AddIndexers(cache.Indexers{byUnit: unitOfClaim}); err != nil {
		return nil, err
	}
	if err := namespaces.Informer().AddIndexers(cache.Indexers{byUnit: unitOfLabels}); err != nil {
		return nil, err
	}
	for _, h := range []struct {
		inf framework.EventSource
		f   func(interface{})
	}{
		{claims.Informer(), c.onClaim},
		{targets.Informer(), c.onTarget},
		{classes.Informer(), c.onClass},
		{namespaces.Informer(), c.onLabelled},
		{secrets, c.onLabelled},
	} {
		if err := c.Watch(h.inf, framework.OnChange(h.f)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// validateServer checks the host cluster's URL and CA.
func validateServer(server string, ca []byte) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("namespace provisioner: the server URL %q is not an https URL", server)
	}
	rest := ca
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("namespace provisioner: the CA bundle: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("namespace provisioner: a CA bundle (PEM certificates) for %s is required: the provisioned credentials never skip TLS verification", server)
	}
	return nil
}

func unitOfClaim(obj interface{}) ([]string, error) {
	claim, ok := obj.(*claimT)
	if !ok {
		return nil, nil
	}
	return []string{claim.Namespace + "/" + TargetName(claim)}, nil
}

func unitOfLabels(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	l := m.GetLabels()
	if l[LabelClaimNamespace] == "" || l[LabelTarget] == "" {
		return nil, nil
	}
	return []string{l[LabelClaimNamespace] + "/" + l[LabelTarget]}, nil
}

func (c *Controller) onClaim(obj interface{}) {
	if claim, ok := framework.UnwrapTombstone(obj).(*claimT); ok {
		c.Add(claim.Namespace + "/" + TargetName(claim))
	}
}

func (c *Controller) onTarget(obj interface{}) {
	if t, ok := framework.UnwrapTombstone(obj).(*targetT); ok && isOurs(t) {
		c.Add(t.Namespace + "/" + t.Name)
	}
}

// onLabelled queues the unit of a namespace or Secret that this provisioner made.
func (c *Controller) onLabelled(obj interface{}) {
	if keys, _ := unitOfLabels(framework.UnwrapTombstone(obj)); len(keys) == 1 {
		c.Add(keys[0])
	}
}

// onClass queues the units of the class's claims and targets.
func (c *Controller) onClass(obj interface{}) {
	class, ok := framework.UnwrapTombstone(obj).(*classT)
	if !ok {
		return
	}
	claims, targets := provisioning.OfClass(c.claims, c.targets, class.Name)
	for _, claim := range claims {
		c.onClaim(claim)
	}
	for _, t := range targets {
		c.onTarget(t)
	}
}

// sync provisions, maintains or reclaims one unit.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, target, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(ctx, namespace, target)
	if err != nil {
		return err
	}
	p := planUnit(s, c.cfg, c.now())
	if err := c.act(ctx, s, p); err != nil {
		if !errors.Is(err, errCacheBehind) {
			c.reportFailure(ctx, s, err)
		}
		return err
	}
	if p.requeueAfter > 0 {
		// Token renewal and the ttl: no event marks them.
		c.Queue.AddAfter(key, p.requeueAfter)
	}
	return nil
}

// observe gathers the state of one unit from the caches, and from the kube-apiserver what
// they do not hold: the objects inside the namespace, and a namespace of the unit's name that
// the (possibly filtered) cache does not have.
func (c *Controller) observe(ctx context.Context, namespace, target string) (state, error) {
	s := state{namespace: namespace, target: target}
	key := namespace + "/" + target
	claims, err := c.claimIndex.ByIndex(byUnit, key)
	if err != nil {
		return s, err
	}
	if len(claims) > 0 {
		s.claim = claims[0].(*claimT)
	}
	if s.dt, err = framework.OrNil(c.targets.DeploymentTargets(namespace).Get(target)); err != nil {
		return s, err
	}
	className := ""
	switch {
	case s.claim != nil && s.claim.Spec.DeploymentTargetClassName != "":
		className = string(s.claim.Spec.DeploymentTargetClassName)
	case s.dt != nil:
		className = string(s.dt.Spec.DeploymentTargetClassName)
	}
	if className != "" {
		if s.class, err = framework.OrNil(c.classes.Get(className)); err != nil {
			return s, err
		}
	}
	nss, err := c.nsIndex.ByIndex(byUnit, key)
	if err != nil {
		return s, err
	}
	sort.Slice(nss, func(i, j int) bool { return nss[i].(*corev1.Namespace).Name < nss[j].(*corev1.Namespace).Name })
	if len(nss) > 0 {
		s.ns = nss[0].(*corev1.Namespace)
	}
	if s.secret, err = framework.OrNil(c.secrets.Secrets(namespace).Get(SecretName(target))); err != nil {
		return s, err
	}
	// The namespace the unit would make, which the (possibly filtered) cache may not have
	// seen yet, or may not hold because it is not labelled for the unit.
	name := ""
	switch {
	case wantsProvisioning(s):
		name = NamespaceName(namespace, s.claim.Name, string(s.claim.UID))
	case s.dt != nil && s.dt.DeletionTimestamp == nil && isOurs(s.dt) && s.dt.Labels[LabelClaimUID] != "":
		name = NamespaceName(namespace, s.dt.Annotations[AnnClaimName], s.dt.Labels[LabelClaimUID])
	}
	if s.ns == nil && name != "" {
		ns, err := framework.OrNil(c.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}))
		if err != nil {
			return s, err
		}
		if ns != nil {
			if ownedBy(ns.Labels, namespace, target) {
				s.ns = ns // the cache has not seen it yet
			} else {
				s.nsTaken = true
			}
		}
	}
	if s.ns == nil || s.ns.DeletionTimestamp != nil || (s.dt != nil && s.dt.DeletionTimestamp != nil) || (s.dt == nil && !wantsProvisioning(s)) {
		return s, nil
	}
	core := c.kube.CoreV1()
	if s.sa, err = framework.OrNil(core.ServiceAccounts(s.ns.Name).Get(ctx, ServiceAccountName, metav1.GetOptions{})); err != nil {
		return s, err
	}
	if s.rb, err = framework.OrNil(c.kube.RbacV1().RoleBindings(s.ns.Name).Get(ctx, RoleBindingName, metav1.GetOptions{})); err != nil {
		return s, err
	}
	if s.quota, err = framework.OrNil(core.ResourceQuotas(s.ns.Name).Get(ctx, ResourceQuotaName, metav1.GetOptions{})); err != nil {
		return s, err
	}
	if s.limits, err = framework.OrNil(core.LimitRanges(s.ns.Name).Get(ctx, LimitRangeName, metav1.GetOptions{})); err != nil {
		return s, err
	}
	if s.netpol, err = framework.OrNil(c.kube.NetworkingV1().NetworkPolicies(s.ns.Name).Get(ctx, NetworkPolicyName, metav1.GetOptions{})); err != nil {
		return s, err
	}
	return s, nil
}

// act carries out p in order; each write is found again by name on the next sync, so a
// stop between two converges.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	core := c.kube.CoreV1()
	create := metav1.CreateOptions{FieldManager: fieldManager}
	update := metav1.UpdateOptions{FieldManager: fieldManager}
	ignoreNotFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if p.orphanNeedsNoTarget {
		// The cache may not have the target yet: ask.
		t, err := framework.OrNil(c.gitops.AppStudioV1alpha1().DeploymentTargets(s.namespace).Get(ctx, s.target, metav1.GetOptions{}))
		if err != nil {
			return err
		}
		if t != nil {
			return nil // its add event brings the unit back
		}
	}
	if sec := p.deleteSecret; sec != nil {
		if err := ignoreNotFound(core.Secrets(sec.Namespace).Delete(ctx, sec.Name, framework.PreconditionUID(sec.UID))); err != nil {
			return fmt.Errorf("deleting Secret %s/%s: %w", sec.Namespace, sec.Name, err)
		}
	}
	if ns := p.createNamespace; ns != nil {
		if _, err := core.Namespaces().Create(ctx, ns, create); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	if ns := p.updateNamespace; ns != nil {
		if _, err := core.Namespaces().Update(ctx, ns, update); err != nil {
			return fmt.Errorf("updating namespace %s: %w", ns.Name, err)
		}
	}
	if ns := p.deleteNamespace; ns != nil {
		if err := ignoreNotFound(core.Namespaces().Delete(ctx, ns.Name, framework.PreconditionUID(ns.UID))); err != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		klog.V(2).InfoS("deleted a provisioned namespace", "namespace", ns.Name, "unit", s.namespace+"/"+s.target)
	}
	sa := s.sa
	if p.createSA != nil {
		var err error
		if sa, err = core.ServiceAccounts(p.createSA.Namespace).Create(ctx, p.createSA, create); err != nil {
			return fmt.Errorf("creating ServiceAccount %s/%s: %w", p.createSA.Namespace, p.createSA.Name, err)
		}
	}
	if rb := p.createRoleBinding; rb != nil {
		rbs := c.kube.RbacV1().RoleBindings(rb.Namespace)
		if p.deleteRoleBinding {
			if err := ignoreNotFound(rbs.Delete(ctx, rb.Name, metav1.DeleteOptions{})); err != nil {
				return fmt.Errorf("deleting RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
			}
		}
		if _, err := rbs.Create(ctx, rb, create); err != nil {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
		}
	}
	if err := c.actQuota(ctx, s, p, create, update); err != nil {
		return err
	}
	if p.token != nil {
		if err := c.writeToken(ctx, s, p.token, sa); err != nil {
			return err
		}
	}
	if sec := p.updateSecret; sec != nil {
		if _, err := core.Secrets(sec.Namespace).Update(ctx, sec, update); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", sec.Namespace, sec.Name, err)
		}
	}
	if name := p.confirmNamespaceGone; name != "" {
		ns, err := framework.OrNil(core.Namespaces().Get(ctx, name, metav1.GetOptions{}))
		if err != nil {
			return err
		}
		if ns != nil && ownedBy(ns.Labels, s.namespace, s.target) {
			return nil // its events bring the unit back
		}
	}
	targets := c.gitops.AppStudioV1alpha1().DeploymentTargets(s.namespace)
	last := s.dt
	if t := p.createTarget; t != nil {
		var err error
		if last, err = targets.Create(ctx, t, create); err != nil {
			return fmt.Errorf("creating DeploymentTarget %s/%s: %w", t.Namespace, t.Name, err)
		}
	}
	if t := p.updateTarget; t != nil {
		var err error
		if last, err = targets.Update(ctx, t, update); err != nil {
			if apierrors.IsNotFound(err) {
				return nil // gone: its delete event brings the unit back
			}
			return fmt.Errorf("updating DeploymentTarget %s/%s: %w", t.Namespace, t.Name, err)
		}
	}
	if p.markAvailable && last != nil && last.DeletionTimestamp == nil {
		upd := last.DeepCopy()
		upd.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseAvailable
		if _, err := targets.UpdateStatus(ctx, upd, update); err != nil {
			return fmt.Errorf("updating the status of DeploymentTarget %s/%s: %w", upd.Namespace, upd.Name, err)
		}
	}
	if p.deleteClaim && s.claim != nil {
		err := c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(s.namespace).Delete(ctx, s.claim.Name, framework.PreconditionUID(s.claim.UID))
		if ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting DeploymentTargetClaim %s/%s: %w", s.namespace, s.claim.Name, err)
		}
	}
	if p.condition != nil && s.claim != nil {
		upd := s.claim.DeepCopy()
		meta.SetStatusCondition(&upd.Status.Conditions, *p.condition)
		_, err := c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(s.namespace).UpdateStatus(ctx, upd, update)
		if ignoreNotFound(err) != nil {
			return fmt.Errorf("updating the status of DeploymentTargetClaim %s/%s: %w", s.namespace, s.claim.Name, err)
		}
	}
	c.recordEvents(s, p.events)
	return nil
}

// actQuota writes the namespace's ResourceQuota, LimitRange and NetworkPolicy.
func (c *Controller) actQuota(ctx context.Context, s state, p plan, create metav1.CreateOptions, update metav1.UpdateOptions) error {
	core := c.kube.CoreV1()
	nsName := ""
	switch {
	case p.createNamespace != nil:
		nsName = p.createNamespace.Name
	case s.ns != nil:
		nsName = s.ns.Name
	}
	var err error
	switch {
	case p.createQuota != nil:
		_, err = core.ResourceQuotas(nsName).Create(ctx, p.createQuota, create)
	case p.updateQuota != nil:
		_, err = core.ResourceQuotas(nsName).Update(ctx, p.updateQuota, update)
	}
	if err != nil {
		return fmt.Errorf("writing ResourceQuota %s/%s: %w", nsName, ResourceQuotaName, err)
	}
	switch {
	case p.createLimits != nil:
		_, err = core.LimitRanges(nsName).Create(ctx, p.createLimits, create)
	case p.updateLimits != nil:
		_, err = core.LimitRanges(nsName).Update(ctx, p.updateLimits, update)
	}
	if err != nil {
		return fmt.Errorf("writing LimitRange %s/%s: %w", nsName, LimitRangeName, err)
	}
	netpols := c.kube.NetworkingV1().NetworkPolicies(nsName)
	switch {
	case p.createNetworkPolicy != nil:
		_, err = netpols.Create(ctx, p.createNetworkPolicy, create)
	case p.updateNetworkPolicy != nil:
		_, err = netpols.Update(ctx, p.updateNetworkPolicy, update)
	}
	if err != nil {
		return fmt.Errorf("writing NetworkPolicy %s/%s: %w", nsName, NetworkPolicyName, err)
	}
	return nil
}

// errCacheBehind is a sync that read, from the server, what its caches have yet to show: it
// is tried again (with the queue's backoff) and is no failure to report.
var errCacheBehind = errors.New("the cache has yet to show what an earlier sync wrote")

// writeToken asks for a token for the ServiceAccount and writes the Secret with its
// kubeconfig. The token is never logged nor put in an error.
func (c *Controller) writeToken(ctx context.Context, s state, tr *tokenRequest, sa *corev1.ServiceAccount) error {
	if sa == nil {
		return fmt.Errorf("no ServiceAccount %s to ask a token for", ServiceAccountName)
	}
	if !tr.existed {
		// The cache may not have seen the Secret an earlier sync wrote: ask the server before
		// minting a token that would only be thrown away.
		if found, err := c.kube.CoreV1().Secrets(s.namespace).Get(ctx, tr.secret.Name, metav1.GetOptions{}); err == nil {
			if !ownedBy(found.Labels, s.namespace, s.target) || found.Type != tr.secret.Type {
				// Not ours (the cache, of one Secret type, never shows it): a conflict to
				// report, not a cache to wait for.
				return fmt.Errorf("Secret %s/%s exists and was not made by %s for this claim", s.namespace, tr.secret.Name, ProvisionerName)
			}
			return fmt.Errorf("%w: Secret %s/%s", errCacheBehind, s.namespace, tr.secret.Name)
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Secret %s/%s: %w", s.namespace, tr.secret.Name, err)
		}
	}
	issued := c.now()
	resp, err := c.kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tr.expiration / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	if resp.Status.Token == "" {
		return fmt.Errorf("requesting a token for ServiceAccount %s/%s: the answer has no token", sa.Namespace, sa.Name)
	}
	expires := resp.Status.ExpirationTimestamp.Time
	if !expires.After(issued) {
		expires = issued.Add(tr.expiration)
	}
	kubeconfig, err := buildKubeconfig(c.cfg, sa.Namespace, resp.Status.Token)
	if err != nil {
		return fmt.Errorf("writing the kubeconfig for ServiceAccount %s/%s", sa.Namespace, sa.Name)
	}
	sec := tr.secret.DeepCopy()
	sec.Annotations[annTokenIssued] = issued.UTC().Format(time.RFC3339)
	sec.Annotations[annTokenExpires] = expires.UTC().Format(time.RFC3339)
	sec.Annotations[annServiceAccount] = string(sa.UID)
	sec.Data = map[string][]byte{managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey: kubeconfig}
	secrets := c.kube.CoreV1().Secrets(s.namespace)
	if tr.existed {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{FieldManager: fieldManager})
	} else {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return fmt.Errorf("writing Secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	klog.V(4).InfoS("wrote a token for a provisioned ServiceAccount", "serviceAccount", klog.KObj(sa),
		"secret", klog.KObj(sec), "expires", sec.Annotations[annTokenExpires])
	return nil
}

// recordEvents records evs on the claim, or on the target once the claim is going.
func (c *Controller) recordEvents(s state, evs []framework.Event) {
	switch {
	case s.claim != nil && (s.claim.DeletionTimestamp == nil || s.dt == nil):
		framework.RecordEvents(c.recorder, s.claim, evs)
	case s.dt != nil:
		framework.RecordEvents(c.recorder, s.dt, evs)
	}
}

// reportFailure reports a failed write on the claim (provisioning.ReportFailure).
func (c *Controller) reportFailure(ctx context.Context, s state, cause error) {
	provisioning.ReportFailure(ctx, c.gitops, c.recorder, s.claim, cause, c.now())
}
