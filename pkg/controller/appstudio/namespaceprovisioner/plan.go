package namespaceprovisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

type (
	claimT  = appstudiov1alpha1.DeploymentTargetClaim
	targetT = appstudiov1alpha1.DeploymentTarget
	classT  = appstudiov1alpha1.DeploymentTargetClass
)

// ConditionProvisioned is the claim's condition of this provisioner (provisioning).
const ConditionProvisioned = provisioning.ConditionProvisioned

// Reasons of ConditionProvisioned, and of the Events on the claim (problems are Warnings).
const (
	ReasonProvisioned        = "Provisioned"
	ReasonProvisioning       = "Provisioning"
	ReasonNameConflict       = "NameConflict"
	ReasonProvisioningFailed = provisioning.ReasonProvisioningFailed
	// ReasonPolicyRestored is a namespace found with a Pod Security level below its class's.
	ReasonPolicyRestored = "PolicyRestored"

	EventProvisioned    = "Provisioned"
	EventDeprovisioning = "Deprovisioning"
	EventDeprovisioned  = "Deprovisioned"
	EventRetained       = "Retained"
	EventExpired        = "Expired"
)

// renewFraction is the share of a token's lifetime after which it is renewed.
const renewFraction = 0.8

// config is what the agent tells the provisioner about the host cluster.
type config struct {
	// server is the URL by which Argo CD reaches the host cluster.
	server string
	// ca is the PEM CA bundle that verifies server.
	ca []byte
}

// state is what the provisioner sees of one unit, "claim namespace/target name".
type state struct {
	namespace, target string
	// claim is the claim whose TargetName is target; nil when there is none.
	claim *claimT
	// class is the claim's class, or the target's when there is no claim; nil when missing.
	class *classT
	// dt is the DeploymentTarget named target, nil when none.
	dt *targetT
	// ns is the namespace labelled for the unit; nsTaken is an object of the name the unit
	// would give its namespace that is not labelled for it.
	ns      *corev1.Namespace
	nsTaken bool
	// In ns, by their fixed names.
	sa     *corev1.ServiceAccount
	rb     *rbacv1.RoleBinding
	quota  *corev1.ResourceQuota
	limits *corev1.LimitRange
	netpol *networkingv1.NetworkPolicy
	// secret is the Secret named SecretName(target) in the claim's namespace.
	secret *corev1.Secret
}

// tokenRequest is a token to ask for, and the Secret to write it in.
type tokenRequest struct {
	expiration time.Duration
	// secret is the Secret without its kubeconfig and token annotations; existed says whether
	// to update rather than create it.
	secret  *corev1.Secret
	existed bool
}

// plan is what to write for one unit, in this order: the host cluster's objects, the
// Secret, the target, the claim.
type plan struct {
	createNamespace     *corev1.Namespace
	updateNamespace     *corev1.Namespace // labels and annotations
	deleteNamespace     *corev1.Namespace
	createSA            *corev1.ServiceAccount
	deleteRoleBinding   bool // a RoleBinding of another role: roleRef is immutable
	createRoleBinding   *rbacv1.RoleBinding
	createQuota         *corev1.ResourceQuota
	updateQuota         *corev1.ResourceQuota
	createLimits        *corev1.LimitRange
	updateLimits        *corev1.LimitRange
	createNetworkPolicy *networkingv1.NetworkPolicy
	updateNetworkPolicy *networkingv1.NetworkPolicy
	token               *tokenRequest
	updateSecret        *corev1.Secret // labels
	deleteSecret        *corev1.Secret
	createTarget        *targetT
	markAvailable       bool // the target's status phase, after its creation or on a target with none
	updateTarget        *targetT
	deleteClaim         bool
	condition           *metav1.Condition // the claim's, when it changes
	events              []framework.Event
	requeueAfter        time.Duration
	orphanNeedsNoTarget bool // delete an orphan only after the server confirms that the target is gone
	// confirmNamespaceGone is the namespace the server must not have, labelled for the unit,
	// before the target's finalizer goes.
	confirmNamespaceGone string
}

type planner struct {
	plan
	s   state
	cfg config
	now time.Time
}

func (p *planner) event(e framework.Event) { p.events = append(p.events, e) }

func (p *planner) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.requeueAfter == 0 || d < p.requeueAfter {
		p.requeueAfter = d
	}
}

// problem sets the claim's condition to False with reason and message, with a Warning when
// it changes.
func (p *planner) problem(reason, format string, args ...interface{}) {
	p.setCondition(metav1.ConditionFalse, reason, fmt.Sprintf(format, args...), true)
}

func (p *planner) setCondition(status metav1.ConditionStatus, reason, message string, warn bool) {
	claim := p.s.claim
	if claim == nil || claim.DeletionTimestamp != nil {
		if warn && p.s.dt != nil {
			p.event(framework.WarningEvent(reason, "%s", message))
		}
		return
	}
	c := provisioning.Condition(claim, status, reason, message, p.now)
	if c == nil {
		return
	}
	p.condition = c
	if warn {
		p.event(framework.WarningEvent(reason, "%s", message))
	}
}

// planUnit decides, from what the provisioner sees of one unit, what to write. It is pure, so
// that every rule is tested without a cluster:
//
//   - A claim is provisioned when the binder asks for it (reference §3.9: Pending, no
//     targetName, not bound, annotation provisioner.appstudio.redhat.com/dt-provisioner = its
//     class) and its class's provisioner is ProvisionerName. Provisioning makes, each found
//     again by name on the next sync, in order: the namespace NamespaceName (labelled for the
//     claim), the ServiceAccount "deployer" in it, the RoleBinding "deployer-edit" to the
//     ClusterRole edit, the class's ResourceQuota and LimitRange, the Secret SecretName of type
//     managed-environment in the claim's namespace with a kubeconfig for the ServiceAccount (a
//     TokenRequest token), and last the DeploymentTarget TargetName: claimRef the claim, the
//     class, the credentials, annotation provisioned-by = ProvisionerName, label dt-provisioner,
//     this provisioner's finalizer, phase Available. The binder then binds it.
//   - A live target of this provisioner is kept as provisioned: what is missing of it is made
//     again, the quota and limits follow the class, the credentials in its spec are restored,
//     and the token is renewed at 80% of its lifetime (or at once when the ServiceAccount, the
//     server or the CA changed). Its claimRef and status phase are the binder's and the reclaim
//     controller's, except the first phase, Available.
//   - The class's ttl deletes the claim ttl after its target was created; the binder then
//     hands the target back per the reclaim policy (reference §3.9).
//   - A target of this provisioner being deleted is reclaimed per its class's reclaimPolicy
//     (the namespace's record of it when the class is gone): Delete deletes the Secret and the
//     namespace (the rest goes with it) and keeps the finalizer until the namespace is gone;
//     Retain labels both retained and keeps them. Then the finalizer goes.
//   - What the unit made without a target (a provisioning stopped before its last write) is
//     deleted once nothing wants it provisioned any more; retained objects are never touched.
func planUnit(s state, cfg config, now time.Time) plan {
	p := &planner{s: s, cfg: cfg, now: now}
	dt := s.dt
	if dt != nil && !isOurs(dt) {
		if wantsProvisioning(s) {
			p.problem(ReasonNameConflict, "DeploymentTarget %s exists and was not provisioned by %s", dt.Name, ProvisionerName)
		}
		return p.plan
	}
	switch {
	case dt != nil && s.ns != nil && !servesTarget(s):
		p.refuseTarget()
	case dt != nil && dt.DeletionTimestamp != nil:
		p.reclaim()
	case dt != nil && s.ns == nil && !claimedOfUs(s):
		// A target that merely looks ours (the annotation or finalizer, which whoever may write
		// DeploymentTargets can set) gets nothing made for it: only a live claim of a class of
		// this provisioner, whose UID the target carries, has its namespace made (again).
		p.problem(ReasonProvisioningFailed, "DeploymentTarget %s has no namespace of %s and no claim of its class that it was made for", dt.Name, ProvisionerName)
	case dt != nil:
		p.maintain()
	case wantsProvisioning(s):
		p.provision()
	default:
		p.collectOrphans()
	}
	return p.plan
}

// claimedOfUs tells whether the unit's target was made for its live claim, of a class of this
// provisioner: the only target whose namespace may be made, or made again.
func claimedOfUs(s state) bool {
	c, dt := s.claim, s.dt
	return c != nil && c.DeletionTimestamp == nil && dt.Labels[LabelClaimUID] == string(c.UID) &&
		s.class != nil && s.class.Name == string(c.Spec.DeploymentTargetClassName) && s.class.Spec.Provisioner == ProvisionerName
}

// servesTarget tells whether the unit's namespace was provisioned for its target: the
// namespace names the target's UID, or, until it does (the target is made after the namespace
// and its UID recorded on the next sync), is not retained and was made for the claim the target
// names. A retained namespace always names the UID of the target it was kept from, which is
// gone: no target written by hand afterwards, whatever it carries, gets it back.
func servesTarget(s state) bool {
	if uid := s.ns.Annotations[AnnTargetUID]; uid != "" {
		return uid == string(s.dt.UID)
	}
	return s.ns.Labels[LabelRetained] != "true" && s.dt.Labels[LabelClaimUID] != "" && s.dt.Labels[LabelClaimUID] == s.ns.Labels[LabelClaimUID]
}

// refuseTarget is a target that looks like this provisioner's but that the unit's namespace
// was not provisioned for: nothing is made, renewed or reclaimed for it; only this
// provisioner's finalizer is taken off when it is deleted, so that it can go.
func (p *planner) refuseTarget() {
	dt := p.s.dt
	if dt.DeletionTimestamp != nil {
		if slices.Contains(dt.Finalizers, Finalizer) {
			upd := dt.DeepCopy()
			upd.Finalizers = framework.Without(upd.Finalizers, Finalizer)
			p.updateTarget = upd
		}
		return
	}
	p.problem(ReasonNameConflict, "DeploymentTarget %s was not provisioned by %s for namespace %s, which serves another target or was retained",
		dt.Name, ProvisionerName, p.s.ns.Name)
}

// madeFor are the labels of the unit's namespace (the one being made, when it is), which name
// the claim it was made for and which tenants cannot write; nil when there is none.
func (p *planner) madeFor() map[string]string {
	switch {
	case p.s.ns != nil:
		return p.s.ns.Labels
	case p.createNamespace != nil:
		return p.createNamespace.Labels
	}
	return nil
}

// isOurs tells whether this provisioner made t.
func isOurs(t *targetT) bool { return provisioning.MadeBy(t, ProvisionerName, Finalizer) }

// wantsProvisioning tells whether the binder asks this provisioner for a target for s.claim.
func wantsProvisioning(s state) bool { return provisioning.Wanted(s.claim, s.class, ProvisionerName) }

// identity is the claim the unit was made for: from the claim, else the target, else the
// namespace.
func (p *planner) identity() (name, uid string) {
	switch {
	case p.s.claim != nil:
		return p.s.claim.Name, string(p.s.claim.UID)
	case p.s.dt != nil && p.s.dt.Labels[LabelClaimUID] != "":
		return p.s.dt.Annotations[AnnClaimName], p.s.dt.Labels[LabelClaimUID]
	case p.s.ns != nil:
		return p.s.ns.Annotations[AnnClaimName], p.s.ns.Labels[LabelClaimUID]
	}
	return "", ""
}

// namespaceName is the unit's namespace: the one found by its labels, else the derived one.
func (p *planner) namespaceName() string {
	if p.s.ns != nil {
		return p.s.ns.Name
	}
	name, uid := p.identity()
	return NamespaceName(p.s.namespace, name, uid)
}

func (p *planner) labels() map[string]string {
	name, uid := p.identity()
	return labelsFor(p.s.namespace, name, uid, p.s.target)
}

// provision makes what a claim asks for, up to its target.
func (p *planner) provision() {
	params := parametersOf(p.s.class)
	if !p.ensureHost(&params) || !p.ensureSecret(params) {
		return
	}
	claim := p.s.claim
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: p.s.target, Namespace: p.s.namespace, Labels: p.labels(),
			Annotations: map[string]string{
				appstudiov1alpha1.AnnDynamicallyProvisioned: string(ProvisionerName),
				AnnClaimName: claim.Name,
				// The claim's UID as the binder records it: a claim made again under the name
				// is another claim, and does not inherit this target.
				appstudiov1alpha1.AnnClaimUID: string(claim.UID),
			},
			Finalizers: []string{Finalizer}},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName:    claim.Spec.DeploymentTargetClassName,
			ClaimRef:                     claim.Name,
			KubernetesClusterCredentials: p.credentials(),
		},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: appstudiov1alpha1.DeploymentTargetPhaseAvailable},
	}
	// As the original's SpaceRequest provisioner: the label names the class the claim asked.
	if v := claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner]; len(validation.IsValidLabelValue(v)) == 0 {
		t.Labels[appstudiov1alpha1.AnnTargetProvisioner] = v
	}
	p.createTarget = t
	p.markAvailable = true
	p.setCondition(metav1.ConditionTrue, ReasonProvisioned,
		fmt.Sprintf("DeploymentTarget %s provisioned with namespace %s", t.Name, p.namespaceName()), false)
	p.event(framework.NormalEvent(EventProvisioned, "Provisioned DeploymentTarget %s with namespace %s, ServiceAccount %s and Secret %s",
		t.Name, p.namespaceName(), ServiceAccountName, SecretName(t.Name)))
}

// credentials are the kubernetesCredentials of the unit's target.
func (p *planner) credentials() appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials {
	return appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
		DefaultNamespace: p.namespaceName(), APIURL: p.cfg.server, ClusterCredentialsSecret: SecretName(p.s.target),
	}
}

// maintain keeps a live target of this provisioner as provisioned.
func (p *planner) maintain() {
	dt := p.s.dt
	// Without the class, the quota and limits stay as they are; the credentials are still
	// kept fresh, with the default token lifetime.
	params := parametersOf(p.s.class)
	if !p.ensureHostWith(&params, p.s.class == nil) || !p.ensureSecret(params) {
		return
	}
	upd := dt.DeepCopy()
	if !slices.Contains(upd.Finalizers, Finalizer) {
		upd.Finalizers = append(upd.Finalizers, Finalizer)
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned] = string(ProvisionerName)
	upd.Spec.KubernetesClusterCredentials = p.credentials()
	// The unit's labels on the target are restored from the namespace's: whoever may write the
	// target may not make it look made for another claim.
	nsLabels := p.madeFor()
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for _, k := range []string{LabelClaimNamespace, LabelClaimName, LabelClaimUID, LabelTarget} {
		if v, ok := nsLabels[k]; ok {
			upd.Labels[k] = v
		}
	}

	// The ttl counts from the target's creation and applies to the claim the namespace was made
	// for (not to the claim the target's labels name: the tenant may write those).
	claim := p.s.claim
	if params.ttl > 0 && claim != nil && string(claim.UID) == nsLabels[LabelClaimUID] && !dt.CreationTimestamp.IsZero() {
		expires := dt.CreationTimestamp.Add(params.ttl)
		upd.Annotations[AnnExpires] = expires.UTC().Format(time.RFC3339)
		if claim.DeletionTimestamp == nil {
			if !p.now.Before(expires) {
				p.deleteClaim = true
				p.event(framework.NormalEvent(EventExpired, "Deleting the claim: its DeploymentTargetClass %s gives it a ttl of %s, which ended at %s",
					p.s.class.Name, params.ttl, expires.UTC().Format(time.RFC3339)))
			} else {
				p.requeue(expires.Sub(p.now))
			}
		}
	} else {
		delete(upd.Annotations, AnnExpires)
	}
	if !apiequality.Semantic.DeepEqual(upd.ObjectMeta, dt.ObjectMeta) || !apiequality.Semantic.DeepEqual(upd.Spec, dt.Spec) {
		p.updateTarget = upd
	}
	p.markAvailable = dt.Status.Phase == ""
	p.setCondition(metav1.ConditionTrue, ReasonProvisioned,
		fmt.Sprintf("DeploymentTarget %s provisioned with namespace %s", dt.Name, p.namespaceName()), false)
}

func (p *planner) ensureHost(params *parameters) bool { return p.ensureHostWith(params, false) }

// ensureHost plans the namespace and what is in it; false when the rest must wait.
// keepPolicy leaves the namespace's Pod Security level, ResourceQuota, LimitRange and
// NetworkPolicy as they are (the class is unknown).
func (p *planner) ensureHostWith(params *parameters, keepPolicy bool) bool {
	s := p.s
	nsName := p.namespaceName()
	pol := params.policy
	if s.ns == nil {
		if s.nsTaken {
			p.problem(ReasonNameConflict, "namespace %s exists and was not provisioned for this DeploymentTargetClaim", nsName)
			return false
		}
		name, _ := p.identity()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName, Labels: p.labels(),
			Annotations: map[string]string{AnnClaimName: name}}}
		if s.class != nil {
			ns.Labels[LabelReclaimPolicy] = string(s.class.Spec.ReclaimPolicy)
		}
		if s.dt != nil {
			ns.Annotations[AnnTargetUID] = string(s.dt.UID)
		}
		pol.applyTo(ns)
		p.createNamespace = ns
	} else if s.ns.DeletionTimestamp != nil {
		// Its delete event brings the unit back.
		p.setCondition(metav1.ConditionFalse, ReasonProvisioning, fmt.Sprintf("waiting for namespace %s to be deleted before it is made again", nsName), false)
		return false
	} else {
		upd := s.ns.DeepCopy()
		if s.dt != nil && upd.Annotations[AnnTargetUID] == "" {
			if upd.Annotations == nil {
				upd.Annotations = map[string]string{}
			}
			upd.Annotations[AnnTargetUID] = string(s.dt.UID)
		}
		if !keepPolicy {
			if was := pol.applyTo(upd); was != "" {
				p.event(framework.WarningEvent(ReasonPolicyRestored, "Namespace %s had Pod Security level %s, below its class's %s: raised to %s",
					nsName, was, pol.podSecurity, pol.podSecurity))
			}
		}
		if !apiequality.Semantic.DeepEqual(upd.ObjectMeta, s.ns.ObjectMeta) {
			p.updateNamespace = upd
		}
	}
	fresh := s.ns == nil
	labels := p.labels()
	if fresh || s.sa == nil {
		p.createSA = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: nsName, Labels: labels}}
	}
	wantRB := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RoleBindingName, Namespace: nsName, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: EditClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: nsName}},
	}
	switch {
	case fresh || s.rb == nil:
		p.createRoleBinding = wantRB
	case s.rb.RoleRef != wantRB.RoleRef || !apiequality.Semantic.DeepEqual(s.rb.Subjects, wantRB.Subjects):
		p.deleteRoleBinding = true
		p.createRoleBinding = wantRB
	}
	if keepPolicy {
		return true
	}
	var quota *corev1.ResourceQuota
	var limits *corev1.LimitRange
	var netpol *networkingv1.NetworkPolicy
	if !fresh {
		quota, limits, netpol = s.quota, s.limits, s.netpol
	}
	wantQuota := corev1.ResourceQuotaSpec{Hard: pol.quota}
	switch {
	case quota == nil:
		p.createQuota = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: ResourceQuotaName, Namespace: nsName, Labels: labels}, Spec: wantQuota}
	case !apiequality.Semantic.DeepEqual(quota.Spec, wantQuota):
		upd := quota.DeepCopy()
		upd.Spec = wantQuota
		p.updateQuota = upd
	}
	wantLimits := corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{pol.limits}}
	switch {
	case limits == nil:
		p.createLimits = &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: nsName, Labels: labels}, Spec: wantLimits}
	case !apiequality.Semantic.DeepEqual(limits.Spec, wantLimits):
		upd := limits.DeepCopy()
		upd.Spec = wantLimits
		p.updateLimits = upd
	}
	switch {
	case netpol == nil:
		p.createNetworkPolicy = &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Namespace: nsName, Labels: labels},
			Spec: pol.network}
	case !apiequality.Semantic.DeepEqual(netpol.Spec, pol.network):
		upd := netpol.DeepCopy()
		upd.Spec = pol.network
		p.updateNetworkPolicy = upd
	}
	return true
}

// kubeconfigHash is the hash of what the kubeconfig holds besides the token.
func kubeconfigHash(cfg config, namespace string) string {
	sum := sha256.Sum256([]byte(cfg.server + "\x00" + string(cfg.ca) + "\x00" + namespace + "\x00" + ServiceAccountName))
	return hex.EncodeToString(sum[:])[:16]
}

// RenewAt is when a token issued at issued and expiring at expires is renewed: at 80% of its
// lifetime.
func RenewAt(issued, expires time.Time) time.Time {
	return issued.Add(time.Duration(float64(expires.Sub(issued)) * renewFraction))
}

// ensureSecret plans the credentials Secret; false when the rest must wait.
func (p *planner) ensureSecret(params parameters) bool {
	s := p.s
	name := SecretName(s.target)
	if s.secret != nil && !ownedBy(s.secret.Labels, s.namespace, s.target) {
		p.problem(ReasonNameConflict, "Secret %s exists and was not provisioned for this DeploymentTargetClaim", name)
		return false
	}
	nsName := p.namespaceName()
	hash := kubeconfigHash(p.cfg, nsName)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: p.labels(),
			Annotations: map[string]string{annKubeconfigConfig: hash}},
		Type: managedv1alpha1.ManagedEnvironmentSecretType,
	}
	renew := true
	if sec := s.secret; sec != nil && s.sa != nil && p.createSA == nil && sec.Type == want.Type &&
		sec.Annotations[annServiceAccount] == string(s.sa.UID) && sec.Annotations[annKubeconfigConfig] == hash &&
		len(sec.Data[managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey]) > 0 {
		issued, err1 := time.Parse(time.RFC3339, sec.Annotations[annTokenIssued])
		expires, err2 := time.Parse(time.RFC3339, sec.Annotations[annTokenExpires])
		if err1 == nil && err2 == nil && expires.After(issued) {
			if at := RenewAt(issued, expires); p.now.Before(at) {
				renew = false
				p.requeue(at.Sub(p.now))
			}
		}
	}
	if renew {
		if s.secret != nil {
			// Kept for its resourceVersion; the type of a Secret cannot change.
			if s.secret.Type != want.Type {
				p.deleteSecret = s.secret
			} else {
				upd := s.secret.DeepCopy()
				upd.Labels, upd.Annotations = want.Labels, want.Annotations
				want = upd
			}
		}
		p.token = &tokenRequest{expiration: params.tokenExpiration, secret: want, existed: s.secret != nil && p.deleteSecret == nil}
		return true
	}
	if !apiequality.Semantic.DeepEqual(s.secret.Labels, want.Labels) {
		upd := s.secret.DeepCopy()
		upd.Labels = want.Labels
		p.updateSecret = upd
	}
	return true
}

// reclaimPolicy is the policy for the unit's target: its class's, else the one the namespace
// recorded, else Delete.
func (p *planner) reclaimPolicy() appstudiov1alpha1.ReclaimPolicy {
	if p.s.class != nil {
		return p.s.class.Spec.ReclaimPolicy
	}
	if p.s.ns != nil && p.s.ns.Labels[LabelReclaimPolicy] != "" {
		return appstudiov1alpha1.ReclaimPolicy(p.s.ns.Labels[LabelReclaimPolicy])
	}
	return appstudiov1alpha1.ReclaimPolicyDelete
}

// reclaim is a target of this provisioner being deleted.
func (p *planner) reclaim() {
	s := p.s
	dt := s.dt
	if !slices.Contains(dt.Finalizers, Finalizer) {
		return
	}
	secret := s.secret
	if secret != nil && (!ownedBy(secret.Labels, s.namespace, s.target) || secret.Labels[LabelRetained] == "true") {
		secret = nil // not ours to touch, or kept from an earlier target
	}
	release := func() {
		upd := dt.DeepCopy()
		upd.Finalizers = framework.Without(upd.Finalizers, Finalizer)
		p.updateTarget = upd
	}
	if p.reclaimPolicy() == appstudiov1alpha1.ReclaimPolicyRetain {
		// The retained namespace names the target it was kept from, which is going: no other
		// target can be taken for it (servesTarget).
		if s.ns != nil && (s.ns.Labels[LabelRetained] != "true" || s.ns.Annotations[AnnTargetUID] == "") {
			upd := s.ns.DeepCopy()
			upd.Labels[LabelRetained] = "true"
			if upd.Annotations == nil {
				upd.Annotations = map[string]string{}
			}
			if upd.Annotations[AnnTargetUID] == "" {
				upd.Annotations[AnnTargetUID] = string(dt.UID)
			}
			p.updateNamespace = upd
		}
		if secret != nil && secret.Labels[LabelRetained] != "true" {
			upd := secret.DeepCopy()
			upd.Labels[LabelRetained] = "true"
			p.updateSecret = upd
		}
		release()
		p.event(framework.NormalEvent(EventRetained, "Kept namespace %s and Secret %s of DeploymentTarget %s: reclaimPolicy Retain",
			p.namespaceName(), SecretName(s.target), dt.Name))
		return
	}
	if secret != nil {
		p.deleteSecret = secret
	}
	if s.ns != nil {
		if s.ns.DeletionTimestamp == nil {
			p.deleteNamespace = s.ns
			p.event(framework.NormalEvent(EventDeprovisioning, "Deleting namespace %s and Secret %s of DeploymentTarget %s: reclaimPolicy Delete",
				s.ns.Name, SecretName(s.target), dt.Name))
		}
		// The namespace's delete event brings the unit back; the reclaim controller marks the
		// target Failed if that takes too long.
		return
	}
	release()
	// The cache may not have seen the namespace yet: the server is asked before the target goes.
	p.confirmNamespaceGone = p.namespaceName()
	p.event(framework.NormalEvent(EventDeprovisioned, "Deleted namespace %s and Secret %s of DeploymentTarget %s",
		p.namespaceName(), SecretName(s.target), dt.Name))
}

// collectOrphans deletes what a provisioning left without a target once nothing wants it.
func (p *planner) collectOrphans() {
	s := p.s
	if s.ns != nil && s.ns.Labels[LabelRetained] != "true" && s.ns.DeletionTimestamp == nil {
		p.deleteNamespace = s.ns
		p.orphanNeedsNoTarget = true
	}
	if s.secret != nil && ownedBy(s.secret.Labels, s.namespace, s.target) && s.secret.Labels[LabelRetained] != "true" {
		p.deleteSecret = s.secret
		p.orphanNeedsNoTarget = true
	}
}
