package apiserver

import (
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// poolCollector exposes the PostgreSQL connection pool on /metrics, read from the pool's own
// counters at scrape time.
type poolCollector struct {
	metrics.BaseStableCollector
	pool *pgxpool.Pool
}

var (
	poolConnections = metrics.NewDesc("gitops_storage_pool_connections",
		"PostgreSQL connections of the storage pool, by state (acquired, idle, constructing) and the maximum.",
		[]string{"state"}, nil, metrics.ALPHA, "")
	poolAcquires = metrics.NewDesc("gitops_storage_pool_acquires_total",
		"Connections acquired from the storage pool; waited counts those that found no idle connection.",
		[]string{"result"}, nil, metrics.ALPHA, "")
	poolAcquireWait = metrics.NewDesc("gitops_storage_pool_acquire_wait_seconds_total",
		"Total time spent waiting for a connection of the storage pool.", nil, nil, metrics.ALPHA, "")
)

func (c *poolCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- poolConnections
	ch <- poolAcquires
	ch <- poolAcquireWait
}

func (c *poolCollector) CollectWithStability(ch chan<- metrics.Metric) {
	s := c.pool.Stat()
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.MaxConns()), "max")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.AcquireCount()-s.EmptyAcquireCount()), "immediate")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.EmptyAcquireCount()), "waited")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.CanceledAcquireCount()), "canceled")
	ch <- metrics.NewLazyConstMetric(poolAcquireWait, metrics.CounterValue, s.AcquireDuration().Seconds())
}

var registerPoolMetrics sync.Once

// exposePoolMetrics registers pool's collector once per process: /metrics serves the legacy
// registry, which is global.
func exposePoolMetrics(pool *pgxpool.Pool) {
	registerPoolMetrics.Do(func() {
		legacyregistry.CustomMustRegister(&poolCollector{pool: pool})
	})
}
