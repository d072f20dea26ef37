package storage

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// Consistent gets from the watch cache.
//
// A get without a resourceVersion must return the latest state, so k8s.io/apiserver's cacher
// sends it to the store: a statement reading the row, then decoding its JSON. Here the get
// first takes the object the cache holds, then a statement reads only the object's mod_rv; the
// cached object answers when its RV is that mod_rv: the same write the store would have
// decoded (an RV names one write), already decoded. A cache that lags behind the object, or
// does not hold it, sends the get to the store as before. The lookups of concurrent gets share
// one statement (versionLookups): each get waits for a statement that starts after it
// arrived, so what it reads is at least as recent as the database when the get began, which
// is what makes it linearizable, as a read of the row is.
//
// Why the cache first, and equality rather than "at least": the cache holds only what the
// feed dispatched, which was committed before the get took it, so in the statement's later
// snapshot the row's mod_rv is at least the cached RV. A cached RV above it can only be
// history the database lost (a restore, a failover: see rewindLocked), and so can a cached
// object at an RV that a rewind handed out again to another write of the same key. The
// statement therefore also checks, as every read of the log does, that the change the feed
// dispatched last (the newest the cache can hold) is still in the log (feed.checkAnchor);
// when it is not, or the counter went back (feed.check), the rewind is found there and
// labelIndexedCache.fromCache reads the object from the store, as it does every other read.
// maxVersionLookups is the most keys one lookup statement reads.
const maxVersionLookups = 256

// versionLookupTimeout bounds one lookup statement; the gets waiting for it leave earlier
// when their requests end. Every consistent get of the process waits for the one statement in
// flight, so a statement stuck on a dead connection (one the client has not noticed yet)
// would hold them all, where each used to wait only for its own; after this long they read
// the store, each on its own connection. A lookup of 256 keys by primary key takes well
// under a millisecond.
const versionLookupTimeout = 5 * time.Second

// maxVersionStatements is the most lookup statements in flight at once. With one, a get that
// arrives just after a statement started waits for it and then for its own. Measured with 32
// clients through the aggregator (gitops-bench -profile-gets, 6 alternating rounds): three in
// flight made smaller batches, and PostgreSQL spent 74 µs per get against 22 µs with one, for
// no more gets per second.
const maxVersionStatements = 1

// versionLookups batches the mod_rv lookups of concurrent consistent gets.
type versionLookups struct {
	mu      sync.Mutex
	pending []*versionLookup
	running int // goroutines running statements until pending is empty
}

type versionLookup struct {
	key   string
	modRV int64 // 0: no object under key
	err   error
	done  chan struct{}
}

// currentVersion returns the mod_rv of the object stored under key (a prepared key) in a
// snapshot taken after the call began, or 0 when there is none.
func (b *Backend) currentVersion(ctx context.Context, key string) (int64, error) {
	l := &versionLookup{key: key, done: make(chan struct{})}
	v := &b.versions
	v.mu.Lock()
	v.pending = append(v.pending, l)
	start := v.running < maxVersionStatements
	if start {
		v.running++
	}
	v.mu.Unlock()
	if start {
		go b.lookUpVersions()
	}
	select {
	case <-l.done:
		return l.modRV, l.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// lookUpVersions runs one statement for the lookups pending, then for those that arrived
// meanwhile, until none is left. Up to maxVersionStatements of it run at once.
func (b *Backend) lookUpVersions() {
	v := &b.versions
	for {
		v.mu.Lock()
		batch := v.pending
		if len(batch) > maxVersionLookups {
			batch, v.pending = batch[:maxVersionLookups:maxVersionLookups], batch[maxVersionLookups:]
		} else {
			v.pending = nil
		}
		if len(batch) == 0 {
			v.running--
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		b.lookUpBatch(batch)
	}
}

func (b *Backend) lookUpBatch(batch []*versionLookup) {
	keys := make([]string, len(batch))
	for i, l := range batch {
		keys[i] = l.key
	}
	found, err := b.modRVs(keys)
	for _, l := range batch {
		l.modRV, l.err = found[l.key], err
		close(l.done)
	}
}

// modRVs reads the mod_rv of the objects stored under keys, and in the same snapshot state.rv
// and what the log holds at the RV the feed dispatched last, which tell the feed when the
// database went back (feed.check, feed.checkAnchor), as every read of the log does.
func (b *Backend) modRVs(keys []string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), versionLookupTimeout)
	defer cancel()
	f := b.feed
	f.mu.Lock()
	last, mark := f.last, f.mark()
	f.mu.Unlock()
	rows, err := b.pool.Query(ctx,
		`SELECT (SELECT rv FROM state), (SELECT rv FROM compaction), (SELECT committed_at FROM changes WHERE rv = $2), o.key, o.mod_rv
FROM (SELECT) one LEFT JOIN objects o ON o.key = ANY($1)`, keys, last.rv)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]int64, len(keys))
	var (
		current, compacted int64
		at                 *time.Time
	)
	for rows.Next() {
		var (
			key   *string
			modRV *int64
		)
		if err := rows.Scan(&current, &compacted, &at, &key, &modRV); err != nil {
			return nil, err
		}
		if key != nil && modRV != nil {
			found[*key] = *modRV
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	f.check(mark, current)
	f.checkAnchor(mark, last, at, current, compacted)
	return found, nil
}

// consistentGet serves a get without a resourceVersion from the cache when it holds the
// version the database has, and from the store otherwise (see the top of this file).
func (c *labelIndexedCache) consistentGet(ctx context.Context, key string, opts apistorage.GetOptions, objPtr runtime.Object) error {
	stored, err := c.store.prepareKey(key)
	if err != nil {
		return c.store.Get(ctx, key, opts, objPtr)
	}
	// The cache as it is ("0"), before the statement. Without IgnoreNotFound the cacher would
	// answer a missing object (a cache behind a create) with an error instead of letting the
	// store read it.
	cachedRV := int64(-1)
	if err := c.Cacher.Get(ctx, key, apistorage.GetOptions{ResourceVersion: "0", IgnoreNotFound: true}, objPtr); err == nil {
		if rv, err := c.store.versioner.ObjectResourceVersion(objPtr); err == nil && rv > 0 {
			cachedRV = int64(rv)
		}
	}
	modRV, err := c.store.b.currentVersion(ctx, stored)
	if err == nil && modRV != 0 && modRV == cachedRV {
		return nil
	}
	// objPtr may hold a shallow copy of the cache's object, whose maps and slices the cache
	// shares with every reader: decoding into them would change the cached object.
	if err := runtime.SetZeroValue(objPtr); err != nil {
		return err
	}
	if err != nil {
		return c.store.Get(ctx, key, opts, objPtr) // the store reports the error, or reads after all
	}
	if modRV == 0 {
		if opts.IgnoreNotFound {
			return nil
		}
		return apistorage.NewKeyNotFoundError(stored, 0)
	}
	return c.store.Get(ctx, key, opts, objPtr)
}
