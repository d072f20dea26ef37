package gitopsdeployment

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// StuckOutOfSyncAfter is how long the Application of an automated GitOpsDeployment may stay
// OutOfSync, as this process sees it, before gitops_agent_applications_stuck_out_of_sync
// counts it: Argo CD syncs an automated Application as soon as it finds it OutOfSync, so one
// still OutOfSync after this long is not being deployed.
const StuckOutOfSyncAfter = 10 * time.Minute

var (
	applicationsDesc = metrics.NewDesc("gitops_agent_applications",
		"Argo CD Applications the agent keeps for GitOpsDeployments, by whether they sync automatically and by "+
			"Argo CD's sync and health status (reported while the agent runs the Argo CD controllers).",
		[]string{"automated", "sync_status", "health_status"}, nil, metrics.ALPHA, "")
	stuckOutOfSyncDesc = metrics.NewDesc("gitops_agent_applications_stuck_out_of_sync",
		"Applications of automated GitOpsDeployments that have been OutOfSync, continuously as far as this process has seen, "+
			"for 10 minutes or more (reported while the agent runs the Argo CD controllers).",
		nil, nil, metrics.ALPHA, "")
	lastReconcileDesc = metrics.NewDesc("gitops_agent_argocd_last_reconcile_timestamp_seconds",
		"When Argo CD's application-controller last reconciled one of the agent's Applications (the newest status.reconciledAt), "+
			"in seconds since the epoch; absent while none has been (reported while the agent runs the Argo CD controllers).",
		nil, nil, metrics.ALPHA, "")
)

// applicationMetrics reports, at scrape time, on the Applications of the newest Controller of
// the process, while it runs: a standby agent's cache holds the same Applications, and
// reporting them twice would count them twice.
type applicationMetrics struct {
	metrics.BaseStableCollector
	// source lists the Applications, and tells whether they are to be reported.
	source    func() ([]*argov1alpha1.Application, bool)
	now       func() time.Time
	outOfSync *outOfSyncSince
}

// outOfSyncSince is when each automated Application was first seen OutOfSync, by UID.
type outOfSyncSince struct {
	mu    sync.Mutex
	since map[types.UID]time.Time
}

var (
	registerMetrics sync.Once
	current         atomic.Pointer[Controller]
	appMetrics      = &applicationMetrics{source: currentApplications, now: time.Now, outOfSync: &outOfSyncSince{}}
)

// RegisterMetrics has /metrics (the legacy registry) report on the Applications this
// controller keeps while it runs; the controller of the latest call is the one reported.
func (c *Controller) RegisterMetrics() {
	current.Store(c)
	registerMetrics.Do(func() { legacyregistry.CustomMustRegister(appMetrics) })
}

func currentApplications() ([]*argov1alpha1.Application, bool) {
	c := current.Load()
	if c == nil || !c.Running() {
		return nil, false
	}
	apps, err := c.applications.Applications(c.argoNamespace).List(labels.Everything())
	return apps, err == nil
}

func (m *applicationMetrics) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- applicationsDesc
	ch <- stuckOutOfSyncDesc
	ch <- lastReconcileDesc
}

func (m *applicationMetrics) CollectWithStability(ch chan<- metrics.Metric) {
	apps, ok := m.source()
	if !ok {
		return
	}
	now := m.now()
	type status struct{ automated, sync, health string }
	counts := map[status]int{}
	stuck := 0
	var newest time.Time
	outOfSync := map[types.UID]bool{}

	tracked := m.outOfSync
	tracked.mu.Lock()
	defer tracked.mu.Unlock()
	if tracked.since == nil {
		tracked.since = map[types.UID]time.Time{}
	}
	for _, app := range apps {
		if app.Labels[argocd.LabelDeploymentNamespace] == "" {
			continue // not one of the agent's
		}
		automated := app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.Automated != nil
		counts[status{strconv.FormatBool(automated), orUnknown(string(app.Status.Sync.Status)), orUnknown(string(app.Status.Health.Status))}]++
		if t := app.Status.ReconciledAt; t != nil && t.After(newest) {
			newest = t.Time
		}
		if !automated || app.DeletionTimestamp != nil || app.Status.Sync.Status != argov1alpha1.SyncStatusCodeOutOfSync {
			continue
		}
		outOfSync[app.UID] = true
		since, seen := tracked.since[app.UID]
		if !seen {
			since = now
			tracked.since[app.UID] = now
		}
		if now.Sub(since) >= StuckOutOfSyncAfter {
			stuck++
		}
	}
	for uid := range tracked.since {
		if !outOfSync[uid] {
			delete(tracked.since, uid)
		}
	}

	for s, n := range counts {
		ch <- metrics.NewLazyConstMetric(applicationsDesc, metrics.GaugeValue, float64(n), s.automated, s.sync, s.health)
	}
	ch <- metrics.NewLazyConstMetric(stuckOutOfSyncDesc, metrics.GaugeValue, float64(stuck))
	if !newest.IsZero() {
		ch <- metrics.NewLazyConstMetric(lastReconcileDesc, metrics.GaugeValue, float64(newest.UnixNano())/1e9)
	}
}

// orUnknown is a status as a label value: Argo CD leaves it empty until it has compared.
func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}
