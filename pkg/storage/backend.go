// Package storage implements k8s.io/apiserver's storage.Interface on PostgreSQL.
//
// A Backend is created once per process. It owns the schema migrations, the single change feed
// that serves every watch of the process, the compactor and the TTL sweeper. Backend.NewStore
// returns one storage.Interface per resource; all of them share the backend's pool, its one
// global resourceVersion counter and its feed. pkg/storage/README.md explains the design.
package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

	// beforeRV and afterRV run inside every write transaction, just before the statement that
	// takes the RV and just before COMMIT. Tests use them to widen race windows.
	beforeRV, afterRV func(ctx context.Context)
}

// NewBackend migrates the schema and starts the feed, the compactor and the TTL sweeper.
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
	b := &Backend{pool: pool, opts: opts, cancel: cancel}
	b.feed = newFeed(b, rv)
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
	value                          []byte
	ttl                            int64 // seconds, 0 for none
}

// rawObject is a stored value and its mod RV; nil stands for "no such key".
type rawObject struct {
	value []byte
	rv    int64
}

var errKeyExists = errors.New("key exists")

// The three write statements take the counter row lock (UPDATE state) and then do the whole
// write. They run as the last statement of their transaction, so the lock is held only for
// the statement and the COMMIT; see README.md for why this makes RV order commit order.
const (
	createSQL = `
WITH s AS (UPDATE state SET rv = rv + 1 RETURNING rv),
i AS (
	INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv, expires_at)
	SELECT $1, $2, $3, $4, $5, $6, s.rv, s.rv, CASE WHEN $7::bigint > 0 THEN now() + $7 * interval '1 second' END FROM s
	ON CONFLICT (key) DO NOTHING
	RETURNING mod_rv),
l AS (INSERT INTO changes (rv, key, created, deleted, value) SELECT i.mod_rv, $1, true, false, $6 FROM i)
SELECT i.mod_rv, pg_notify('` + notifyChannel + `', '') FROM i`

	updateSQL = `
WITH s AS (UPDATE state SET rv = rv + 1 RETURNING rv),
old AS (SELECT value, labels, namespace, mod_rv FROM objects WHERE key = $1),
u AS (
	UPDATE objects o SET namespace = $2, name = $3, labels = $4, value = $5, mod_rv = s.rv,
		expires_at = CASE WHEN $6::bigint > 0 THEN now() + $6 * interval '1 second' END
	FROM s WHERE o.key = $1),
l AS (
	INSERT INTO changes (rv, key, created, deleted, value, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, false, $5, old.value, old.labels, old.namespace, old.mod_rv FROM s, old)
SELECT s.rv, pg_notify('` + notifyChannel + `', '') FROM s`

	deleteSQL = `
WITH s AS (UPDATE state SET rv = rv + 1 RETURNING rv),
d AS (DELETE FROM objects WHERE key = $1 RETURNING value, labels, namespace, mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, true, d.value, d.labels, d.namespace, d.mod_rv FROM s, d)
SELECT s.rv, pg_notify('` + notifyChannel + `', '') FROM s`

	// lockSQL locks the row a CAS write is about to replace and returns what is there now.
	lockSQL = `SELECT value, mod_rv FROM objects WHERE key = $1 FOR UPDATE`
)

// inTx runs f in a transaction and wakes the local feed after a successful commit, so that
// this process's watchers do not wait for the NOTIFY round trip.
func (b *Backend) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, b.pool, f)
	if err == nil {
		b.feed.wake()
	}
	return err
}

func (b *Backend) hook(ctx context.Context, h func(context.Context)) {
	if h != nil {
		h(ctx)
	}
}

// create inserts a new key and returns its RV, or errKeyExists.
func (b *Backend) create(ctx context.Context, r record) (int64, error) {
	var rv int64
	err := b.inTx(ctx, func(tx pgx.Tx) error {
		b.hook(ctx, b.beforeRV)
		err := tx.QueryRow(ctx, createSQL, r.key, r.resource, r.namespace, r.name, labelsJSON(r.labels), r.value, r.ttl).Scan(&rv, nil)
		if errors.Is(err, pgx.ErrNoRows) {
			return errKeyExists
		}
		if err != nil {
			return err
		}
		b.hook(ctx, b.afterRV)
		return nil
	})
	return rv, err
}

// casWrite locks key and, if its mod RV is still expected, runs stmt with args. On a mismatch
// it returns conflict=true and the current state (nil when the key is gone) instead.
func (b *Backend) casWrite(ctx context.Context, key string, expected int64, stmt string, args ...any) (rv int64, conflict bool, cur *rawObject, err error) {
	err = b.inTx(ctx, func(tx pgx.Tx) error {
		var o rawObject
		switch err := tx.QueryRow(ctx, lockSQL, key).Scan(&o.value, &o.rv); {
		case errors.Is(err, pgx.ErrNoRows):
			conflict = true
			return errRollback
		case err != nil:
			return err
		case o.rv != expected:
			conflict, cur = true, &o
			return errRollback
		}
		b.hook(ctx, b.beforeRV)
		if err := tx.QueryRow(ctx, stmt, args...).Scan(&rv, nil); err != nil {
			return err
		}
		b.hook(ctx, b.afterRV)
		return nil
	})
	if conflict {
		return 0, true, cur, nil
	}
	return rv, false, nil, err
}

// errRollback ends a transaction that found a conflict; it never leaves casWrite.
var errRollback = errors.New("rollback")

func (b *Backend) update(ctx context.Context, r record, expected int64) (int64, bool, *rawObject, error) {
	return b.casWrite(ctx, r.key, expected, updateSQL, r.key, r.namespace, r.name, labelsJSON(r.labels), r.value, r.ttl)
}

func (b *Backend) delete(ctx context.Context, key string, expected int64) (int64, bool, *rawObject, error) {
	return b.casWrite(ctx, key, expected, deleteSQL, key)
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
