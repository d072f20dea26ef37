package apiserver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/gitops-service/gitops-service/pkg/storage"
)

// poolCollector exposes the PostgreSQL connection pools, the watch feed's lag, the storage's
// readiness and the primary's standbys on /metrics, read at scrape time from the storage of
// the newest server of the process (there is one outside tests, which run several servers
// one after another).
type poolCollector struct {
	metrics.BaseStableCollector
	current atomic.Pointer[exposedStorage]
}

type exposedStorage struct {
	pool    *pgxpool.Pool
	backend *storage.Backend
}

var (
	// pool is "requests" (the --postgres-max-conns pool), "committer" or "feed" (one
	// connection each, see pkg/storage/README.md).
	poolConnections = metrics.NewDesc("gitops_storage_pool_connections",
		"PostgreSQL connections of the storage's pools, by pool and state (acquired, idle, constructing) and the maximum.",
		[]string{"pool", "state"}, nil, metrics.ALPHA, "")
	poolAcquires = metrics.NewDesc("gitops_storage_pool_acquires_total",
		"Connections acquired from the storage's pools; waited counts those that found no idle connection.",
		[]string{"pool", "result"}, nil, metrics.ALPHA, "")
	poolAcquireWait = metrics.NewDesc("gitops_storage_pool_acquire_wait_seconds_total",
		"Total time spent waiting for a connection of the storage's pools.", []string{"pool"}, nil, metrics.ALPHA, "")
	feedLag = metrics.NewDesc("gitops_storage_watch_feed_lag_resource_versions",
		"How many resourceVersions the database is ahead of what this process's watch feed has dispatched.",
		nil, nil, metrics.ALPHA, "")
	feedDelay = metrics.NewDesc("gitops_storage_watch_feed_lag_seconds",
		"Age of the oldest change in the database that this process's watch feed has not dispatched yet: how late its watches are; 0 when they are current.",
		nil, nil, metrics.ALPHA, "")
	storageReady = metrics.NewDesc("gitops_storage_ready",
		"1 while the storage passes /readyz's postgres check (the watch feed reads the change log, the schema takes this release's writes), else 0.",
		nil, nil, metrics.ALPHA, "")
	postgresStandbys = metrics.NewDesc("gitops_storage_postgres_standbys",
		"Standbys streaming from the PostgreSQL primary the storage writes to (its pg_stat_replication), by sync_state; "+
			"unknown when the database role may not read the state (grant it pg_monitor to see it).",
		[]string{"sync_state"}, nil, metrics.ALPHA, "")

	queryDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "gitops_storage_query_duration_seconds",
		Help:           "Duration of PostgreSQL round trips of the storage: single queries, and batches (group-committed writes).",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})

	commitDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name: "gitops_storage_commit_duration_seconds",
		Help: "Duration of the storage's write transactions (one group-committed batch of writes each), from BEGIN to the end of " +
			"COMMIT, a synchronous standby's confirmation included, by result (committed, retried, failed).",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
)

func (c *poolCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- poolConnections
	ch <- poolAcquires
	ch <- poolAcquireWait
	ch <- feedLag
	ch <- feedDelay
	ch <- storageReady
	ch <- postgresStandbys
}

func (c *poolCollector) CollectWithStability(ch chan<- metrics.Metric) {
	cur := c.current.Load()
	if cur == nil {
		return
	}
	collectPool(ch, "requests", cur.pool.Stat())
	for _, p := range cur.backend.OwnPoolStats() {
		collectPool(ch, p.Role, p.Stat)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if lag, err := cur.backend.FeedLag(ctx); err == nil {
		ch <- metrics.NewLazyConstMetric(feedLag, metrics.GaugeValue, float64(lag))
	}
	if delay, err := cur.backend.FeedDelay(ctx); err == nil {
		ch <- metrics.NewLazyConstMetric(feedDelay, metrics.GaugeValue, delay.Seconds())
	}
	ready := 0.0
	if cur.backend.ReadinessCheck() == nil {
		ready = 1
	}
	ch <- metrics.NewLazyConstMetric(storageReady, metrics.GaugeValue, ready)
	if standbys, err := cur.backend.Standbys(ctx); err == nil {
		for state, n := range standbys {
			ch <- metrics.NewLazyConstMetric(postgresStandbys, metrics.GaugeValue, float64(n), state)
		}
	}
}

func collectPool(ch chan<- metrics.Metric, pool string, s *pgxpool.Stat) {
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.AcquiredConns()), pool, "acquired")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.IdleConns()), pool, "idle")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.ConstructingConns()), pool, "constructing")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.MaxConns()), pool, "max")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.AcquireCount()-s.EmptyAcquireCount()), pool, "immediate")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.EmptyAcquireCount()), pool, "waited")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.CanceledAcquireCount()), pool, "canceled")
	ch <- metrics.NewLazyConstMetric(poolAcquireWait, metrics.CounterValue, s.AcquireDuration().Seconds(), pool)
}

var (
	registerStorageMetrics sync.Once
	storageCollector       = &poolCollector{}
)

// exposeStorageMetrics points the storage's collectors at pool and backend, registering them
// once per process: /metrics serves the legacy registry, which is global.
func exposeStorageMetrics(pool *pgxpool.Pool, backend *storage.Backend) {
	storageCollector.current.Store(&exposedStorage{pool: pool, backend: backend})
	registerStorageMetrics.Do(func() {
		legacyregistry.CustomMustRegister(storageCollector)
		legacyregistry.MustRegister(queryDuration, commitDuration)
	})
	backend.SetCommitObserver(func(d time.Duration, result string) {
		commitDuration.WithLabelValues(result).Observe(d.Seconds())
	})
}

// queryTracer times every query and batch of the pool into queryDuration.
type queryTracer struct{}

type queryStartKey struct{}

func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, queryStartKey{}, time.Now())
}

func (queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	observeSince(ctx, "query")
}

func (queryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, queryStartKey{}, time.Now())
}

func (queryTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (queryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	observeSince(ctx, "batch")
}

func observeSince(ctx context.Context, kind string) {
	if start, ok := ctx.Value(queryStartKey{}).(time.Time); ok {
		queryDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	}
}
