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
	committedAt      time.Time
}

// feedItem is what a subscription receives: a change or a progress bookmark at rv.
type feedItem struct {
	change   *change
	progress int64
}

// subscription is one watch's queue on the feed.
type subscription struct {
	key       string
	recursive bool
	progress  bool
	// from is the feed's RV when the subscription started: changes up to it must come from
	// the log, everything after it arrives on ch. compacted is the compacted RV the feed last saw.
	from, compacted int64
	// epoch counts the rewinds the feed had found when the subscription started, and lost is
	// the highest RV of the histories they lost (see rewindLocked).
	epoch, lost int64
	ch          chan feedItem
	// closedWith is set, before the feed closes ch, to why it did: errOverflow when the watch
	// fell more than the queue behind, or the error the watch must end with. It is nil when
	// the backend closes.
	closedWith error
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
	// last is what the log held at rv when the feed read it: checked on every read of the log.
	last anchor
	// lost is the highest RV that a rewind took away (0 before any).
	lost int64
	subs map[*subscription]struct{}
	// advanced is closed, and replaced, whenever rv moves; rewound whenever the feed finds
	// that the database went back.
	advanced, rewound chan struct{}
	// seen is the highest state.rv the feed has read since the last rewind, and epoch counts
	// the rewinds: a read compares the counter it finds with them (mark, check). Both change
	// under mu only; the rewind stores seen before it counts.
	seen, epoch atomic.Int64

	// progressAsked counts RequestWatchProgress calls; the feed answers each with a bookmark
	// once a poll that started after it has finished.
	progressAsked atomic.Int64
}

const feedBatch = 1000

func newFeed(b *Backend, rv int64) *feed {
	f := &feed{b: b, rv: rv, last: anchor{rv: rv}, polled: time.Now(), wakeCh: make(chan struct{}, 1), subs: map[*subscription]struct{}{},
		advanced: make(chan struct{}), rewound: make(chan struct{})}
	f.seen.Store(rv)
	return f
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
	s.from, s.compacted, s.epoch, s.lost = f.rv, f.compacted, f.epoch.Load(), f.lost
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
		if it.change == nil {
			return // a skipped bookmark loses nothing
		}
		f.closeLocked(s, errOverflow)
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
	from, last, mark := f.rv, f.last, f.mark()
	f.mu.Unlock()
	readCtx, cancel := context.WithTimeout(ctx, f.b.opts.FeedPollTimeout)
	defer cancel()
	read, err := queryChanges(readCtx, f.b.feedPool, changeRange{after: from, limit: feedBatch})
	if err != nil {
		if ctx.Err() == nil && errors.Is(readCtx.Err(), context.DeadlineExceeded) {
			return false, fmt.Errorf("reading the change log took longer than %s: %w", f.b.opts.FeedPollTimeout, err)
		}
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch.Load() != mark.epoch {
		return true, nil // a read found the database rewound meanwhile and reset the feed: read from there
	}
	if read.current < mark.seen {
		f.rewindLocked(read.current, read.compacted, fmt.Sprintf("the feed had read resourceVersion %d", mark.seen))
		return false, nil
	}
	if last.moved(read.at, read.compacted) {
		f.rewindLocked(read.current, read.compacted, fmt.Sprintf("the change the feed dispatched at resourceVersion %d (%s) is now %s",
			last.rv, last, anchorAt(last.rv, read.at)))
		return false, nil
	}
	if read.compacted > from+1 {
		// The feed was away longer than the compaction window: changes are gone for good.
		// Every watch must end with 410 so its client relists.
		f.closeAllLocked(apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old."))
	}
	changes := read.changes
	for _, c := range changes {
		for s := range f.subs {
			if s.matches(c.key) {
				f.send(s, feedItem{change: c})
			}
		}
	}
	f.compacted = read.compacted
	f.seen.Store(max(f.seen.Load(), read.current))
	full := len(changes) == feedBatch
	switch {
	case full:
		f.rv = changes[len(changes)-1].rv
	case read.current > f.rv:
		f.rv = read.current
	}
	switch {
	case f.rv == from:
		if !last.known {
			f.last = anchorAt(from, read.at)
		}
	case len(changes) > 0 && changes[len(changes)-1].rv == f.rv:
		f.last = anchorAt(f.rv, &changes[len(changes)-1].committedAt)
	default:
		f.last = anchor{rv: f.rv} // an RV without a change (tests make them): learnt on the next read
	}
	if f.rv != from {
		close(f.advanced)
		f.advanced = make(chan struct{})
	}
	return full, nil
}

// anchor is what a reader of the log found at the RV it has read up to: whether the log held
// a change there, and when that change was committed. A database restored from a backup, or
// failed over to a standby that had not received the last commits, hands the lost RVs out
// again; the change then found at such an RV is another one (committed at another time), or
// there is one where there was none. One primary-key lookup per read of the log checks it.
type anchor struct {
	rv      int64
	known   bool // false until a read has looked
	present bool
	at      time.Time
}

// anchorAt is what a read found at rv: at is the committed_at of the change there, nil for none.
func anchorAt(rv int64, at *time.Time) anchor {
	if at == nil {
		return anchor{rv: rv, known: true}
	}
	return anchor{rv: rv, known: true, present: true, at: *at}
}

// moved reports whether the log, as read in a snapshot whose compacted RV is compacted, no
// longer holds at a.rv what a remembers. A change that compaction removed cannot be checked;
// the comparison of the counters then stands alone.
func (a anchor) moved(at *time.Time, compacted int64) bool {
	switch {
	case !a.known:
		return false
	case at == nil:
		return a.present && a.rv >= compacted
	case !a.present:
		return true
	}
	return !at.Equal(a.at)
}

func (a anchor) String() string {
	switch {
	case !a.known:
		return "unknown"
	case !a.present:
		return "no change"
	}
	return "committed at " + a.at.UTC().Format(time.RFC3339Nano)
}

// rvMark is what a read knows of the counter before it starts: the highest RV the feed has
// read, and how many rewinds it has found. PostgreSQL's counter only goes forward, so a
// snapshot taken later must hold at least that RV (check).
type rvMark struct{ epoch, seen int64 }

func (f *feed) mark() rvMark {
	// The epoch first: a rewind stores the lower seen before it counts, so a mark never pairs
	// the new epoch with the old seen.
	epoch := f.epoch.Load()
	return rvMark{epoch: epoch, seen: f.seen.Load()}
}

// check rewinds the feed when a read that found state.rv at current after m was marked is the
// first to find that the database went back. The read itself is the database's answer and
// stands.
func (f *feed) check(m rvMark, current int64) {
	if current >= m.seen {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch.Load() == m.epoch {
		f.rewindLocked(current, 0, fmt.Sprintf("this process had read resourceVersion %d before", m.seen))
	}
}

// checkAnchor rewinds the feed when a read that found at, the committed_at of the change at
// last.rv (nil: none), in a snapshot whose counter is current and compacted RV compacted, is
// the first to find that the change the feed had dispatched there (last, taken with m) is no
// longer in the log: the database went back, and was written past the lost RVs again.
func (f *feed) checkAnchor(m rvMark, last anchor, at *time.Time, current, compacted int64) {
	if !last.moved(at, compacted) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.epoch.Load() == m.epoch {
		f.rewindLocked(current, compacted, fmt.Sprintf("the change the feed dispatched at resourceVersion %d (%s) is now %s",
			last.rv, last, anchorAt(last.rv, at)))
	}
}

// rewindLocked reacts to a database whose history went back to current: restored from a
// backup, or failed over to an asynchronous standby. What this process dispatched, and what
// the watch caches hold, may be a history the database no longer has, and the RVs of the lost
// part are handed out again. So every watch ends with 410 (its client relists, as after a
// compaction), the feed goes on from the database's state (compacted is the snapshot's
// compacted RV, 0 when unknown), and the epoch tells the watch caches to list again.
func (f *feed) rewindLocked(current, compacted int64, found string) {
	klog.Errorf("postgresql storage: the database's history went back: its resourceVersion is %d, but %s. "+
		"The database was restored from a backup or failed over to a standby that had not received every commit; "+
		"every watch of this process ends with 410 Gone and the watch caches list again",
		current, found)
	f.lost = max(f.lost, f.seen.Load(), f.rv)
	f.rv, f.compacted, f.last = current, compacted, anchor{rv: current}
	f.seen.Store(current)
	f.epoch.Add(1)
	f.closeAllLocked(errRewound)
	close(f.rewound)
	f.rewound = make(chan struct{})
	close(f.advanced)
	f.advanced = make(chan struct{})
}

// errRewound ends the watches open when the database went back.
var errRewound = apierrors.NewResourceExpired("The resourceVersion for the provided watch is no longer in the storage's history " +
	"(the database was restored or failed over): relist")

// rewindSignal returns the number of rewinds so far and a channel closed at the next.
func (f *feed) rewindSignal() (int64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch.Load(), f.rewound
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

// closeAllLocked ends every subscription; its watch delivers what is queued, then ends with
// err (nil: silently, as the backend closes).
func (f *feed) closeAllLocked(err error) {
	for s := range f.subs {
		f.closeLocked(s, err)
	}
}

func (f *feed) closeLocked(s *subscription, err error) {
	s.closedWith = err
	delete(f.subs, s)
	close(s.ch)
}

// changeRange selects changes in (after, upTo] (upTo 0: no bound) whose key is key, or starts
// with key when recursive ("" for every key).
type changeRange struct {
	after, upTo int64
	key         string
	recursive   bool
	limit       int
}

// logRead is one read of the change log: the snapshot's current and compacted RVs, the
// committed_at of the change at the range's lower bound (nil: none; see anchor), and the
// changes of the range in RV order.
type logRead struct {
	current, compacted int64
	at                 *time.Time
	changes            []*change
}

// readChanges reads the changes of r on the request pool.
func (b *Backend) readChanges(ctx context.Context, r changeRange) (logRead, error) {
	return queryChanges(ctx, b.pool, r)
}

// querier is a pool or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func queryChanges(ctx context.Context, q querier, r changeRange) (logRead, error) {
	var args argList
	after := args.add(r.after)
	where := "rv > " + after
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
SELECT (SELECT rv FROM state), (SELECT rv FROM compaction), (SELECT committed_at FROM changes WHERE rv = `+after+`),
	c.rv, c.key, c.created, c.deleted, c.value, c.prev_value, c.committed_at
FROM (SELECT) one
LEFT JOIN LATERAL (SELECT * FROM changes WHERE `+where+` ORDER BY rv LIMIT `+args.add(r.limit)+`) c ON true
ORDER BY c.rv`, args...)
	if err != nil {
		return logRead{}, err
	}
	defer rows.Close()
	var read logRead
	for rows.Next() {
		var (
			c                change
			rv               *int64
			key              *string
			created, deleted *bool
			committedAt      *time.Time
		)
		if err := rows.Scan(&read.current, &read.compacted, &read.at, &rv, &key, &created, &deleted, &c.value, &c.prevValue, &committedAt); err != nil {
			return logRead{}, err
		}
		if rv == nil {
			continue
		}
		c.rv, c.key, c.created, c.deleted, c.committedAt = *rv, *key, *created, *deleted, *committedAt
		read.changes = append(read.changes, &c)
	}
	return read, rows.Err()
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
