package agent

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// client-go's leader election, request latency and rate-limiter metrics, which cmd/agent
	// serves on /metrics with the rest of the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
)

// agentInfo names the Argo CD instance the agent process drives, so that its other series
// (which carry the scraped process's job and instance labels) can be joined to it:
//
//	leader_election_master_status * on (job, instance) group_left (argocd_instance) gitops_agent_info
var agentInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Name: "gitops_agent_info",
	Help: "Always 1: the ArgoCDInstance the agent serves (--instance; empty when it serves every namespace) and the " +
		"Argo CD namespace it drives (--argocd-namespace).",
	StabilityLevel: metrics.ALPHA,
}, []string{"argocd_instance", "argocd_namespace"})

var registerInfo sync.Once

// reportInfo sets gitops_agent_info to this agent's instance and namespace.
func reportInfo(instance, argoNamespace string) {
	registerInfo.Do(func() { legacyregistry.MustRegister(agentInfo) })
	agentInfo.Reset()
	agentInfo.WithLabelValues(instance, argoNamespace).Set(1)
}
