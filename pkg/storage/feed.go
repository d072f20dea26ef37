package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// change is one row of the change log.
type change struct {
	rv               int64
	key              string
	created, deleted bool
	value, prevValue []byte
}

// feedItem is what a subscription receives: a change, a progress bookmark at rv, or a
// terminal error.
type feedItem struct {
	change   *change
	progress int64
	err      error
}

// subscription is one watch's queue on the feed.
type subscription struct {
	key       string
	recursive bool
	progress  bool
	// from is the feed's RV when the subscription started: changes up to it must come from
	// the log, everything after it arrives on ch. compacted is the compacted RV the feed last saw.
	from, compacted int64
	ch              chan feedItem
	// overflowed is set, before ch is closed, when the watch fell more than the queue behind.
	overflowed bool
}

func (s *subscription) matches(key string) bool {
	if s.recursive {
		return strings.HasPrefix(key, s.key)
	}
	return key == s.key
}

// feed is the process-wide reader of the change log. It reads changes in RV order, which is
// commit order, so having read RV r it has seen every change <= r, and fans them out to the
// subscriptions. It never blocks on a subscriber: one that falls behind is cut loose and
// catches up from the log by itself.
type feed struct {
	b       *Backend
	wakeCh  chan struct{}
	stateMu sync.Mutex
	lastErr error
	// polled is when the last read of the log completed; it starts at newFeed.
	polled time.Time

	mu        sync.Mutex
	rv        int64 // every change <= rv has been dispatched
	compacted int64
	subs      map[*subscription]struct{}
	// advanced is closed, and replaced, whenever rv moves.
	advanced chan struct{}

	// progressAsked counts RequestWatchProgress calls; the feed answers each with a bookmark
	// once a poll that started after it has finished.
	progressAsked atomic.Int64
}

const feedBatch = 1000

func newFeed(b *Backend, rv int64) *feed {
	return &feed{b: b, rv: rv, polled: time.Now(), wakeCh: make(chan struct{}, 1), subs: map[*subscription]struct{}{}, advanced: make(chan struct{})}
}

func (f *feed) wake() {
	select {
	case f.wakeCh <- struct{}{}:
	default:
	}
}

func (f *feed) healthy() error {
	f.stateMu.Lock()
	defer f.stateMu.Unlock()
	if f.lastErr != nil {
		return fmt.Errorf("postgresql storage not ready: %w", f.lastErr)
	}
	// A read that hangs returns no error until it times out, if ever; meanwhile no watch of
	// this process gets anything.
	if since := time.Since(f.polled); since > f.b.opts.FeedStaleAfter {
		return fmt.Errorf("postgresql storage not ready: the watch feed has not completed a read of the change log for %s (limit %s)",
			since.Round(time.Millisecond), f.b.opts.FeedStaleAfter)
	}
	return nil
}

// polledWith records the outcome of a read of the log.
func (f *feed) polledWith(err error) {
	f.stateMu.Lock()
	f.lastErr = err
	if err == nil {
		f.polled = time.Now()
	}
	f.stateMu.Unlock()
}

func (f *feed) subscribe(key string, recursive, progress bool) *subscription {
	s := &subscription{key: key, recursive: recursive, progress: progress, ch: make(chan feedItem, f.b.opts.WatchQueue)}
	f.mu.Lock()
	s.from, s.compacted = f.rv, f.compacted
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

func (f *feed) unsubscribe(s *subscription) {
	f.mu.Lock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.ch)
	}
	f.mu.Unlock()
}

// send queues an item without blocking. f.mu must be held.
func (f *feed) send(s *subscription, it feedItem) {
	select {
	case s.ch <- it:
	default:
		if it.change == nil && it.err == nil {
			return // a skipped bookmark loses nothing
		}
		s.overflowed = true
		delete(f.subs, s)
		close(s.ch)
	}
}

// askProgress answers RequestWatchProgress. The caller (the watch cache, waiting for an RV
// it read from PostgreSQL) wants a bookmark at least as new as the log at the time of the
// call, so the feed polls first rather than reporting the RV it had dispatched so far.
func (f *feed) askProgress() {
	f.progressAsked.Add(1)
	f.wake()
}

func (f *feed) requestProgress() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if s.progress {
			f.send(s, feedItem{progress: f.rv})
		}
	}
}

// readRetryFirst and readRetryMax bound the waits, doubling, of the feed and of a watch
// catching up before they read the change log again after the database failed them.
const (
	readRetryFirst = 50 * time.Millisecond
	readRetryMax   = 2 * time.Second
)

// run polls the change log whenever woken and at least every PollInterval.
func (f *feed) run(ctx context.Context) {
	poll := time.NewTicker(f.b.opts.PollInterval)
	defer poll.Stop()
	progress := time.NewTicker(f.b.opts.ProgressNotifyInterval)
	defer progress.Stop()
	defer f.closeAll(nil)
	backoff := readRetryFirst
	var progressAnswered int64
	for {
		asked := f.progressAsked.Load()
		for {
			more, err := f.pollOnce(ctx)
			if ctx.Err() != nil {
				return
			}
			f.polledWith(err)
			if err != nil {
				klog.V(2).Infof("postgresql storage feed: %v", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, readRetryMax)
				continue
			}
			backoff = readRetryFirst
			if !more {
				break
			}
		}
		if asked > progressAnswered {
			f.requestProgress()
			progressAnswered = asked
		}
		select {
		case <-ctx.Done():
			return
		case <-f.wakeCh:
		case <-poll.C:
		case <-progress.C:
			f.requestProgress()
		}
	}
}

// pollOnce dispatches the next batch of changes and reports whether more may be waiting.
func (f *feed) pollOnce(ctx context.Context) (bool, error) {
	f.mu.Lock()
	from := f.rv
	f.mu.Unlock()
	readCtx, cancel := context.WithTimeout(ctx, f.b.opts.FeedPollTimeout)
	defer cancel()
	current, compacted, changes, err := queryChanges(readCtx, f.b.feedPool, changeRange{after: from, limit: feedBatch})
	if err != nil {
		if ctx.Err() == nil && errors.Is(readCtx.Err(), context.DeadlineExceeded) {
			return false, fmt.Errorf("reading the change log took longer than %s: %w", f.b.opts.FeedPollTimeout, err)
		}
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if compacted > from+1 {
		// The feed was away longer than the compaction window: changes are gone for good.
		// Every watch must end with 410 so its client relists.
		f.closeAllLocked(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old."))
	}
	for _, c := range changes {
		for s := range f.subs {
			if s.matches(c.key) {
				f.send(s, feedItem{change: c})
			}
		}
	}
	f.compacted = compacted
	full := len(changes) == feedBatch
	prev := f.rv
	switch {
	case full:
		f.rv = changes[len(changes)-1].rv
	case current > f.rv:
		f.rv = current
	}
	if f.rv != prev {
		close(f.advanced)
		f.advanced = make(chan struct{})
	}
	return full, nil
}

// waitFor wakes the feed and waits until it has dispatched rv, at most maxWait. The committer
// calls it before acknowledging a batch, so that once a write returns, its event is already
// queued for every watch of this process, as it would be with etcd's watch cache in front.
func (f *feed) waitFor(rv int64, maxWait time.Duration) {
	deadline := time.After(maxWait)
	for {
		f.mu.Lock()
		done, advanced := f.rv >= rv, f.advanced
		f.mu.Unlock()
		if done {
			return
		}
		f.wake()
		select {
		case <-advanced:
		case <-deadline:
			return
		}
	}
}

func (f *feed) closeAll(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeAllLocked(err)
}

func (f *feed) closeAllLocked(err error) {
	for s := range f.subs {
		if err != nil {
			select {
			case s.ch <- feedItem{err: err}:
			default:
			}
		}
		delete(f.subs, s)
		close(s.ch)
	}
}

// changeRange selects changes in (after, upTo] (upTo 0: no bound) whose key is key, or starts
// with key when recursive ("" for every key).
type changeRange struct {
	after, upTo int64
	key         string
	recursive   bool
	limit       int
}

// readChanges returns the changes of r in RV order, with the snapshot's current and
// compacted RVs, read on the request pool.
func (b *Backend) readChanges(ctx context.Context, r changeRange) (current, compacted int64, out []*change, err error) {
	return queryChanges(ctx, b.pool, r)
}

// querier is a pool or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryChanges(ctx context.Context, q querier, r changeRange) (current, compacted int64, out []*change, err error) {
	var args argList
	where := "rv > " + args.add(r.after)
	if r.upTo > 0 {
		where += " AND rv <= " + args.add(r.upTo)
	}
	switch {
	case r.key == "":
	case !r.recursive:
		where += " AND key = " + args.add(r.key)
	case prefixEnd(r.key) == "":
		where += " AND key >= " + args.add(r.key)
	default:
		where += " AND key >= " + args.add(r.key) + " AND key < " + args.add(prefixEnd(r.key))
	}
	rows, err := q.Query(ctx, `
SELECT (SELECT rv FROM state), (SELECT rv FROM compaction), c.rv, c.key, c.created, c.deleted, c.value, c.prev_value
FROM (SELECT) one
LEFT JOIN LATERAL (SELECT * FROM changes WHERE `+where+` ORDER BY rv LIMIT `+args.add(r.limit)+`) c ON true
ORDER BY c.rv`, args...)
	if err != nil {
		return 0, 0, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c                change
			rv               *int64
			key              *string
			created, deleted *bool
		)
		if err := rows.Scan(&current, &compacted, &rv, &key, &created, &deleted, &c.value, &c.prevValue); err != nil {
			return 0, 0, nil, err
		}
		if rv == nil {
			continue
		}
		c.rv, c.key, c.created, c.deleted = *rv, *key, *created, *deleted
		out = append(out, &c)
	}
	return current, compacted, out, rows.Err()
}

// listen holds a dedicated connection in LISTEN so that commits by other processes wake the
// feed at once. Notifications are only hints: after any reconnect the feed is woken anyway,
// and the poll ticker covers what is lost while disconnected.
func (f *feed) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := f.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		klog.V(2).Infof("postgresql storage listener: %v", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (f *feed) listenOnce(ctx context.Context) error {
	// The feed pool's configuration carries the session limits (keepalives) even when the
	// caller's pool was built without them.
	conn, err := pgx.ConnectConfig(ctx, f.b.feedPool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	f.wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		f.wake()
	}
}
