package placement

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The fleet as the placement controller sees it, reported at scrape time by the agent that
// runs the controller (it holds the placement Lease), and by no standby. The instance's
// label is argocd_instance: Prometheus's own instance label names the scraped process.
var (
	instanceCapacityDesc = metrics.NewDesc("gitops_placement_instance_capacity",
		"The most tenant namespaces placed on each Argo CD instance (spec.capacity of its ArgoCDInstance).",
		[]string{"argocd_instance"}, nil, metrics.ALPHA, "")
	instanceTenantsDesc = metrics.NewDesc("gitops_placement_instance_tenants",
		"Tenant namespaces placed on each Argo CD instance (TenantPlacements whose spec.instance names it), which its capacity bounds.",
		[]string{"argocd_instance"}, nil, metrics.ALPHA, "")
	instanceApplicationsDesc = metrics.NewDesc("gitops_placement_instance_applications",
		"Argo CD Applications each instance's agent last reported keeping (status.applications of its ArgoCDInstance).",
		[]string{"argocd_instance"}, nil, metrics.ALPHA, "")
	instanceReadyDesc = metrics.NewDesc("gitops_placement_instance_ready",
		"1 while an Argo CD instance is Ready and its agent has reported within 30 s (it may take new tenants), else 0.",
		[]string{"argocd_instance"}, nil, metrics.ALPHA, "")
	instanceDrainingDesc = metrics.NewDesc("gitops_placement_instance_draining",
		"1 for an Argo CD instance being drained (spec.draining), else 0.",
		[]string{"argocd_instance"}, nil, metrics.ALPHA, "")
	tenantsDesc = metrics.NewDesc("gitops_placement_tenants",
		"TenantPlacements by state: held (served by the instance it is placed on), moving (placed on an instance that "+
			"does not hold it yet: a hand-over under way), waiting (placed nowhere: no instance has room).",
		[]string{"state"}, nil, metrics.ALPHA, "")
)

type fleetMetrics struct {
	metrics.BaseStableCollector
	// source is the fleet to report, false when there is nothing to report.
	source func() ([]*managedv1alpha1.ArgoCDInstance, []*managedv1alpha1.TenantPlacement, bool)
	now    func() time.Time
}

var (
	registerMetrics sync.Once
	current         atomic.Pointer[Controller]
	fleetCollector  = &fleetMetrics{source: currentFleet, now: time.Now}
)

// RegisterMetrics has /metrics (the legacy registry) report the fleet as this controller sees
// it, while it runs; the controller of the latest call is the one reported.
func (c *Controller) RegisterMetrics() {
	current.Store(c)
	registerMetrics.Do(func() { legacyregistry.CustomMustRegister(fleetCollector) })
}

func currentFleet() ([]*managedv1alpha1.ArgoCDInstance, []*managedv1alpha1.TenantPlacement, bool) {
	c := current.Load()
	if c == nil || !c.Running() {
		return nil, nil, false
	}
	instances, err := c.instances.List(labels.Everything())
	if err != nil {
		return nil, nil, false
	}
	placements, err := c.placements.List(labels.Everything())
	return instances, placements, err == nil
}

func (m *fleetMetrics) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{instanceCapacityDesc, instanceTenantsDesc, instanceApplicationsDesc, instanceReadyDesc,
		instanceDrainingDesc, tenantsDesc} {
		ch <- d
	}
}

func (m *fleetMetrics) CollectWithStability(ch chan<- metrics.Metric) {
	instances, placements, ok := m.source()
	if !ok {
		return
	}
	now := m.now()
	placed := map[string]int{}
	states := map[string]int{"held": 0, "moving": 0, "waiting": 0}
	for _, p := range placements {
		switch {
		case p.Spec.Instance == "":
			states["waiting"]++
		case p.Status.Instance == p.Spec.Instance:
			states["held"]++
		default:
			states["moving"]++
		}
		if p.Spec.Instance != "" {
			placed[p.Spec.Instance]++
		}
	}
	gauge := func(d *metrics.Desc, v float64, label string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, label)
	}
	for _, in := range instances {
		gauge(instanceCapacityDesc, float64(in.Spec.Capacity), in.Name)
		gauge(instanceTenantsDesc, float64(placed[in.Name]), in.Name)
		gauge(instanceApplicationsDesc, float64(in.Status.Applications), in.Name)
		gauge(instanceReadyDesc, boolValue(readyForPlacing(in, now)), in.Name)
		gauge(instanceDrainingDesc, boolValue(in.Spec.Draining), in.Name)
	}
	for state, n := range states {
		gauge(tenantsDesc, float64(n), state)
	}
}

// readyForPlacing is how fleet judges an instance: Ready, and heard of within HeartbeatTimeout.
func readyForPlacing(in *managedv1alpha1.ArgoCDInstance, now time.Time) bool {
	hb := in.Status.LastHeartbeatTime
	return readyCondition(in) && hb != nil && hb.Add(HeartbeatTimeout).After(now)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
