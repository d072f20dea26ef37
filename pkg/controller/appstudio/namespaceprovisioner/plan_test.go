package namespaceprovisioner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

const (
	ns        = "tenant"
	className = "namespace"
	server    = "https://api.example.com:6443"
)

var (
	now = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	cfg = config{server: server, ca: []byte("ca")}
)

// newClass is a class of this provisioner; params, unless empty, is its
// spec.parameters.namespace in YAML, decoded strictly as the API server does.
func newClass(policy appstudiov1alpha1.ReclaimPolicy, params string) *classT {
	c := &classT{
		ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: ProvisionerName, ReclaimPolicy: policy},
	}
	if params != "" {
		c.Spec.Parameters.Namespace = &appstudiov1alpha1.NamespaceProvisionerParameters{}
		if err := yaml.UnmarshalStrict([]byte(params), c.Spec.Parameters.Namespace); err != nil {
			panic(fmt.Sprintf("parameters %q: %v", params, err))
		}
	}
	return c
}

// newClaim is a claim the binder marked for provisioning.
func newClaim() *claimT {
	return &claimT{
		ObjectMeta: metav1.ObjectMeta{Name: "preview", Namespace: ns, UID: "claim-uid", Generation: 1,
			Annotations: map[string]string{appstudiov1alpha1.AnnTargetProvisioner: className}},
		Spec:   appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: className},
		Status: appstudiov1alpha1.DeploymentTargetClaimStatus{Phase: appstudiov1alpha1.DeploymentTargetClaimPhasePending},
	}
}

// fresh is when provisioned()'s token is renewed.
const fresh = 24*time.Hour*8/10 - 10*time.Minute

var (
	unitTarget = TargetName(newClaim())
	unitNS     = NamespaceName(ns, "preview", "claim-uid")
	unitLabels = labelsFor(ns, "preview", "claim-uid", unitTarget)
)

func copyLabels(extra ...string) map[string]string {
	l := map[string]string{}
	for k, v := range unitLabels {
		l[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// hostNS is the unit's namespace as provisioned for dt(), with the default policy's labels.
func hostNS(extra ...string) *corev1.Namespace {
	l := copyLabels(LabelPodSecurityEnforce, "restricted", LabelPodSecurityAudit, "restricted", LabelPodSecurityWarn, "restricted")
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unitNS, UID: "ns-uid", Labels: l,
		Annotations: map[string]string{AnnClaimName: "preview", AnnTargetUID: "dt-uid"}}}
}

// The namespace's objects of the default policy, as provisioned.
func quota() *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: ResourceQuotaName, Namespace: unitNS},
		Spec: corev1.ResourceQuotaSpec{Hard: DefaultResourceQuota()}}
}

func limits() *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: unitNS},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{DefaultContainerLimits()}}}
}

func netpol() *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Namespace: unitNS},
		Spec: policyOf(nil).network}
}

func sa() *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: unitNS, UID: "sa-uid"}}
}

func rb() *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: RoleBindingName, Namespace: unitNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: EditClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: unitNS}},
	}
}

// secretIssued is the unit's Secret with a token issued at issued for lifetime.
func secretIssued(issued time.Time, lifetime time.Duration) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(unitTarget), Namespace: ns, UID: "secret-uid", Labels: copyLabels(),
			Annotations: map[string]string{
				annKubeconfigConfig: kubeconfigHash(cfg, unitNS),
				annServiceAccount:   "sa-uid",
				annTokenIssued:      issued.Format(time.RFC3339),
				annTokenExpires:     issued.Add(lifetime).Format(time.RFC3339),
			}},
		Type: managedv1alpha1.ManagedEnvironmentSecretType,
		Data: map[string][]byte{"kubeconfig": []byte("config")},
	}
}

// dt is the unit's target as provisioned, bound to the claim.
func dt(mutate ...func(*targetT)) *targetT {
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: unitTarget, Namespace: ns, UID: "dt-uid", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Labels:      copyLabels(appstudiov1alpha1.AnnTargetProvisioner, className),
			Annotations: map[string]string{appstudiov1alpha1.AnnDynamicallyProvisioned: string(ProvisionerName), AnnClaimName: "preview"},
			Finalizers:  []string{appstudiov1alpha1.DeploymentTargetFinalizer, Finalizer}},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: className, ClaimRef: "preview",
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: unitNS, APIURL: server, ClusterCredentialsSecret: SecretName(unitTarget)},
		},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: appstudiov1alpha1.DeploymentTargetPhaseBound},
	}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func deleting(t *targetT) { t.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)} }

func boundClaim() *claimT {
	c := newClaim()
	c.Spec.TargetName = unitTarget
	c.Annotations[appstudiov1alpha1.AnnBindCompleted] = "true"
	c.Status.Phase = appstudiov1alpha1.DeploymentTargetClaimPhaseBound
	return c
}

// provisioned is a unit whose provisioning is complete, with a token issued 10 minutes ago.
func provisioned() state {
	return state{namespace: ns, target: unitTarget, claim: boundClaim(), class: newClass("Delete", ""), dt: dt(),
		ns: hostNS(), sa: sa(), rb: rb(), quota: quota(), limits: limits(), netpol: netpol(),
		secret: secretIssued(now.Add(-10*time.Minute), 24*time.Hour)}
}

// what summarises a plan's writes, in act's order.
func what(p plan) string {
	var w []string
	add := func(cond bool, s string) {
		if cond {
			w = append(w, s)
		}
	}
	add(p.orphanNeedsNoTarget, "checkNoTarget")
	add(p.deleteSecret != nil, "deleteSecret")
	add(p.createNamespace != nil, "createNamespace")
	add(p.updateNamespace != nil, "updateNamespace")
	add(p.deleteNamespace != nil, "deleteNamespace")
	add(p.createSA != nil, "createSA")
	add(p.deleteRoleBinding, "deleteRoleBinding")
	add(p.createRoleBinding != nil, "createRoleBinding")
	add(p.createQuota != nil, "createQuota")
	add(p.updateQuota != nil, "updateQuota")
	add(p.createLimits != nil, "createLimits")
	add(p.updateLimits != nil, "updateLimits")
	add(p.createNetworkPolicy != nil, "createNetworkPolicy")
	add(p.updateNetworkPolicy != nil, "updateNetworkPolicy")
	add(p.token != nil, "token")
	add(p.updateSecret != nil, "updateSecret")
	add(p.createTarget != nil, "createTarget")
	add(p.updateTarget != nil, "updateTarget")
	add(p.markAvailable, "markAvailable")
	add(p.deleteClaim, "deleteClaim")
	if p.condition != nil {
		w = append(w, "condition="+string(p.condition.Status)+"/"+p.condition.Reason)
	}
	for _, e := range p.events {
		w = append(w, "event="+e.Reason)
	}
	return strings.Join(w, " ")
}

func TestPlanUnit(t *testing.T) {
	withState := func(mutate func(*state)) state {
		s := state{namespace: ns, target: unitTarget, claim: newClaim(), class: newClass("Delete", "")}
		mutate(&s)
		return s
	}
	live := func(mutate func(*state)) state {
		s := provisioned()
		mutate(&s)
		return s
	}
	cases := []struct {
		name    string
		s       state
		want    string
		requeue time.Duration
		check   func(*testing.T, plan)
	}{
		{
			name: "a claim marked for provisioning gets everything, the target last",
			s:    withState(func(*state) {}),
			want: "createNamespace createSA createRoleBinding createQuota createLimits createNetworkPolicy token createTarget markAvailable condition=True/Provisioned event=Provisioned",
			check: func(t *testing.T, p plan) {
				n := p.createNamespace
				if n.Labels[LabelPodSecurityEnforce] != "restricted" || n.Annotations[AnnTargetUID] != "" {
					t.Errorf("a new namespace has the default Pod Security level and names no target yet: %+v", n.ObjectMeta)
				}
				if !apiequality.Semantic.DeepEqual(p.createQuota.Spec.Hard, DefaultResourceQuota()) ||
					!apiequality.Semantic.DeepEqual(p.createLimits.Spec.Limits, []corev1.LimitRangeItem{DefaultContainerLimits()}) ||
					len(p.createNetworkPolicy.Spec.Ingress) != 1 {
					t.Errorf("default policy: %+v %+v %+v", p.createQuota.Spec, p.createLimits.Spec, p.createNetworkPolicy.Spec)
				}
				if n.Name != unitNS || n.Labels[LabelClaimNamespace] != ns || n.Labels[LabelClaimName] != "preview" ||
					n.Labels[LabelClaimUID] != "claim-uid" || n.Labels[LabelTarget] != unitTarget || n.Labels[LabelReclaimPolicy] != "Delete" {
					t.Errorf("namespace %+v", n.ObjectMeta)
				}
				if r := p.createRoleBinding; r.Namespace != unitNS || r.RoleRef.Kind != "ClusterRole" || r.RoleRef.Name != "edit" ||
					len(r.Subjects) != 1 || r.Subjects[0].Name != ServiceAccountName || r.Subjects[0].Namespace != unitNS {
					t.Errorf("role binding %+v", r)
				}
				if p.token.expiration != 24*time.Hour || p.token.existed || p.token.secret.Type != managedv1alpha1.ManagedEnvironmentSecretType ||
					p.token.secret.Namespace != ns || p.token.secret.Name != SecretName(unitTarget) {
					t.Errorf("token %+v", p.token)
				}
				d := p.createTarget
				want := appstudiov1alpha1.DeploymentTargetSpec{DeploymentTargetClassName: className, ClaimRef: "preview",
					KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
						DefaultNamespace: unitNS, APIURL: server, ClusterCredentialsSecret: SecretName(unitTarget)}}
				if d.Spec != want || d.Status.Phase != appstudiov1alpha1.DeploymentTargetPhaseAvailable ||
					d.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned] != string(ProvisionerName) ||
					d.Annotations[appstudiov1alpha1.AnnClaimUID] != "claim-uid" ||
					d.Labels[appstudiov1alpha1.AnnTargetProvisioner] != className || !slices.Contains(d.Finalizers, Finalizer) {
					t.Errorf("target %+v %+v", d.ObjectMeta, d.Spec)
				}
			},
		},
		{
			name: "the class's parameters give the namespace a quota and limits",
			s: withState(func(s *state) {
				s.class = newClass("Delete", `{"resourceQuota": {"requests.cpu": "2", "count/pods": "20"},
					"containerLimits": {"default": {"memory": "512Mi"}, "defaultRequest": {"cpu": "100m"}}, "tokenExpiration": "2h"}`)
			}),
			want: "createNamespace createSA createRoleBinding createQuota createLimits createNetworkPolicy token createTarget markAvailable condition=True/Provisioned event=Provisioned",
			check: func(t *testing.T, p plan) {
				h := p.createQuota.Spec.Hard
				if len(h) != 2 || !h["requests.cpu"].Equal(resource.MustParse("2")) || !h["count/pods"].Equal(resource.MustParse("20")) {
					t.Errorf("quota %v", h)
				}
				l := p.createLimits.Spec.Limits
				if len(l) != 1 || l[0].Type != corev1.LimitTypeContainer || !l[0].Default.Memory().Equal(resource.MustParse("512Mi")) ||
					!l[0].DefaultRequest.Cpu().Equal(resource.MustParse("100m")) {
					t.Errorf("limits %+v", l)
				}
				if p.token.expiration != 2*time.Hour {
					t.Errorf("token expiration %s", p.token.expiration)
				}
			},
		},
		{
			// The API server keeps parameters.namespace valid, so parameters never stop a claim;
			// empty quota and limits are the defaults.
			name: "empty parameters: the default quota and limits",
			s: withState(func(s *state) {
				s.class = newClass("Delete", `{"resourceQuota": {}, "containerLimits": {"max": {}}}`)
			}),
			want: "createNamespace createSA createRoleBinding createQuota createLimits createNetworkPolicy token createTarget markAvailable condition=True/Provisioned event=Provisioned",
		},
		{
			name: "a claim the binder has not marked is not provisioned",
			s:    withState(func(s *state) { delete(s.claim.Annotations, appstudiov1alpha1.AnnTargetProvisioner) }),
		},
		{
			name: "a claim marked for another class is not provisioned",
			s:    withState(func(s *state) { s.claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner] = "other" }),
		},
		{
			name: "a class of another provisioner is not ours",
			s:    withState(func(s *state) { s.class.Spec.Provisioner = appstudiov1alpha1.ProvisionerDevSandbox }),
		},
		{
			name: "no class: not ours (the binder reports the missing class)",
			s:    withState(func(s *state) { s.class = nil }),
		},
		{
			name: "a claim that names its target is not provisioned",
			s:    withState(func(s *state) { s.claim.Spec.TargetName = "mine" }),
		},
		{
			name: "a namespace of the name that is not the claim's is never adopted",
			s:    withState(func(s *state) { s.nsTaken = true }),
			want: "condition=False/NameConflict event=NameConflict",
		},
		{
			name: "a target of the name that is not ours is reported",
			s: withState(func(s *state) {
				s.dt = dt(func(t *targetT) { t.Annotations = nil; t.Finalizers = nil })
			}),
			want: "condition=False/NameConflict event=NameConflict",
		},
		{
			name: "crash after the namespace: the rest is made",
			s:    withState(func(s *state) { s.ns = hostNS() }),
			want: "createSA createRoleBinding createQuota createLimits createNetworkPolicy token createTarget markAvailable condition=True/Provisioned event=Provisioned",
		},
		{
			name: "crash after the Secret: only the target is made, the token kept",
			s: withState(func(s *state) {
				s.ns, s.sa, s.rb, s.secret = hostNS(), sa(), rb(), secretIssued(now.Add(-time.Minute), 24*time.Hour)
			}),
			want:    "createQuota createLimits createNetworkPolicy createTarget markAvailable condition=True/Provisioned event=Provisioned",
			requeue: RenewAt(now.Add(-time.Minute), now.Add(-time.Minute+24*time.Hour)).Sub(now),
		},
		{
			name:    "crash after the target's creation: its phase is set",
			s:       live(func(s *state) { s.claim = newClaim(); s.dt.Status.Phase = "" }),
			want:    "markAvailable condition=True/Provisioned",
			requeue: fresh,
		},
		{
			name: "the namespace of the claim being deleted: wait for it",
			s:    withState(func(s *state) { s.ns = hostNS(); s.ns.DeletionTimestamp = &metav1.Time{Time: now} }),
			want: "condition=False/Provisioning",
		},
		{
			name:    "provisioned, fresh token: nothing, next look at 80% of the token's life",
			s:       provisioned(),
			want:    "condition=True/Provisioned",
			requeue: 24*time.Hour*8/10 - 10*time.Minute,
		},
		{
			name: "the token at 80% of its life is renewed",
			s:    live(func(s *state) { s.secret = secretIssued(now.Add(-20*time.Hour), 24*time.Hour) }),
			want: "token condition=True/Provisioned",
			check: func(t *testing.T, p plan) {
				if !p.token.existed || p.token.secret.ResourceVersion != s0(p).ResourceVersion {
					t.Errorf("token %+v", p.token)
				}
			},
		},
		{
			name: "a token for a ServiceAccount since re-created is renewed",
			s:    live(func(s *state) { s.sa.UID = "new-sa" }),
			want: "token condition=True/Provisioned",
		},
		{
			name: "a deleted ServiceAccount is made again, with a token",
			s:    live(func(s *state) { s.sa = nil }),
			want: "createSA token condition=True/Provisioned",
		},
		{
			name: "a deleted Secret is made again",
			s:    live(func(s *state) { s.secret = nil }),
			want: "token condition=True/Provisioned",
		},
		{
			name: "a Secret of the name that is not ours is never overwritten",
			s:    live(func(s *state) { s.secret.Labels = nil }),
			want: "condition=False/NameConflict event=NameConflict",
		},
		{
			name:    "a RoleBinding of another role is replaced",
			s:       live(func(s *state) { s.rb.RoleRef.Name = "admin" }),
			want:    "deleteRoleBinding createRoleBinding condition=True/Provisioned",
			requeue: fresh,
		},
		{
			name: "a deleted namespace is made again, with everything in it",
			s:    live(func(s *state) { s.ns, s.sa, s.rb = nil, nil, nil }),
			want: "createNamespace createSA createRoleBinding createQuota createLimits createNetworkPolicy token condition=True/Provisioned",
		},
		// A tenant who may write DeploymentTargets makes one that looks ours, for no claim or
		// for a claim of another class: nothing is made for it.
		{
			name: "a target that only looks ours, with no claim: nothing is made",
			s:    live(func(s *state) { s.ns, s.sa, s.rb, s.secret, s.claim = nil, nil, nil, nil, nil }),
			want: "event=ProvisioningFailed",
		},
		{
			name: "a target that looks ours, for a claim it was not made for: nothing is made",
			s: live(func(s *state) {
				s.ns, s.sa, s.rb, s.secret = nil, nil, nil, nil
				s.dt.Labels[LabelClaimUID] = "another-claim"
			}),
			want: "condition=False/ProvisioningFailed event=ProvisioningFailed",
		},
		{
			name: "a target that looks ours, for a claim of a class of another provisioner: nothing is made",
			s: live(func(s *state) {
				s.ns, s.sa, s.rb, s.secret = nil, nil, nil, nil
				s.class.Spec.Provisioner = "example.com/other"
			}),
			want: "condition=False/ProvisioningFailed event=ProvisioningFailed",
		},
		{
			name: "a new server URL renews the token and updates the target",
			s: live(func(s *state) {
				s.dt.Spec.KubernetesClusterCredentials.APIURL = "https://old.example.com"
				s.secret.Annotations[annKubeconfigConfig] = "old"
			}),
			want: "token updateTarget condition=True/Provisioned",
		},
		{
			name:    "the credentials of the target's spec are restored",
			s:       live(func(s *state) { s.dt.Spec.KubernetesClusterCredentials.DefaultNamespace = "kube-system" }),
			want:    "updateTarget condition=True/Provisioned",
			requeue: fresh,
			check: func(t *testing.T, p plan) {
				if p.updateTarget.Spec.KubernetesClusterCredentials.DefaultNamespace != unitNS || p.updateTarget.Spec.ClaimRef != "preview" {
					t.Errorf("target spec %+v", p.updateTarget.Spec)
				}
			},
		},
		{
			name: "a released target keeps its cleared claimRef and phase",
			s: live(func(s *state) {
				s.claim = nil
				s.dt.Spec.ClaimRef = ""
				s.dt.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseReleased
			}),
			requeue: fresh,
		},
		{
			name: "a quota the class no longer sets is the default again; a changed one updated",
			s: live(func(s *state) {
				s.class = newClass("Delete", `containerLimits: {max: {cpu: "4"}}`)
				s.quota = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: ResourceQuotaName, Namespace: unitNS}}
				s.limits = &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: LimitRangeName, Namespace: unitNS}}
			}),
			want:    "updateQuota updateLimits condition=True/Provisioned",
			requeue: fresh,
		},
		{
			name: "the class gone: quota and limits kept as they are",
			s: live(func(s *state) {
				s.class = nil
				s.quota = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: ResourceQuotaName, Namespace: unitNS}}
			}),
			want:    "condition=True/Provisioned",
			requeue: fresh,
		},
		{
			name:    "ttl not reached: the claim is looked at again when it is",
			s:       live(func(s *state) { s.class = newClass("Delete", "ttl: 3h") }),
			want:    "updateTarget condition=True/Provisioned",
			requeue: 2 * time.Hour,
			check: func(t *testing.T, p plan) {
				if got := p.updateTarget.Annotations[AnnExpires]; got != now.Add(2*time.Hour).Format(time.RFC3339) {
					t.Errorf("expires %q", got)
				}
			},
		},
		{
			name: "ttl reached: the claim is deleted",
			s: live(func(s *state) {
				s.class = newClass("Delete", "ttl: 1h")
				s.dt.Annotations[AnnExpires] = now.Format(time.RFC3339)
			}),
			want:    "deleteClaim condition=True/Provisioned event=Expired",
			requeue: fresh,
		},
		{
			name: "ttl: a target re-bound to another claim (Retain) expires no claim",
			s: live(func(s *state) {
				s.class = newClass("Retain", "ttl: 1h")
				s.claim = nil
				s.dt.Spec.ClaimRef = "other"
			}),
			requeue: fresh,
		},
		{
			name: "ttl: relabelling the target's claim-uid does not escape it, and the label is restored",
			s: live(func(s *state) {
				s.class = newClass("Delete", "ttl: 1h")
				s.dt.Labels[LabelClaimUID] = "some-other-claim"
			}),
			want:    "updateTarget deleteClaim condition=True/Provisioned event=Expired",
			requeue: fresh,
			check: func(t *testing.T, p plan) {
				if p.updateTarget.Labels[LabelClaimUID] != "claim-uid" {
					t.Errorf("label %v", p.updateTarget.Labels)
				}
			},
		},
		{
			name: "a retained namespace is not re-taken by a target written by hand: nothing is made or renewed",
			s: live(func(s *state) {
				s.claim = nil
				s.ns = hostNS(LabelRetained, "true")
				s.secret.Labels[LabelRetained] = "true"
				s.secret.Annotations[annTokenIssued] = now.Add(-23 * time.Hour).Format(time.RFC3339)
				s.dt.UID = "by-hand"
				s.dt.Spec.KubernetesClusterCredentials = appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{}
			}),
			want: "event=NameConflict",
		},
		{
			name: "a retained namespace is not deleted through a target written by hand for a class of reclaim policy Delete",
			s: live(func(s *state) {
				s.claim = nil
				s.ns = hostNS(LabelRetained, "true")
				s.secret.Labels[LabelRetained] = "true"
				s.dt.UID = "by-hand"
				deleting(s.dt)
			}),
			want: "updateTarget",
			check: func(t *testing.T, p plan) {
				if slices.Contains(p.updateTarget.Finalizers, Finalizer) {
					t.Errorf("only the finalizer is taken off: %v", p.updateTarget.Finalizers)
				}
			},
		},
		{
			name: "a namespace serving another target refuses this one, even with matching labels",
			s:    live(func(s *state) { s.dt.UID = "other" }),
			want: "condition=False/NameConflict event=NameConflict",
		},
		{
			name: "a retained namespace that names no target (made before the record) is refused too",
			s: live(func(s *state) {
				s.claim = nil
				s.ns = hostNS(LabelRetained, "true")
				delete(s.ns.Annotations, AnnTargetUID)
			}),
			want: "event=NameConflict",
		},
		{
			name:    "a namespace not yet naming its target records it",
			s:       live(func(s *state) { delete(s.ns.Annotations, AnnTargetUID) }),
			want:    "updateNamespace condition=True/Provisioned",
			requeue: fresh,
			check: func(t *testing.T, p plan) {
				if p.updateNamespace.Annotations[AnnTargetUID] != "dt-uid" {
					t.Errorf("annotations %v", p.updateNamespace.Annotations)
				}
			},
		},
		{
			name: "a namespace labelled privileged is raised to its class's level, with a warning",
			s: live(func(s *state) {
				s.ns.Labels[LabelPodSecurityEnforce] = "privileged"
				s.ns.Labels[LabelPodSecurityWarn] = "privileged"
			}),
			want:    "updateNamespace condition=True/Provisioned event=PolicyRestored",
			requeue: fresh,
			check: func(t *testing.T, p plan) {
				l := p.updateNamespace.Labels
				if l[LabelPodSecurityEnforce] != "restricted" || l[LabelPodSecurityWarn] != "restricted" || l[LabelPodSecurityAudit] != "restricted" {
					t.Errorf("labels %v", l)
				}
			},
		},
		{
			name: "a class that changes its policy changes the namespace's",
			s: live(func(s *state) {
				s.class = newClass("Delete", `{"podSecurityLevel": "baseline", "labels": {"team": "a"}, "networkPolicy": {"allowFromSameNamespace": false}}`)
			}),
			want:    "updateNamespace updateNetworkPolicy condition=True/Provisioned",
			requeue: fresh,
			check: func(t *testing.T, p plan) {
				if l := p.updateNamespace.Labels; l[LabelPodSecurityEnforce] != "baseline" || l["team"] != "a" {
					t.Errorf("labels %v", l)
				}
				if len(p.updateNetworkPolicy.Spec.Ingress) != 0 {
					t.Errorf("ingress %v", p.updateNetworkPolicy.Spec.Ingress)
				}
			},
		},
		{
			name: "ttl: no creationTimestamp yet, no expiry",
			s: live(func(s *state) {
				s.class = newClass("Delete", "ttl: 1h")
				s.dt.CreationTimestamp = metav1.Time{}
			}),
			want:    "condition=True/Provisioned",
			requeue: fresh,
		},
		{
			name: "reclaim Delete: the Secret and the namespace are deleted, the finalizer kept",
			s:    live(func(s *state) { s.claim = nil; deleting(s.dt) }),
			want: "deleteSecret deleteNamespace event=Deprovisioning",
		},
		{
			name: "reclaim Delete: the namespace terminating, wait",
			s: live(func(s *state) {
				s.claim = nil
				s.secret = nil
				deleting(s.dt)
				s.ns.DeletionTimestamp = &metav1.Time{Time: now}
			}),
		},
		{
			name: "reclaim Delete: the namespace gone, the finalizer goes",
			s:    live(func(s *state) { s.claim = nil; s.secret = nil; s.ns = nil; deleting(s.dt) }),
			want: "updateTarget event=Deprovisioned",
			check: func(t *testing.T, p plan) {
				if p.confirmNamespaceGone != unitNS {
					t.Errorf("confirmNamespaceGone %q", p.confirmNamespaceGone)
				}
				if slices.Contains(p.updateTarget.Finalizers, Finalizer) || !slices.Contains(p.updateTarget.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer) {
					t.Errorf("finalizers %v", p.updateTarget.Finalizers)
				}
			},
		},
		{
			name: "reclaim Retain: namespace and Secret kept, labelled retained; the finalizer goes",
			s:    live(func(s *state) { s.claim = nil; s.class = newClass("Retain", ""); deleting(s.dt) }),
			want: "updateNamespace updateSecret updateTarget event=Retained",
			check: func(t *testing.T, p plan) {
				if p.updateNamespace.Annotations[AnnTargetUID] != "dt-uid" {
					t.Errorf("a retained namespace names the target it was kept from: %v", p.updateNamespace.Annotations)
				}
				if p.updateNamespace.Labels[LabelRetained] != "true" || p.updateSecret.Labels[LabelRetained] != "true" {
					t.Errorf("labels %v %v", p.updateNamespace.Labels, p.updateSecret.Labels)
				}
			},
		},
		{
			name: "reclaim with the class gone: the policy the namespace recorded",
			s: live(func(s *state) {
				s.claim, s.class = nil, nil
				s.ns = hostNS(LabelReclaimPolicy, "Retain")
				deleting(s.dt)
			}),
			want: "updateNamespace updateSecret updateTarget event=Retained",
		},
		{
			name: "reclaim: a Secret of the name that is not ours is left",
			s:    live(func(s *state) { s.claim = nil; s.secret.Labels = nil; deleting(s.dt) }),
			want: "deleteNamespace event=Deprovisioning",
		},
		{
			name: "a target being deleted without our finalizer is left",
			s: live(func(s *state) {
				deleting(s.dt)
				s.dt.Finalizers = []string{"other"}
			}),
		},
		{
			name: "crash before the target, claim gone: namespace and Secret are deleted",
			s: withState(func(s *state) {
				s.claim = nil
				s.ns, s.secret = hostNS(), secretIssued(now, time.Hour)
			}),
			want: "checkNoTarget deleteSecret deleteNamespace",
		},
		{
			name: "crash before the target, claim bound elsewhere meanwhile: deleted too",
			s: withState(func(s *state) {
				s.claim.Spec.TargetName = "other"
				s.claim.Annotations[appstudiov1alpha1.AnnBindCompleted] = "true"
				s.ns = hostNS()
			}),
			want: "checkNoTarget deleteNamespace",
		},
		{
			name: "retained namespace and Secret are never collected",
			s: withState(func(s *state) {
				s.claim = nil
				s.ns = hostNS(LabelRetained, "true")
				s.secret = secretIssued(now, time.Hour)
				s.secret.Labels[LabelRetained] = "true"
			}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := planUnit(tc.s, cfg, now)
			if got := what(p); got != tc.want {
				t.Errorf("plan\n got: %s\nwant: %s", got, tc.want)
			}
			if p.requeueAfter != tc.requeue {
				t.Errorf("requeueAfter %s, want %s", p.requeueAfter, tc.requeue)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// s0 is the Secret of provisioned(), to compare with.
func s0(plan) *corev1.Secret { return provisioned().secret }

func TestConditionWrittenOnlyOnChange(t *testing.T) {
	s := provisioned()
	s.claim.Status.Conditions = []metav1.Condition{{Type: ConditionProvisioned, Status: metav1.ConditionTrue, Reason: ReasonProvisioned,
		ObservedGeneration: 1, Message: "DeploymentTarget " + unitTarget + " provisioned with namespace " + unitNS}}
	if p := planUnit(s, cfg, now); p.condition != nil || len(p.events) != 0 {
		t.Errorf("condition %+v events %v", p.condition, p.events)
	}
}

func TestNames(t *testing.T) {
	claim := func(ns, name, uid string) *claimT {
		return &claimT{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	long := strings.Repeat("a", 63)
	cases := []struct{ ns, name, uid string }{
		{"tenant", "preview", "u1"},
		{long, long, "u1"},
		{"tenant", "with.dots." + strings.Repeat("x", 240), "u1"},
		{"t", "x--", "u1"},
		{"tenant", "-", "u1"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		for i, n := range []string{NamespaceName(tc.ns, tc.name, tc.uid), TargetName(claim(tc.ns, tc.name, tc.uid))} {
			if errs := validation.IsDNS1123Label(n); len(errs) != 0 {
				t.Errorf("%q: %v", n, errs)
			}
			if k := string(rune('0'+i)) + n; seen[k] {
				t.Errorf("%q twice", n)
			} else {
				seen[k] = true
			}
		}
		if errs := validation.IsDNS1123Subdomain(SecretName(TargetName(claim(tc.ns, tc.name, tc.uid)))); len(errs) != 0 {
			t.Errorf("secret name: %v", errs)
		}
	}
	if got := NamespaceName("tenant", "preview", "u1"); got != NamespaceName("tenant", "preview", "u1") || !strings.HasPrefix(got, "tenant-preview-") ||
		len(got) != len("tenant-preview-")+hashLen {
		t.Errorf("deterministic, readable: %q", got)
	}
	// A re-created claim (new UID), and the same name in another namespace, get other names.
	a, b, c := NamespaceName("t", "p", "u1"), NamespaceName("t", "p", "u2"), NamespaceName("t2", "p", "u1")
	if a == b || a == c || TargetName(claim("t", "p", "u1")) == TargetName(claim("t", "p", "u2")) {
		t.Errorf("collision: %s %s %s", a, b, c)
	}
	// "a-bc" and "a-b" + "c" in namespace and name do not collide: the hash separates them.
	if NamespaceName("a-b", "c", "u") == NamespaceName("a", "b-c", "u") {
		t.Error("namespace/name ambiguity")
	}
	if l := labelsFor("t", strings.Repeat("x", 100), "u", "target"); l[LabelClaimName] != "" {
		t.Errorf("a claim name too long for a label value is left out: %v", l)
	}
}

func TestParametersOf(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name      string
		class     *classT
		ttl, life time.Duration
	}{
		{"no class", nil, 0, DefaultTokenExpiration},
		{"no parameters", newClass("Delete", ""), 0, DefaultTokenExpiration},
		{"empty parameters", newClass("Delete", "{}"), 0, DefaultTokenExpiration},
		{"durations", newClass("Delete", "ttl: 72h\ntokenExpiration: 1h"), 72 * time.Hour, time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parametersOf(tc.class)
			if got.ttl != tc.ttl || got.tokenExpiration != tc.life {
				t.Errorf("got %+v", got)
			}
			// Whatever the class says or leaves out, the namespace gets a policy (policyOf).
			if got.policy.podSecurity == "" || got.policy.quota == nil || got.policy.limits.Type != corev1.LimitTypeContainer {
				t.Errorf("policy %+v", got.policy)
			}
		})
	}
	// The parameters are a copy: the plan's objects never share maps with the lister's class.
	class := newClass("Delete", `{"resourceQuota": {"count/pods": "1"}, "containerLimits": {"max": {"cpu": "1"}}, "labels": {"a": "b"}}`)
	p := parametersOf(class)
	p.policy.quota["count/pods"] = q("2")
	p.policy.limits.Max["cpu"] = q("2")
	p.policy.labels["a"] = "c"
	if n := class.Spec.Parameters.Namespace; !n.ResourceQuota["count/pods"].Equal(q("1")) || !n.ContainerLimits.Max.Cpu().Equal(q("1")) || n.Labels["a"] != "b" {
		t.Errorf("the class was changed: %+v", n)
	}
}

func TestRenewAt(t *testing.T) {
	issued := now
	if got := RenewAt(issued, issued.Add(10*time.Hour)); !got.Equal(issued.Add(8 * time.Hour)) {
		t.Errorf("RenewAt %s", got)
	}
	// The server may shorten the lifetime asked for: the renewal follows what it gave.
	if got := RenewAt(issued, issued.Add(time.Hour)); !got.Equal(issued.Add(48 * time.Minute)) {
		t.Errorf("RenewAt %s", got)
	}
}

func TestBuildKubeconfigHasNoInsecureSetting(t *testing.T) {
	b, err := buildKubeconfig(cfg, "ns1", "tok")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"server: " + server, "namespace: ns1", "token: tok", "certificate-authority-data:"} {
		if !strings.Contains(s, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "insecure") {
		t.Errorf("kubeconfig skips TLS verification:\n%s", s)
	}
}
