package namespaceprovisioner

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// The Pod Security admission labels of a namespace: the provisioner sets all three to the
// class's level, so that a pod the level forbids is refused, audited and warned about.
const (
	LabelPodSecurityEnforce = "pod-security.kubernetes.io/enforce"
	LabelPodSecurityAudit   = "pod-security.kubernetes.io/audit"
	LabelPodSecurityWarn    = "pod-security.kubernetes.io/warn"
)

// NetworkPolicyName is the provisioned namespace's NetworkPolicy.
const NetworkPolicyName = "deployment-target"

// DefaultPodSecurityLevel is the level of a class that names none.
const DefaultPodSecurityLevel = appstudiov1alpha1.PodSecurityRestricted

// DefaultResourceQuota is the hard limits of a class that sets no resourceQuota: room for a
// small application (a few Deployments of a few replicas), no LoadBalancer or NodePort
// Services, which expose the cluster beyond the namespace, and bounded storage.
func DefaultResourceQuota() corev1.ResourceList {
	q := resource.MustParse
	return corev1.ResourceList{
		"requests.cpu": q("4"), "requests.memory": q("8Gi"),
		"limits.cpu": q("8"), "limits.memory": q("16Gi"),
		"pods": q("50"), "persistentvolumeclaims": q("10"), "requests.storage": q("50Gi"),
		"services.loadbalancers": q("0"), "services.nodeports": q("0"),
	}
}

// DefaultContainerLimits is the LimitRange item of a class that sets no containerLimits: the
// defaults let a container that states no requests or limits run under DefaultResourceQuota
// (a quota on requests.cpu refuses a pod without them), the maximum keeps one container from
// taking the whole quota.
func DefaultContainerLimits() corev1.LimitRangeItem {
	q := resource.MustParse
	return corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{"cpu": q("500m"), "memory": q("512Mi")},
		DefaultRequest: corev1.ResourceList{"cpu": q("100m"), "memory": q("128Mi")},
		Max:            corev1.ResourceList{"cpu": q("2"), "memory": q("4Gi")},
	}
}

// namespacePolicy is the administrator's policy for the namespaces of a class.
type namespacePolicy struct {
	// podSecurity is the Pod Security level the namespace enforces, audits and warns about.
	podSecurity appstudiov1alpha1.PodSecurityLevel
	// labels and annotations are the class's own, put on the namespace beside the
	// provisioner's.
	labels, annotations map[string]string
	quota               corev1.ResourceList
	limits              corev1.LimitRangeItem
	network             networkingv1.NetworkPolicySpec
}

// policyOf is the policy of a class's parameters (nil: the class sets none): what a class
// leaves out gets the safe default, restricted Pod Security, DefaultResourceQuota,
// DefaultContainerLimits and a NetworkPolicy that admits the namespace's own pods only.
func policyOf(n *appstudiov1alpha1.NamespaceProvisionerParameters) namespacePolicy {
	if n == nil {
		n = &appstudiov1alpha1.NamespaceProvisionerParameters{}
	}
	pol := namespacePolicy{
		podSecurity: n.PodSecurityLevel,
		labels:      maps.Clone(n.Labels),
		annotations: maps.Clone(n.Annotations),
		quota:       nonEmpty(n.ResourceQuota),
		limits:      DefaultContainerLimits(),
		network:     networkPolicySpec(n.NetworkPolicy),
	}
	if pol.podSecurity == "" {
		pol.podSecurity = DefaultPodSecurityLevel
	}
	if pol.quota == nil {
		pol.quota = DefaultResourceQuota()
	}
	if l := n.ContainerLimits; l != nil {
		item := corev1.LimitRangeItem{
			Type:                 corev1.LimitTypeContainer,
			Default:              nonEmpty(l.Default),
			DefaultRequest:       nonEmpty(l.DefaultRequest),
			Max:                  nonEmpty(l.Max),
			Min:                  nonEmpty(l.Min),
			MaxLimitRequestRatio: nonEmpty(l.MaxLimitRequestRatio),
		}
		if item.Default != nil || item.DefaultRequest != nil || item.Max != nil || item.Min != nil || item.MaxLimitRequestRatio != nil {
			pol.limits = item
		}
	}
	return pol
}

// networkPolicySpec selects every pod of the namespace and admits only the ingress np
// allows: an empty ingress list denies all of it. Egress is not restricted: DNS and the
// tenant's own dependencies outside the cluster stay reachable.
func networkPolicySpec(np *appstudiov1alpha1.NamespaceNetworkPolicy) networkingv1.NetworkPolicySpec {
	spec := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{},
	}
	if np == nil || np.AllowFromSameNamespace == nil || *np.AllowFromSameNamespace {
		spec.Ingress = append(spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}})
	}
	if np != nil && len(np.AllowFromNamespaces) > 0 {
		rule := networkingv1.NetworkPolicyIngressRule{}
		for i := range np.AllowFromNamespaces {
			rule.From = append(rule.From, networkingv1.NetworkPolicyPeer{NamespaceSelector: np.AllowFromNamespaces[i].DeepCopy()})
		}
		spec.Ingress = append(spec.Ingress, rule)
	}
	return spec
}

// podSecurityRank orders the levels from the most permissive; a missing or unknown label is
// privileged, as Pod Security admission treats it by default.
func podSecurityRank(level string) int {
	switch appstudiov1alpha1.PodSecurityLevel(level) {
	case appstudiov1alpha1.PodSecurityRestricted:
		return 2
	case appstudiov1alpha1.PodSecurityBaseline:
		return 1
	}
	return 0
}

// applyTo puts the policy's labels and annotations on ns, a copy the caller may change, and
// tells what it found weaker than the class: the enforced level it replaced, "" when none
// was below the class's. The class's Pod Security level always wins, in both directions:
// the namespace is the provisioner's, the class is the administrator's word on it, and a level
// someone else set on a namespace the provisioner adopts is exactly what must not survive.
func (pol namespacePolicy) applyTo(ns *corev1.Namespace) (weakened string) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	if cur := ns.Labels[LabelPodSecurityEnforce]; podSecurityRank(cur) < podSecurityRank(string(pol.podSecurity)) {
		weakened = cur
		if weakened == "" {
			weakened = "unset (privileged)"
		}
	}
	for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityAudit, LabelPodSecurityWarn} {
		ns.Labels[k] = string(pol.podSecurity)
	}
	maps.Copy(ns.Labels, pol.labels)
	if len(pol.annotations) > 0 {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		maps.Copy(ns.Annotations, pol.annotations)
	}
	return weakened
}
