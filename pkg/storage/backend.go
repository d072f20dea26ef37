// Package storage implements k8s.io/apiserver's storage.Interface on PostgreSQL.
//
// A Backend is created once per process. It owns the schema migrations, the single change feed
// that serves every watch of the process, the compactor and the TTL sweeper. Backend.NewStore
// returns one storage.Interface per resource; all of them share the backend's pool, its one
// global resourceVersion counter and its feed. pkg/storage/README.md explains the design.
package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options tune a Backend. Zero values select the defaults.
type Options struct {
	// PollInterval is how often the feed reads the change log when nothing woke it up. Local
	// writes and NOTIFY from other processes wake it at once; polling only covers a lost
	// notification, such as during a reconnect. Default 1s.
	PollInterval time.Duration
	// ProgressNotifyInterval is how often watches opened with ProgressNotify get a bookmark
	// carrying the feed's current RV. Default 5s, like etcd's progress notify.
	ProgressNotifyInterval time.Duration
	// CompactionWindow is how long the change log keeps history. Reads and watches at an RV
	// older than that get 410 Gone. Default 5m, like kube-apiserver's etcd compaction.
	CompactionWindow time.Duration
	// CompactionInterval is how often the compactor runs. Default 1m.
	CompactionInterval time.Duration
	// DisableCompaction turns the background compactor off (tests that compare exact history).
	DisableCompaction bool
	// TTLInterval is how often objects written with a TTL are checked for expiry. Default 1s.
	TTLInterval time.Duration
	// WatchQueue is how many undelivered changes one watch may queue in memory. A watch that
	// falls further behind is moved to catching up from the change log. Default 1024.
	WatchQueue int
}

func (o *Options) setDefaults() {
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.ProgressNotifyInterval <= 0 {
		o.ProgressNotifyInterval = 5 * time.Second
	}
	if o.CompactionWindow <= 0 {
		o.CompactionWindow = 5 * time.Minute
	}
	if o.CompactionInterval <= 0 {
		o.CompactionInterval = time.Minute
	}
	if o.TTLInterval <= 0 {
		o.TTLInterval = time.Second
	}
	if o.WatchQueue <= 0 {
		o.WatchQueue = 1024
	}
}

// notifyChannel is the LISTEN/NOTIFY channel writers signal on. It is only a wake-up hint.
const notifyChannel = "gitops_storage_changes"

// Backend is the per-process owner of the PostgreSQL state shared by all stores.
type Backend struct {
	pool   *pgxpool.Pool
	opts   Options
	feed   *feed
	cancel context.CancelFunc
	wg     sync.WaitGroup

	writes chan *writeOp
	closed <-chan struct{}

	uniqueMu sync.Mutex
	unique   map[schema.GroupResource]UniqueIndex

	// beforeRV and afterRV run inside every write transaction, just before the statements that
	// take the RVs and just before COMMIT; an error aborts the transaction. Tests use them to
	// widen race windows and to abort transactions that already hold RVs.
	beforeRV, afterRV func() error
}

// NewBackend migrates the schema and starts the committer, the feed, the compactor and the
// TTL sweeper.
// The pool is not closed by Close; its size bounds the backend's connections, plus one
// dedicated connection for LISTEN.
func NewBackend(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Backend, error) {
	opts.setDefaults()
	if err := Migrate(pool); err != nil {
		return nil, err
	}
	var rv int64
	if err := pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&rv); err != nil {
		return nil, fmt.Errorf("reading the current resourceVersion: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b := &Backend{pool: pool, opts: opts, cancel: cancel, writes: make(chan *writeOp, maxBatch), closed: runCtx.Done()}
	b.feed = newFeed(b, rv)
	b.run(func() { b.commitLoop(runCtx) })
	b.run(func() { b.feed.run(runCtx) })
	b.run(func() { b.feed.listen(runCtx) })
	if !opts.DisableCompaction {
		b.run(func() { b.compactLoop(runCtx) })
	}
	b.run(func() { b.ttlLoop(runCtx) })
	return b, nil
}

func (b *Backend) run(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// Close stops the background work and ends every open watch.
func (b *Backend) Close() {
	b.cancel()
	b.wg.Wait()
}

// ReadinessCheck reports whether the feed reached PostgreSQL on its last attempt.
func (b *Backend) ReadinessCheck() error {
	return b.feed.healthy()
}

// record is one object as written: the transformed value plus the columns selectors use.
type record struct {
	key, resource, namespace, name string
	labels                         map[string]string
	uniqueKey                      *string // only on creates of resources with a UniqueIndex
	value                          []byte
	ttl                            int64 // seconds, 0 for none
}

// rawObject is a stored value and its mod RV; nil stands for "no such key".
type rawObject struct {
	value []byte
	rv    int64
}

// get returns the stored object (nil if missing) and the current global RV, from one snapshot.
func (b *Backend) get(ctx context.Context, key string) (*rawObject, int64, error) {
	var (
		current int64
		value   []byte
		modRV   *int64
	)
	err := b.pool.QueryRow(ctx, `SELECT (SELECT rv FROM state), o.value, o.mod_rv FROM (SELECT) one LEFT JOIN objects o ON o.key = $1`, key).
		Scan(&current, &value, &modRV)
	if err != nil {
		return nil, 0, err
	}
	if modRV == nil {
		return nil, current, nil
	}
	return &rawObject{value: value, rv: *modRV}, current, nil
}

func labelsJSON(l map[string]string) map[string]string {
	if l == nil {
		return map[string]string{}
	}
	return l
}
