package storage

import (
	"context"
	"errors"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"
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
		store := b.newStoreFor(config, resourcePrefix, newFunc, newListFunc)
		c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:        store,
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
		return &labelIndexedCache{Cacher: c, store: store, maxRows: selectiveListRows}, func() { once.Do(c.Stop) }, nil
	}
}

// selectiveListRows is the most objects a label-selected list reads from PostgreSQL rather
// than from the watch cache. Up to it, decoding the matching rows costs less than the v0.31
// cache's scan of the whole resource (BenchmarkConsistentList: 1,000 of 100,000 pods).
const selectiveListRows = 2000

// labelIndexedCache is the watch cache, except for lists whose label selector requires a
// label value that at most selectiveListRows objects carry: those come from PostgreSQL, where
// the GIN index on labels finds them without reading the others. The v0.31 cache has no
// label index: for every list it copies, sorts and matches every object of the resource, so
// at 100,000 objects a list of 1% costs as much as a full one. The store answers every list
// with the semantics the cacher delegates to it already (consistent reads, minimum RVs,
// limits and continue tokens at the first page's snapshot); a read at the latest RV also
// satisfies "any" (resourceVersion=0) and not-older-than.
type labelIndexedCache struct {
	*cacherstorage.Cacher
	store   *Store
	maxRows int64
}

// GetList implements storage.Interface.
func (c *labelIndexedCache) GetList(ctx context.Context, key string, opts apistorage.ListOptions, listObj runtime.Object) error {
	if c.cacheWouldServe(opts) && requiresLabelValue(opts.Predicate) {
		if opts.Predicate.Limit > 0 {
			if opts.Predicate.Limit <= c.maxRows {
				return c.store.GetList(ctx, key, opts, listObj)
			}
		} else if err := c.store.getList(ctx, key, opts, listObj, c.maxRows); !errors.Is(err, errTooManyRows) {
			return err
		}
	}
	return c.Cacher.GetList(ctx, key, opts, listObj)
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

// requiresLabelValue reports whether the predicate's label selector requires a label value,
// which the store turns into a GIN-indexed containment (@>).
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
