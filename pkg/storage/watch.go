package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	apistorage "k8s.io/apiserver/pkg/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
)

// resultBuffer is the result channel's capacity, as in etcd3: a stopped watch still
// delivers what is buffered.
const resultBuffer = 100

// replayBatch is how many log rows a watch reads per query while catching up.
const replayBatch = 1000

var errOverflow = errors.New("watch fell behind the feed")

type watcher struct {
	s         *Store
	ctx       context.Context
	cancel    context.CancelFunc
	key       string
	recursive bool
	progress  bool
	pred      apistorage.SelectionPredicate
	result    chan watch.Event
	// lastRV is the RV the client has seen everything up to, and last what the log held there
	// when lastRV was the RV of the last change sent.
	lastRV int64
	last   anchor
	// epoch is the number of rewinds the feed had found when the watch started: the watch
	// ends with 410 once the feed finds another (rewindLocked).
	epoch int64
}

// Watch implements storage.Interface with etcd3's semantics for the start RV, initial
// events and bookmarks.
func (s *Store) Watch(ctx context.Context, key string, opts apistorage.ListOptions) (watch.Interface, error) {
	return s.watchIn(ctx, key, opts, s.b.feed.epoch.Load())
}

// watchIn starts a watch that ends with 410 if the database's history went back after the
// epoch-th rewind, which the caller knows the start RV to be from.
func (s *Store) watchIn(ctx context.Context, key string, opts apistorage.ListOptions, epoch int64) (_ watch.Interface, err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return nil, err
	}
	rev, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if opts.Recursive && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	if opts.ProgressNotify && s.newFunc == nil {
		return nil, apierrors.NewInternalError(errors.New("progressNotify for watch is unsupported by the postgresql storage because no newFunc was provided"))
	}
	startRV, err := s.startWatchRV(ctx, int64(rev), opts)
	if err != nil {
		return nil, err
	}
	w := &watcher{
		s:         s,
		key:       key,
		recursive: opts.Recursive,
		progress:  opts.ProgressNotify,
		pred:      opts.Predicate,
		result:    make(chan watch.Event, resultBuffer),
		lastRV:    startRV,
		epoch:     epoch,
	}
	if w.pred.Empty() {
		w.pred = apistorage.Everything
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.run(initialEventsEndBookmarkRequired(opts), initialEventsRequired(int64(rev), opts))
	utilflowcontrol.WatchInitialized(ctx)
	return w, nil
}

func (s *Store) currentRV(ctx context.Context) (int64, error) {
	mark := s.b.feed.mark()
	var rv int64
	if err := s.b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&rv); err != nil {
		return 0, err
	}
	s.b.feed.check(mark, rv)
	return rv, nil
}

// startWatchRV mirrors etcd3: RV 0 means "from now" only for a WatchList request that
// explicitly declines initial events.
func (s *Store) startWatchRV(ctx context.Context, rv int64, opts apistorage.ListOptions) (int64, error) {
	if rv > 0 || !utilfeature.DefaultFeatureGate.Enabled(features.WatchList) ||
		opts.SendInitialEvents == nil || *opts.SendInitialEvents {
		return rv, nil
	}
	return s.currentRV(ctx)
}

func initialEventsEndBookmarkRequired(opts apistorage.ListOptions) bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.WatchList) &&
		opts.SendInitialEvents != nil && *opts.SendInitialEvents && opts.Predicate.AllowWatchBookmarks
}

func initialEventsRequired(rv int64, opts apistorage.ListOptions) bool {
	if opts.SendInitialEvents == nil && rv == 0 {
		return true // legacy watch from "0" or ""
	}
	return utilfeature.DefaultFeatureGate.Enabled(features.WatchList) &&
		opts.SendInitialEvents != nil && *opts.SendInitialEvents
}

func (w *watcher) Stop() { w.cancel() }

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) run(endBookmark, initialEvents bool) {
	defer close(w.result)
	defer w.cancel()
	if err := w.serve(endBookmark, initialEvents); err != nil && w.ctx.Err() == nil {
		status := toStatusError(clientError(err)).Status()
		select {
		case w.result <- watch.Event{Type: watch.Error, Object: &status}:
		case <-w.ctx.Done():
		}
	}
}

func toStatusError(err error) apierrors.APIStatus {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s
	}
	return apierrors.NewInternalError(err)
}

func (w *watcher) serve(endBookmark, initialEvents bool) error {
	if initialEvents && w.lastRV > 0 {
		current, err := w.s.currentRV(w.ctx)
		if err != nil {
			return err
		}
		if w.lastRV > current {
			return apistorage.NewTooLargeResourceVersionError(uint64(w.lastRV), uint64(current), int(wait.Jitter(time.Second, 3).Seconds()))
		}
	}
	if initialEvents {
		if err := w.sendInitialEvents(); err != nil {
			return err
		}
	}
	if endBookmark {
		if err := w.sendBookmark(w.lastRV, true); err != nil {
			return err
		}
	}
	for {
		err := w.follow(w.s.b.feed.subscribe(w.key, w.recursive, w.progress))
		if !errors.Is(err, errOverflow) {
			return err
		}
	}
}

// sendInitialEvents sends the current state as Added events and moves lastRV to its RV.
func (w *watcher) sendInitialEvents() error {
	q := rangeQuery{start: w.key, exact: !w.recursive, limit: replayBatch}
	if w.recursive {
		q.end = prefixEnd(w.key)
	}
	for {
		mark := w.s.b.feed.mark()
		res, err := w.s.b.rangeRead(w.ctx, q)
		if err != nil {
			return err
		}
		w.s.b.feed.check(mark, res.currentRV)
		if q.rv == 0 {
			q.rv = res.currentRV
		}
		for _, r := range res.rows {
			if err := w.emit(&change{rv: r.rv, key: r.key, created: true, value: r.value}); err != nil {
				return err
			}
		}
		if len(res.rows) < replayBatch {
			w.lastRV = q.rv
			return nil
		}
		q.start, q.startExclusive = res.rows[len(res.rows)-1].key, true
	}
}

// follow delivers changes after lastRV: first from the log up to where the subscription
// started, then from the subscription. It returns errOverflow when the subscription was cut
// because this watch fell behind; the caller then subscribes again and catches up.
func (w *watcher) follow(sub *subscription) error {
	defer w.s.b.feed.unsubscribe(sub)
	// A watch from an RV that a rewind took away, and that the database has not handed out
	// again, would wait for it and drop the changes of the new history up to it.
	if sub.epoch != w.epoch || (w.lastRV > sub.from && w.lastRV <= sub.lost) {
		return errRewound
	}
	// Like etcd, a watch from before the compacted RV fails: the client must relist.
	expired := apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")
	if sub.compacted > w.lastRV {
		return expired
	}
	backoff := readRetryFirst
	for w.lastRV < sub.from {
		mark := w.s.b.feed.mark()
		read, err := w.s.b.readChanges(w.ctx, changeRange{
			after: w.lastRV, upTo: sub.from, key: w.key, recursive: w.recursive, limit: replayBatch})
		if kind := classify(err); kind == dbUnavailable || kind == dbTimeout {
			// The log is still there when PostgreSQL is back: a watch that fell behind during
			// a restart or failover waits for it rather than ending, as the feed does.
			select {
			case <-w.ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, readRetryMax)
			continue
		}
		if err != nil {
			return err
		}
		backoff = readRetryFirst
		// Changes of another history must not follow those already sent.
		w.s.b.feed.check(mark, read.current)
		if w.s.b.feed.epoch.Load() != w.epoch || w.anchor().moved(read.at, read.compacted) {
			return errRewound
		}
		if read.compacted > w.lastRV {
			return expired
		}
		for _, c := range read.changes {
			if err := w.emit(c); err != nil {
				return err
			}
			w.passed(c)
		}
		if len(read.changes) < replayBatch {
			w.lastRV = sub.from
		}
	}
	for {
		select {
		case <-w.ctx.Done():
			return nil
		case it, ok := <-sub.ch:
			switch {
			case !ok:
				return sub.closedWith
			case it.change != nil:
				if it.change.rv > w.lastRV {
					if err := w.emit(it.change); err != nil {
						return err
					}
					w.passed(it.change)
				}
			case it.progress >= w.lastRV && w.progress:
				if err := w.sendBookmark(it.progress, false); err != nil {
					return err
				}
			}
		}
	}
}

// passed records that everything up to c has been sent.
func (w *watcher) passed(c *change) {
	w.lastRV, w.last = c.rv, anchorAt(c.rv, &c.committedAt)
}

// anchor is what the log held at lastRV, if the watch knows.
func (w *watcher) anchor() anchor {
	if w.last.rv != w.lastRV {
		return anchor{}
	}
	return w.last
}

// emit turns a change into at most one event for this watch and sends it.
func (w *watcher) emit(c *change) error {
	ev, err := w.transform(c)
	if err != nil {
		return err
	}
	if ev == nil {
		return nil
	}
	return w.send(*ev)
}

func (w *watcher) send(ev watch.Event) error {
	select {
	case w.result <- ev:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

func (w *watcher) sendBookmark(rv int64, initialEventsEnd bool) error {
	obj := w.s.newFunc()
	if err := w.s.versioner.UpdateObject(obj, uint64(rv)); err != nil {
		return fmt.Errorf("failed to propagate object resource version: %w", err)
	}
	if initialEventsEnd {
		if err := apistorage.AnnotateInitialEventsEndBookmark(obj); err != nil {
			return fmt.Errorf("error while accessing object's metadata gr: %v, type: %v, err: %w", w.s.groupResource, w.s.objectType, err)
		}
	}
	w.lastRV = rv
	return w.send(watch.Event{Type: watch.Bookmark, Object: obj})
}

func (w *watcher) matches(obj runtime.Object) bool {
	if w.pred.Empty() {
		return true
	}
	ok, err := w.pred.Matches(obj)
	return err == nil && ok
}

// transform applies etcd3's event rules, including selector transitions: an update that
// makes an object match is Added, one that makes it stop matching is Deleted (with the old
// object at the new RV).
func (w *watcher) transform(c *change) (*watch.Event, error) {
	var cur, old runtime.Object
	var err error
	if !c.deleted {
		if cur, err = w.decode(c.key, c.value, c.rv); err != nil {
			return nil, err
		}
	}
	if len(c.prevValue) > 0 && (c.deleted || !w.pred.Empty()) {
		if old, err = w.decode(c.key, c.prevValue, c.rv); err != nil {
			return nil, err
		}
	}
	switch {
	case c.deleted:
		if !w.matches(old) {
			return nil, nil
		}
		return &watch.Event{Type: watch.Deleted, Object: old}, nil
	case c.created:
		if !w.matches(cur) {
			return nil, nil
		}
		return &watch.Event{Type: watch.Added, Object: cur}, nil
	case w.pred.Empty():
		return &watch.Event{Type: watch.Modified, Object: cur}, nil
	}
	curMatches, oldMatches := w.matches(cur), w.matches(old)
	switch {
	case curMatches && oldMatches:
		return &watch.Event{Type: watch.Modified, Object: cur}, nil
	case curMatches:
		return &watch.Event{Type: watch.Added, Object: cur}, nil
	case oldMatches:
		return &watch.Event{Type: watch.Deleted, Object: old}, nil
	}
	return nil, nil
}

func (w *watcher) decode(key string, value []byte, rv int64) (runtime.Object, error) {
	data, _, err := w.s.fromStorage(w.ctx, key, value)
	if err != nil {
		return nil, err
	}
	obj, err := runtime.Decode(w.s.codec, data)
	if err != nil {
		return nil, err
	}
	internObject(obj)
	if err := w.s.versioner.UpdateObject(obj, uint64(rv)); err != nil {
		return nil, fmt.Errorf("failure to version api object (%d) %#v: %v", rv, obj, err)
	}
	return obj, nil
}
