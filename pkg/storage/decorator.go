package storage

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
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
		c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:        b.newStoreFor(config, resourcePrefix, newFunc, newListFunc),
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
		return c, func() { once.Do(c.Stop) }, nil
	}
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
