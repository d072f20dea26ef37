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

// poolCollector exposes the PostgreSQL connection pool and the watch feed's lag on /metrics,
// read at scrape time from the storage of the newest server of the process (there is one
// outside tests, which run several servers one after another).
type poolCollector struct {
	metrics.BaseStableCollector
	current atomic.Pointer[exposedStorage]
}

type exposedStorage struct {
	pool    *pgxpool.Pool
	backend *storage.Backend
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
	feedLag = metrics.NewDesc("gitops_storage_watch_feed_lag_resource_versions",
		"How many resourceVersions the database is ahead of what this process's watch feed has dispatched.",
		nil, nil, metrics.ALPHA, "")

	queryDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "gitops_storage_query_duration_seconds",
		Help:           "Duration of PostgreSQL round trips of the storage: single queries, and batches (group-committed writes).",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 14),
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
)

func (c *poolCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- poolConnections
	ch <- poolAcquires
	ch <- poolAcquireWait
	ch <- feedLag
}

func (c *poolCollector) CollectWithStability(ch chan<- metrics.Metric) {
	cur := c.current.Load()
	if cur == nil {
		return
	}
	s := cur.pool.Stat()
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- metrics.NewLazyConstMetric(poolConnections, metrics.GaugeValue, float64(s.MaxConns()), "max")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.AcquireCount()-s.EmptyAcquireCount()), "immediate")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.EmptyAcquireCount()), "waited")
	ch <- metrics.NewLazyConstMetric(poolAcquires, metrics.CounterValue, float64(s.CanceledAcquireCount()), "canceled")
	ch <- metrics.NewLazyConstMetric(poolAcquireWait, metrics.CounterValue, s.AcquireDuration().Seconds())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if lag, err := cur.backend.FeedLag(ctx); err == nil {
		ch <- metrics.NewLazyConstMetric(feedLag, metrics.GaugeValue, float64(lag))
	}
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
		legacyregistry.MustRegister(queryDuration)
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
