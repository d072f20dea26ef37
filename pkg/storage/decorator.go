package storage

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"
	utiltrace "k8s.io/utils/trace"
)

// newStoreFor builds the raw store of one resource from the generic registry's config.
func (b *Backend) newStoreFor(config *storagebackend.ConfigForResource, resourcePrefix string,
	newFunc, newListFunc func() runtime.Object) *Store {
	transformer := config.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	return b.NewStore(config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix, config.GroupResource, transformer)
}

// Decorator returns a generic.StorageDecorator that serves every resource straight from
// PostgreSQL. The backend, not the returned DestroyFunc, owns the shared resources.
func (b *Backend) Decorator() generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, _ func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, _ apistorage.AttrFunc, _ apistorage.IndexerFuncs, _ *cache.Indexers,
	) (apistorage.Interface, factory.DestroyFunc, error) {
		if audit, ok := b.auditStorage(resourcePrefix, config.GroupResource, newFunc); ok {
			return audit, func() {}, nil
		}
		return b.newStoreFor(config, resourcePrefix, newFunc, newListFunc), func() {}, nil
	}
}

// CachedDecorator is genericregistry.StorageWithCacher on top of this backend: the
// apiserver's watch cache serves watches and reads, and fills itself from one recursive watch
// per resource on the PostgreSQL store. Consistent reads (resourceVersion "") come from the
// cache too (ConsistentListFromCache): the cacher reads the current RV from PostgreSQL, one
// row, and waits until its watch has delivered that RV; RequestWatchProgress makes the
// store's watch report it at once when other resources' writes moved the global RV.
func (b *Backend) CachedDecorator() generic.StorageDecorator {
	ClaimRequestWatchProgress()
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrsFunc apistorage.AttrFunc, triggerFuncs apistorage.IndexerFuncs,
		indexers *cache.Indexers,
	) (apistorage.Interface, factory.DestroyFunc, error) {
		// The audit trail has no watch cache: its watches follow the table, its lists read it.
		if audit, ok := b.auditStorage(resourcePrefix, config.GroupResource, newFunc); ok {
			return audit, func() {}, nil
		}
		store := b.newStoreFor(config, resourcePrefix, newFunc, newListFunc)
		source := newCacheSource(store)
		c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:        source,
			Versioner:      apistorage.APIObjectVersioner{},
			GroupResource:  config.GroupResource,
			ResourcePrefix: resourcePrefix,
			KeyFunc:        keyFunc,
			NewFunc:        newFunc,
			NewListFunc:    newListFunc,
			GetAttrsFunc:   getAttrsFunc,
			IndexerFuncs:   triggerFuncs,
			Indexers:       indexers,
			Codec:          config.Codec,
		})
		if err != nil {
			return nil, func() {}, err
		}
		var once sync.Once
		return &labelIndexedCache{Cacher: c, store: store, source: source, maxRows: selectiveListRows}, func() { once.Do(c.Stop) }, nil
	}
}

// cacheSource is the store as the watch cache of a labelIndexedCache sees it. The cache
// fills itself with a list, then a watch from the list's RV; that watch is the only one that
// asks for progress notifications. From it the source learns whether the cache holds the
// history the database has now: when the feed finds that the database went back
// (rewindLocked), it ends the watch with 410 and the cache lists again, and until the cache
// watches again from a list that started after the rewind, what it holds may be lost history.
type cacheSource struct {
	*Store
	// stopped is the rewind epoch when the cache stopped its last watch: it lists again only
	// after that. serving is the epoch of the watch that fills the cache now.
	stopped, serving atomic.Int64
}

func newCacheSource(s *Store) *cacheSource {
	src := &cacheSource{Store: s}
	src.stopped.Store(s.b.feed.epoch.Load())
	src.serving.Store(s.b.feed.epoch.Load())
	return src
}

// serves reports whether the cache's content is of the history after the epoch-th rewind.
func (s *cacheSource) serves(epoch int64) bool {
	return s.serving.Load() == epoch
}

// Watch implements storage.Interface. The cache's own watch is refused with 410 when the
// database went back after the cache stopped its previous one, that is, maybe while it listed.
func (s *cacheSource) Watch(ctx context.Context, key string, opts apistorage.ListOptions) (watch.Interface, error) {
	if !opts.ProgressNotify {
		return s.Store.Watch(ctx, key, opts)
	}
	epoch := s.b.feed.epoch.Load()
	if s.stopped.Load() != epoch {
		return &sourceWatch{Interface: goneWatch(), s: s}, nil
	}
	w, err := s.Store.watchIn(ctx, key, opts, epoch)
	if err != nil {
		return nil, err
	}
	s.serving.Store(epoch)
	return &sourceWatch{Interface: w, s: s}, nil
}

// sourceWatch records when the cache stops its watch. The cacher's reflector stops every
// watch before it lists again.
type sourceWatch struct {
	watch.Interface
	s *cacheSource
}

func (w *sourceWatch) Stop() {
	w.s.stopped.Store(w.s.b.feed.epoch.Load())
	w.Interface.Stop()
}

// selectiveListRows is the most objects a label-selected list takes by key rather than by
// scanning the whole watch cache.
const selectiveListRows = 2000

// labelIndexedCache is the watch cache, with PostgreSQL's object_labels as its label index.
// The v0.31 cache has none: for every list it copies, sorts and matches every object of the
// resource, so at 100,000 objects a list of 1% costs as much as a full one. A list whose
// selector requires a label value that at most selectiveListRows objects carry is answered
// instead from the keys that match in object_labels, read with the snapshot's RV, and the
// objects the cache has under those keys. The cache is first brought up to the snapshot's RV,
// so a cached object whose RV is at most the snapshot's is the version the snapshot holds.
// When one is newer (it changed after the snapshot) or gone, the list reads the rows from the
// store instead, at the latest RV. A first page gets a continue token at the snapshot's RV;
// the cacher sends continue pages to the store, which reads them at that RV.
//
// After the database went back (a restore, a failover: see rewindLocked), the cache holds
// what may be lost history until it has listed again; meanwhile reads and watches are served
// by the store, and a read that the cache answered while the feed found the rewind is read
// again from the store.
type labelIndexedCache struct {
	*cacherstorage.Cacher
	store *Store
	// source is what the cacher reads, nil when the cacher reads the store directly (tests):
	// the cache is then taken to be current.
	source  *cacheSource
	maxRows int64
}

// current reports whether the cache holds the history after the epoch-th rewind.
func (c *labelIndexedCache) current(epoch int64) bool {
	return c.source == nil || c.source.serves(epoch)
}

// fromCache answers a read with cached, or with stored when the cache may hold lost history,
// including when the rewind was found while cached ran (the RV probe of a consistent list
// finds it).
func (c *labelIndexedCache) fromCache(cached, stored func() error) error {
	epoch := c.store.b.feed.epoch.Load()
	if c.current(epoch) {
		err := cached()
		if c.store.b.feed.epoch.Load() == epoch {
			return err
		}
	}
	return stored()
}

// Get implements storage.Interface. A get without a resourceVersion, which the cacher would
// send to the store, is a consistentGet.
func (c *labelIndexedCache) Get(ctx context.Context, key string, opts apistorage.GetOptions, objPtr runtime.Object) error {
	if opts.ResourceVersion == "" {
		return c.fromCache(func() error { return c.consistentGet(ctx, key, opts, objPtr) },
			func() error { return c.store.Get(ctx, key, opts, objPtr) })
	}
	return c.fromCache(func() error { return c.Cacher.Get(ctx, key, opts, objPtr) },
		func() error { return c.store.Get(ctx, key, opts, objPtr) })
}

// GetList implements storage.Interface.
func (c *labelIndexedCache) GetList(ctx context.Context, key string, opts apistorage.ListOptions, listObj runtime.Object) error {
	return c.fromCache(func() error { return c.getList(ctx, key, opts, listObj) },
		func() error {
			// Without what the cache put there: the store appends.
			if v, err := itemsOf(listObj); err == nil {
				v.Set(reflect.Zero(v.Type()))
			}
			return c.store.GetList(ctx, key, opts, listObj)
		})
}

func (c *labelIndexedCache) getList(ctx context.Context, key string, opts apistorage.ListOptions, listObj runtime.Object) error {
	if !c.cacheWouldServe(opts) || !requiresLabelValue(opts.Predicate) || opts.Predicate.Limit > c.maxRows {
		return c.Cacher.GetList(ctx, key, opts, listObj)
	}
	keys, rv, err := c.store.matchingKeys(ctx, key, opts, c.maxRows)
	if errors.Is(err, errTooManyRows) {
		if opts.Predicate.Limit > 0 {
			return c.store.GetList(ctx, key, opts, listObj) // a page of many matches: the key index finds it fast
		}
		return c.Cacher.GetList(ctx, key, opts, listObj)
	}
	if err != nil {
		return err
	}
	keyPrefix := key
	if !strings.HasSuffix(keyPrefix, "/") {
		keyPrefix += "/"
	}
	if ok, err := c.listByKeys(ctx, keys, rv, keyPrefix, opts, listObj); ok || err != nil {
		return err
	}
	return c.store.GetList(ctx, key, opts, listObj)
}

// listByKeys fills listObj with the cached objects under the given keys, in key order, as of
// rv. It reports false, having changed nothing, when the cache holds a later version of one
// of them, or none.
func (c *labelIndexedCache) listByKeys(ctx context.Context, keys []string, rv int64, keyPrefix string,
	opts apistorage.ListOptions, listObj runtime.Object) (bool, error) {
	v, err := itemsOf(listObj)
	if err != nil {
		return false, err
	}
	pred := opts.Predicate
	// The objects are copied straight into the list's array, and matched in Go only when the
	// keys may include more than the selector selects: the keys are read at the versions the
	// cache hands out, so an exact pushdown needs no second look.
	// Both spare allocations that make up most of a list's garbage.
	items := reflect.MakeSlice(v.Type(), len(keys), len(keys))
	exact := pushdownIsExact(pred)
	// The first Get waits until the cache has caught up with rv, so that a lagging cache does
	// not send the list to the store, and so that every version at most rv is the version at
	// rv; the others take the cache as it is ("0"), which only moves forward, and spares the
	// cacher a timer and a goroutine per key. The objects are the cache's, shared and never
	// modified, as the cacher's own lists hand them out.
	getOpts := apistorage.GetOptions{ResourceVersion: strconv.FormatInt(rv, 10)}
	// The cacher adds a step to the request's trace on every Get ("watchCache locked
	// acquired"): a thousand keys would make a thousand steps, about 400 KB of garbage per list,
	// and a slow list's trace log a thousand lines long.
	getCtx := utiltrace.ContextWithTrace(ctx, nil)
	var lastKey string
	hasMore := false
	n := 0
	for _, key := range keys {
		if pred.Limit > 0 && int64(n) == pred.Limit && exact {
			hasMore = true // one more match after a full page
			break
		}
		obj := items.Index(n).Addr().Interface().(runtime.Object)
		if err := c.Cacher.Get(getCtx, key, getOpts, obj); err != nil {
			if ctx.Err() != nil {
				return false, err
			}
			return false, nil
		}
		getOpts.ResourceVersion = "0"
		if objRV, err := c.store.versioner.ObjectResourceVersion(obj); err != nil || int64(objRV) > rv {
			return false, nil
		}
		if !exact {
			if matched, err := pred.Matches(obj); err != nil || !matched {
				continue
			}
		}
		if pred.Limit > 0 && int64(n) == pred.Limit {
			hasMore = true
			break
		}
		n++
		lastKey = key
	}
	items = items.Slice(0, n)
	if n < items.Cap()/2 { // do not keep the unused rest of a mostly filtered array
		items = reflect.AppendSlice(reflect.MakeSlice(v.Type(), 0, n), items)
	}
	continueValue, _, err := apistorage.PrepareContinueToken(lastKey, keyPrefix, rv, 0, hasMore, opts)
	if err != nil {
		return false, err
	}
	v.Set(items)
	// A selector makes remainingItemCount unknown, as in the store.
	return true, c.store.versioner.UpdateList(listObj, uint64(rv), continueValue, nil)
}

// cacheWouldServe reports whether the cacher would answer the list from memory rather than
// delegate it to the store (shouldDelegateList in k8s.io/apiserver's cacher, with consistent
// reads from the cache on).
func (c *labelIndexedCache) cacheWouldServe(opts apistorage.ListOptions) bool {
	p := opts.Predicate
	legacyExact := p.Limit > 0 && opts.ResourceVersionMatch == "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0"
	return opts.Recursive && p.Continue == "" && !legacyExact &&
		(opts.ResourceVersionMatch == "" || opts.ResourceVersionMatch == metav1.ResourceVersionMatchNotOlderThan)
}

// pushdownIsExact reports whether the keys matchingKeys returns are exactly those of the
// objects the predicate selects: label requirements that object_labels answers (a label
// exists, or has one of some values), and no field requirement.
func pushdownIsExact(p apistorage.SelectionPredicate) bool {
	if p.Label != nil {
		reqs, selectable := p.Label.Requirements()
		if !selectable {
			return false
		}
		for _, r := range reqs {
			if !inObjectLabels(r) {
				return false
			}
		}
	}
	return p.Field == nil || p.Field.Empty()
}

// requiresLabelValue reports whether the predicate's label selector requires a label value,
// which object_labels' primary key finds.
func requiresLabelValue(p apistorage.SelectionPredicate) bool {
	for _, r := range filtersFor(p).labels {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return true
		}
	}
	return false
}

var claimOnce sync.Once

// ClaimRequestWatchProgress tells k8s.io/apiserver's cacher that the storage answers
// RequestWatchProgress, which this store does (a bookmark at the feed's RV, sent once the
// feed has read the log up to the moment of the request). v0.31 only learns that from etcd
// clients, through the process-wide etcdfeature.DefaultFeatureSupportChecker; without it the
// cacher sends every consistent list to PostgreSQL and refuses WatchList. A process that uses
// this storage has no etcd client whose answer this would override. Call it before building
// cachers.
func ClaimRequestWatchProgress() {
	claimOnce.Do(func() {
		etcdfeature.DefaultFeatureSupportChecker = progressSupported{etcdfeature.DefaultFeatureSupportChecker}
	})
}

// progressSupported reports RequestWatchProgress as supported; the embedded checker keeps
// CheckClient, whose argument type is unexported.
type progressSupported struct {
	etcdfeature.FeatureSupportChecker
}

func (progressSupported) Supports(f apistorage.Feature) bool {
	return f == apistorage.RequestWatchProgress
}
