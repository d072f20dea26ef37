package namespaceprovisioner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPolicyOf(t *testing.T) {
	q := resource.MustParse
	sameNamespace := networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}
	cases := []struct {
		name   string
		params string // spec.parameters.namespace, "" for none
		check  func(*testing.T, namespacePolicy)
	}{
		{"a class that says nothing gets the safe default", "", func(t *testing.T, p namespacePolicy) {
			if p.podSecurity != "restricted" {
				t.Errorf("pod security %q", p.podSecurity)
			}
			if !apiequality.Semantic.DeepEqual(p.quota, DefaultResourceQuota()) || !apiequality.Semantic.DeepEqual(p.limits, DefaultContainerLimits()) {
				t.Errorf("quota %v limits %v", p.quota, p.limits)
			}
			if p.network.PodSelector.Size() != 0 || len(p.network.PolicyTypes) != 1 || p.network.PolicyTypes[0] != networkingv1.PolicyTypeIngress ||
				len(p.network.Ingress) != 1 || !apiequality.Semantic.DeepEqual(p.network.Ingress[0], sameNamespace) {
				t.Errorf("network policy %+v", p.network)
			}
			if p.labels != nil || p.annotations != nil {
				t.Errorf("labels %v annotations %v", p.labels, p.annotations)
			}
		}},
		{"empty parameters are the default too", "{}", func(t *testing.T, p namespacePolicy) {
			if p.podSecurity != "restricted" || !apiequality.Semantic.DeepEqual(p.quota, DefaultResourceQuota()) ||
				!apiequality.Semantic.DeepEqual(p.limits, DefaultContainerLimits()) || len(p.network.Ingress) != 1 {
				t.Errorf("%+v", p)
			}
		}},
		{"the class's level, quota and limits", `{"podSecurityLevel": "baseline", "resourceQuota": {"count/pods": "3"},
			"containerLimits": {"max": {"cpu": "1"}}}`, func(t *testing.T, p namespacePolicy) {
			if p.podSecurity != "baseline" {
				t.Errorf("pod security %q", p.podSecurity)
			}
			if !apiequality.Semantic.DeepEqual(p.quota, corev1.ResourceList{"count/pods": q("3")}) {
				t.Errorf("quota %v", p.quota)
			}
			if !apiequality.Semantic.DeepEqual(p.limits, corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"cpu": q("1")}}) {
				t.Errorf("limits %+v", p.limits)
			}
		}},
		{"empty container limits are the default", `{"containerLimits": {"max": {}}}`, func(t *testing.T, p namespacePolicy) {
			if !apiequality.Semantic.DeepEqual(p.limits, DefaultContainerLimits()) {
				t.Errorf("limits %+v", p.limits)
			}
		}},
		{"deny all ingress", `{"networkPolicy": {"allowFromSameNamespace": false}}`, func(t *testing.T, p namespacePolicy) {
			if p.network.Ingress == nil || len(p.network.Ingress) != 0 || len(p.network.PolicyTypes) != 1 {
				t.Errorf("a NetworkPolicy with an empty ingress list denies every ingress: %+v", p.network)
			}
		}},
		{"ingress from selected namespaces", `{"networkPolicy": {"allowFromNamespaces": [{"matchLabels": {"team": "ingress"}},
			{"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}]}}`, func(t *testing.T, p namespacePolicy) {
			want := []networkingv1.NetworkPolicyIngressRule{sameNamespace, {From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ingress"}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}},
			}}}
			if !apiequality.Semantic.DeepEqual(p.network.Ingress, want) {
				t.Errorf("ingress %+v", p.network.Ingress)
			}
		}},
		{"labels and annotations", `{"labels": {"team": "a"}, "annotations": {"owner": "jane"}}`, func(t *testing.T, p namespacePolicy) {
			if p.labels["team"] != "a" || p.annotations["owner"] != "jane" {
				t.Errorf("labels %v annotations %v", p.labels, p.annotations)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class := newClass("Delete", c.params)
			c.check(t, policyOf(class.Spec.Parameters.Namespace))
		})
	}
}

func TestPolicyApplyTo(t *testing.T) {
	cases := []struct {
		name     string
		level    string
		labels   map[string]string
		weakened string
		want     map[string]string
	}{
		{"a new namespace", "restricted", nil, "unset (privileged)",
			map[string]string{LabelPodSecurityEnforce: "restricted", LabelPodSecurityAudit: "restricted", LabelPodSecurityWarn: "restricted", "team": "a"}},
		{"a namespace labelled privileged is raised", "restricted",
			map[string]string{LabelPodSecurityEnforce: "privileged", LabelPodSecurityWarn: "privileged", "other": "kept"}, "privileged",
			map[string]string{LabelPodSecurityEnforce: "restricted", LabelPodSecurityAudit: "restricted", LabelPodSecurityWarn: "restricted", "team": "a", "other": "kept"}},
		{"an unknown level is privileged", "baseline", map[string]string{LabelPodSecurityEnforce: "bogus"}, "bogus",
			map[string]string{LabelPodSecurityEnforce: "baseline", LabelPodSecurityAudit: "baseline", LabelPodSecurityWarn: "baseline", "team": "a"}},
		{"a stricter namespace follows its class, without a warning", "baseline", map[string]string{LabelPodSecurityEnforce: "restricted"}, "",
			map[string]string{LabelPodSecurityEnforce: "baseline", LabelPodSecurityAudit: "baseline", LabelPodSecurityWarn: "baseline", "team": "a"}},
		{"the class's own labels win", "privileged", map[string]string{"team": "b"}, "",
			map[string]string{LabelPodSecurityEnforce: "privileged", LabelPodSecurityAudit: "privileged", LabelPodSecurityWarn: "privileged", "team": "a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := policyOf(newClass("Delete", `{"podSecurityLevel": "`+c.level+`", "labels": {"team": "a"}, "annotations": {"owner": "jane"}}`).Spec.Parameters.Namespace)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: c.labels}}
			if got := pol.applyTo(ns); got != c.weakened {
				t.Errorf("weakened %q, want %q", got, c.weakened)
			}
			if !apiequality.Semantic.DeepEqual(ns.Labels, c.want) {
				t.Errorf("labels %v, want %v", ns.Labels, c.want)
			}
			if ns.Annotations["owner"] != "jane" {
				t.Errorf("annotations %v", ns.Annotations)
			}
		})
	}
}
