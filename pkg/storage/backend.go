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
	"strconv"
	"sync"
	"sync/atomic"
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

	// The session limits below are sent to PostgreSQL as startup parameters of every session
	// of a pool built with ConfigurePool, and of the connections the backend opens itself.

	// IdleInTransactionTimeout makes the server end a session that stays idle inside a
	// transaction this long (idle_in_transaction_session_timeout). A write batch holds the
	// counter row lock until its COMMIT and every replica's writes queue for that lock, so a
	// replica frozen between two statements (SIGSTOP, a paused VM) would otherwise stop all
	// writes for as long as its socket stays open, which may be forever. Default 5s.
	IdleInTransactionTimeout time.Duration
	// LockTimeout makes a statement give up waiting for a lock after this long (lock_timeout):
	// a write batch queued behind a holder that is slow rather than idle then fails instead of
	// waiting out the 30s batch timeout. It must be longer than IdleInTransactionTimeout, so
	// that a waiter outlasts a frozen holder, whose session the server ends first, and shorter
	// than the batch timeout. Default 10s.
	LockTimeout time.Duration
	// KeepaliveIdle, KeepaliveInterval and KeepaliveCount are the server's TCP keepalives on
	// each session (tcp_keepalives_idle, _interval, _count; whole seconds): the session of a
	// peer that vanished without closing its socket (a lost node, a network cut) ends after
	// about KeepaliveIdle + KeepaliveCount × KeepaliveInterval of silence, and with it the locks
	// it held, golang-migrate's session advisory lock included. Defaults 5s, 2s and 3.
	KeepaliveIdle, KeepaliveInterval time.Duration
	KeepaliveCount                   int
	// TCPUserTimeout ends a session whose data the peer has not acknowledged for this long
	// (tcp_user_timeout), where keepalives do not apply because data is in flight. Default 10s.
	TCPUserTimeout time.Duration

	// FeedPollTimeout bounds one read of the change log by the feed. A read that takes longer
	// is cancelled, reported by ReadinessCheck and retried. Default 10s.
	FeedPollTimeout time.Duration
	// FeedStaleAfter is how long the feed may go without completing a read of the change log
	// before ReadinessCheck fails: the watches of this process are not being fed, so the
	// replica should leave the rotation. It must be longer than PollInterval. Default 15s.
	FeedStaleAfter time.Duration
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
	if o.IdleInTransactionTimeout <= 0 {
		o.IdleInTransactionTimeout = 5 * time.Second
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 10 * time.Second
	}
	if o.KeepaliveIdle <= 0 {
		o.KeepaliveIdle = 5 * time.Second
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = 2 * time.Second
	}
	if o.KeepaliveCount <= 0 {
		o.KeepaliveCount = 3
	}
	if o.TCPUserTimeout <= 0 {
		o.TCPUserTimeout = 10 * time.Second
	}
	if o.FeedPollTimeout <= 0 {
		o.FeedPollTimeout = 10 * time.Second
	}
	if o.FeedStaleAfter <= 0 {
		o.FeedStaleAfter = 15 * time.Second
	}
}

// DefaultOptions returns the options that zero values select, for callers that show or
// override them one by one (command-line flags).
func DefaultOptions() Options {
	var o Options
	o.setDefaults()
	return o
}

// Validate reports options that contradict each other, as NewBackend would.
func (o Options) Validate() error {
	o.setDefaults()
	return o.validate()
}

// validate checks the options after setDefaults.
func (o *Options) validate() error {
	var errs []error
	if o.LockTimeout <= o.IdleInTransactionTimeout {
		errs = append(errs, fmt.Errorf("LockTimeout (%s) must be longer than IdleInTransactionTimeout (%s): "+
			"a write waiting for the counter lock must outlast a frozen holder, whose session PostgreSQL ends after IdleInTransactionTimeout",
			o.LockTimeout, o.IdleInTransactionTimeout))
	}
	if o.LockTimeout >= batchTimeout {
		errs = append(errs, fmt.Errorf("LockTimeout (%s) must be shorter than the %s write batch timeout", o.LockTimeout, batchTimeout))
	}
	if o.FeedStaleAfter <= o.PollInterval {
		errs = append(errs, fmt.Errorf("FeedStaleAfter (%s) must be longer than PollInterval (%s): an idle feed reads the log only every PollInterval",
			o.FeedStaleAfter, o.PollInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("postgresql storage options: %w", err)
	}
	return nil
}

// ConfigurePool gives every session of a pool built from cfg the session limits of opts (zero
// fields take their defaults): build the pool passed to NewBackend with it. NewBackend applies
// the same limits to the connections it opens itself.
func ConfigurePool(cfg *pgxpool.Config, opts Options) {
	opts.setDefaults()
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	p := cfg.ConnConfig.RuntimeParams
	p["idle_in_transaction_session_timeout"] = milliseconds(opts.IdleInTransactionTimeout)
	p["lock_timeout"] = milliseconds(opts.LockTimeout)
	p["tcp_keepalives_idle"] = seconds(opts.KeepaliveIdle)
	p["tcp_keepalives_interval"] = seconds(opts.KeepaliveInterval)
	p["tcp_keepalives_count"] = strconv.Itoa(opts.KeepaliveCount)
	p["tcp_user_timeout"] = milliseconds(opts.TCPUserTimeout)
}

func milliseconds(d time.Duration) string {
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// seconds rounds up: the keepalive settings take whole seconds, and 0 would mean the system's
// default (two hours for the idle time on Linux).
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(max((d+time.Second-1)/time.Second, 1)), 10)
}

// notifyChannel is the LISTEN/NOTIFY channel writers signal on. It is only a wake-up hint.
const notifyChannel = "gitops_storage_changes"

// Backend is the per-process owner of the PostgreSQL state shared by all stores.
type Backend struct {
	// pool is the caller's: requests, the compactor and the TTL sweeper's reads use it.
	pool *pgxpool.Pool
	// writePool and feedPool hold one connection each, for the committer and for the feed, that
	// requests cannot take: with every pooled connection busy with reads, writes would still
	// queue for a connection and watches would go unfed. Two pools rather than one of two
	// connections, so that a feed read stuck on a broken connection (its replacement may wait
	// for the old one's cleanup) never holds up writes, and the reverse.
	writePool, feedPool *pgxpool.Pool
	opts                Options
	feed                *feed
	cancel              context.CancelFunc
	wg                  sync.WaitGroup

	writes chan *writeOp
	closed <-chan struct{}

	uniqueMu sync.Mutex
	unique   map[schema.GroupResource]UniqueIndex

	// auditTrail, when set, names the writes recorded in audit_log (SetAuditTrail).
	auditTrail atomic.Pointer[AuditTrail]

	// refused is the schema's refusal of this release's last write batch (noteRefusal).
	refused atomic.Pointer[WriterTooOldError]

	// commitObserver is told of every write transaction (SetCommitObserver).
	commitObserver atomic.Pointer[CommitObserver]

	// versions batches the lookups of consistent gets served from the watch cache
	// (consistentget.go).
	versions versionLookups

	// beforeRV and afterRV run inside every write transaction, just before the statements that
	// take the RVs and just before COMMIT; an error aborts the transaction. Tests use them to
	// widen race windows and to abort transactions that already hold RVs.
	beforeRV, afterRV func() error
}

// NewBackend migrates the schema and starts the committer, the feed, the compactor and the
// TTL sweeper.
// The pool is not closed by Close. Its size bounds the connections of requests; the backend
// adds three of its own: the committer's, the feed's and the one in LISTEN. Build the pool
// with ConfigurePool so that its sessions get the limits of opts too.
func NewBackend(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Backend, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := migrateWithoutLockTimeout(ctx, pool); err != nil {
		return nil, err
	}
	var rv int64
	if err := pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&rv); err != nil {
		return nil, fmt.Errorf("reading the current resourceVersion: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b := &Backend{pool: pool, opts: opts, cancel: cancel, writes: make(chan *writeOp, maxBatch), closed: runCtx.Done()}
	var err error
	if b.writePool, err = ownPool(runCtx, pool, opts); err == nil {
		b.feedPool, err = ownPool(runCtx, pool, opts)
	}
	if err != nil {
		b.closePools()
		cancel()
		return nil, fmt.Errorf("opening the committer's and the feed's connections: %w", err)
	}
	b.feed = newFeed(b, rv)
	b.run(func() { b.commitLoop(runCtx) })
	b.run(func() { b.feed.run(runCtx) })
	b.run(func() { b.feed.listen(runCtx) })
	if !opts.DisableCompaction {
		b.run(func() { b.compactLoop(runCtx) })
	}
	b.run(func() { b.ttlLoop(runCtx) })
	b.run(func() { b.auditRetentionLoop(runCtx) })
	return b, nil
}

func (b *Backend) run(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// ownPool opens a one-connection pool on the database of shared, with the limits of opts.
func ownPool(ctx context.Context, shared *pgxpool.Pool, opts Options) (*pgxpool.Pool, error) {
	cfg := shared.Config()
	// Kept open, so that a server at max_connections still has this one for us.
	cfg.MaxConns, cfg.MinConns = 1, 1
	ConfigurePool(cfg, opts)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// migrateWithoutLockTimeout migrates on sessions of their own: golang-migrate waits for its
// advisory lock while another replica migrates, which may well take longer than LockTimeout.
func migrateWithoutLockTimeout(ctx context.Context, pool *pgxpool.Pool) error {
	cfg := pool.Config()
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "0"
	mp, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer mp.Close()
	return Migrate(mp)
}

func (b *Backend) closePools() {
	for _, p := range []*pgxpool.Pool{b.writePool, b.feedPool} {
		if p != nil {
			p.Close()
		}
	}
}

// Close stops the background work and ends every open watch.
func (b *Backend) Close() {
	b.cancel()
	b.wg.Wait()
	b.closePools()
}

// ReadinessCheck reports whether the feed reached PostgreSQL on its last attempt and has
// completed a read of the change log within FeedStaleAfter, and whether the schema still
// takes this release's writes.
func (b *Backend) ReadinessCheck() error {
	if tooOld := b.refused.Load(); tooOld != nil {
		return tooOld
	}
	return b.feed.healthy()
}

// record is one object as written: the transformed value plus the columns selectors use.
type record struct {
	key, resource, namespace, name string
	labels                         map[string]string
	uniqueKey                      *string     // only on creates of resources with a UniqueIndex
	limit                          *countLimit // only on creates that run WithCountLimit
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
	mark := b.feed.mark()
	err := b.pool.QueryRow(ctx, `SELECT (SELECT rv FROM state), o.value, o.mod_rv FROM (SELECT) one LEFT JOIN objects o ON o.key = $1`, key).
		Scan(&current, &value, &modRV)
	if err != nil {
		return nil, 0, err
	}
	b.feed.check(mark, current)
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
