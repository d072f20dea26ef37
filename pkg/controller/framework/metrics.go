package framework

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// Queue depth, adds, time in queue, work duration and retries of every controller's work
	// queue, labelled by the controller's name.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// The names keep the agent's prefix that dashboards and docs know, whichever package the
// controller lives in.
var (
	reconcilesTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "gitops_agent",
		Name:           "reconciles_total",
		Help:           "Reconciles by controller and result (success, error, panic).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller", "result"})
	reconcilePanicsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "gitops_agent",
		Name:           "reconcile_panics_total",
		Help:           "Reconciles that panicked (recovered, the key retried with backoff), by controller: each is a defect to report.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "gitops_agent",
		Name:           "reconcile_duration_seconds",
		Help:           "Time one reconcile took, by controller.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})
	oldestUnreconciledDesc = metrics.NewDesc("gitops_agent_oldest_unreconciled_seconds",
		"Age of the oldest change a running controller has been told of and not yet reconciled successfully "+
			"(none for a controller waiting for its Lease).",
		[]string{"controller"}, nil, metrics.ALPHA, "")
	controllerRunningDesc = metrics.NewDesc("gitops_agent_controller_running",
		"1 for a controller this process runs (it holds the controller's Lease), 0 for one it waits to run (a standby).",
		[]string{"controller"}, nil, metrics.ALPHA, "")
)

var registerOnce sync.Once

// RegisterMetrics adds the reconcile metrics of the controllers listed to the legacy registry,
// which cmd/agent serves. Only the first call registers; every call starts the counters of the
// controllers listed at zero, so that the first error or panic is an increase of a series
// that exists already, which rate() and increase() see.
func RegisterMetrics(controllers func() []*Controller) {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcilesTotal, reconcileDuration, reconcilePanicsTotal)
		legacyregistry.CustomMustRegister(&oldestCollector{controllers: controllers})
	})
	for _, c := range controllers() {
		for _, result := range []string{"success", "error", "panic"} {
			reconcilesTotal.WithLabelValues(c.Name, result)
		}
		reconcilePanicsTotal.WithLabelValues(c.Name)
	}
}

// PendingSince remembers, per key, when the first change not yet reconciled arrived. A
// workqueue forgets that once a key is retried, so its own latency metric cannot tell how long
// a change has waited across failed attempts.
type PendingSince struct {
	mu    sync.Mutex
	since map[string]changeTimes
}

type changeTimes struct{ first, last time.Time }

// Add records a change of key at now.
func (p *PendingSince) Add(key string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since == nil {
		p.since = map[string]changeTimes{}
	}
	t, ok := p.since[key]
	if !ok {
		t.first = now
	}
	t.last = now
	p.since[key] = t
}

// Done records a successful reconcile of key that began at started: changes up to then are
// reconciled; one that arrived during the reconcile is still waiting.
func (p *PendingSince) Done(key string, started time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.since[key]
	switch {
	case !ok:
	case !t.last.After(started):
		delete(p.since, key)
	default:
		p.since[key] = changeTimes{first: t.last, last: t.last}
	}
}

// Oldest is when the oldest change still waiting arrived; false when none waits.
func (p *PendingSince) Oldest() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest time.Time
	for _, t := range p.since {
		if oldest.IsZero() || t.first.Before(oldest) {
			oldest = t.first
		}
	}
	return oldest, !oldest.IsZero()
}

type oldestCollector struct {
	metrics.BaseStableCollector
	controllers func() []*Controller
}

func (c *oldestCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- oldestUnreconciledDesc
	ch <- controllerRunningDesc
}

func (c *oldestCollector) CollectWithStability(ch chan<- metrics.Metric) {
	now := time.Now()
	for _, ctl := range c.controllers() {
		running := 0.0
		if ctl.Running() {
			running = 1
		}
		ch <- metrics.NewLazyConstMetric(controllerRunningDesc, metrics.GaugeValue, running, ctl.Name)
		if !ctl.Running() {
			continue
		}
		age := 0.0
		if t, ok := ctl.pending.Oldest(); ok {
			age = now.Sub(t).Seconds()
		}
		ch <- metrics.NewLazyConstMetric(oldestUnreconciledDesc, metrics.GaugeValue, age, ctl.Name)
	}
}
