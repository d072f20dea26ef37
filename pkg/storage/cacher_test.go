package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	apistorage "k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

// The second pass: the whole suite through the apiserver's watch cache on top of the store,
// set up like k8s.io/apiserver/pkg/storage/cacher's own tests (one injected list error to
// exercise the relist, the cacher's flags for each Run*).

func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*example.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod")
	}
	return labels.Set(pod.Labels), fields.Set{
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
	}, nil
}

type cacherSetup struct {
	clusterScoped bool
	nodeNameIndex bool
}

// cached is what CachedDecorator serves (the cacher, with selective label lists from the
// store), plus the store below it, so that the suite can swap the transformer.
type cached struct {
	*labelIndexedCache
	store *Store
}

func (c cached) UpdatePrefixTransformer(m storagetesting.PrefixTransformerModifier) func() {
	return withPrefix{c.store}.UpdatePrefixTransformer(m)
}

func newCacher(t *testing.T, o cacherSetup) (context.Context, cached) {
	ClaimRequestWatchProgress() // as CachedDecorator does: consistent reads come from the cache
	s := newPodStore(newTestBackend(t, testOptions))
	keyFunc := func(obj runtime.Object) (string, error) { return apistorage.NamespaceKeyFunc("/pods", obj) }
	if o.clusterScoped {
		keyFunc = func(obj runtime.Object) (string, error) { return apistorage.NoNamespaceKeyFunc("/pods", obj) }
	}
	var indexers apistorage.IndexerFuncs
	if o.nodeNameIndex {
		indexers = apistorage.IndexerFuncs{"spec.nodeName": func(obj runtime.Object) string {
			if pod, ok := obj.(*example.Pod); ok {
				return pod.Spec.NodeName
			}
			return ""
		}}
	}
	injecting := &storagetesting.StorageInjectingListErrors{Interface: s, Errors: 1}
	c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:        injecting,
		Versioner:      apistorage.APIObjectVersioner{},
		GroupResource:  schema.GroupResource{Resource: "pods"},
		ResourcePrefix: "/pods",
		KeyFunc:        keyFunc,
		GetAttrsFunc:   podAttrs,
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		IndexerFuncs:   indexers,
		Codec:          codecs.LegacyCodec(examplev1.SchemeGroupVersion),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ctx := context.Background()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return injecting.ErrorsConsumed() }); err != nil {
		t.Fatalf("list error not consumed: %v", err)
	}
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, cached{labelIndexedCache: &labelIndexedCache{Cacher: c, store: s, maxRows: selectiveListRows}, store: s}
}

// cacherCompaction compacts the store. The cache keeps its own event window, which the
// suite's cacher flags account for.
func cacherCompaction(c cached) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		compaction(c.store)(ctx, t, resourceVersion)
	}
}

// createWaiter makes Create return only once the cache holds the object and has dispatched its
// event to the watchers registered at that time, for tests that read or start watches from the
// cache right after writing. Upstream's createWrapper polls Get every 100 ms, which only makes
// the dispatch likely: the watch cache stores an event before a separate goroutine dispatches
// it, and a watch with resourceVersion 0 and sendInitialEvents=false registered in between
// ("start at any RV") receives that event too, since it starts from the cache's RV with a
// filter of 0. WatchSemantics' RV=0 cases assume it does not, and failed here about one run in
// three under load with a 10 ms poll. Waiting for the event on a watch of our own is exact: once
// it has the event, the dispatch of that event to every watcher then registered has begun.
type createWaiter struct{ cached }

func (c createWaiter) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	from, err := c.store.currentRV(ctx)
	if err != nil {
		return err
	}
	// From the current RV, so that the probe learns of the new object only by dispatch.
	probe, err := c.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: fmt.Sprint(from), Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		return err
	}
	defer probe.Stop()
	if err := c.cached.Create(ctx, key, obj, out, ttl); err != nil {
		return err
	}
	created, err := meta.Accessor(out)
	if err != nil {
		return err
	}
	timeout := time.After(wait.ForeverTestTimeout)
	for {
		select {
		case ev, ok := <-probe.ResultChan():
			if !ok {
				return fmt.Errorf("the probe watch ended before the cache dispatched %s", key)
			}
			if m, err := meta.Accessor(ev.Object); err == nil && ev.Type == watch.Added && m.GetResourceVersion() == created.GetResourceVersion() {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("the cache did not dispatch %s at RV %s", key, created.GetResourceVersion())
		}
	}
}

func TestCacher(t *testing.T) {
	noop := func(context.Context, *testing.T, string) {}
	calls := func(*testing.T, uint64, uint64) {}
	tests := map[string]func(*testing.T, context.Context, cached){
		"Create":             func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestCreate(ctx, t, c, noop) },
		"CreateWithTTL":      func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestCreateWithTTL(ctx, t, c) },
		"CreateWithKeyExist": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestCreateWithKeyExist(ctx, t, c) },
		"Get":                func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestGet(ctx, t, c) },
		"UnconditionalDelete": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestUnconditionalDelete(ctx, t, c)
		},
		"ConditionalDelete": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestConditionalDelete(ctx, t, c) },
		"DeleteWithSuggestion": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestDeleteWithSuggestion(ctx, t, c)
		},
		"DeleteWithSuggestionAndConflict": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, c)
		},
		"DeleteWithConflict": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestDeleteWithConflict(ctx, t, c) },
		"DeleteWithSuggestionOfDeletedObject": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, c)
		},
		"ValidateDeletionWithSuggestion": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, c)
		},
		"ValidateDeletionWithOnlySuggestionValid": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, c)
		},
		"PreconditionalDeleteWithSuggestion": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, c)
		},
		"PreconditionalDeleteWithOnlySuggestionPass": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, c)
		},
		"List": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestList(ctx, t, c, cacherCompaction(c), true)
		},
		"ConsistentList": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestConsistentList(ctx, t, c, cacherCompaction(c), true, true)
		},
		"GetListNonRecursive": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGetListNonRecursive(ctx, t, cacherCompaction(c), c)
		},
		"GetListRecursivePrefix": func(t *testing.T, ctx context.Context, c cached) {
			// Its RV=0 reads come from the cache, which may not have the new objects yet.
			storagetesting.RunTestGetListRecursivePrefix(ctx, t, createWaiter{c})
		},
		"ListContinuation": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestListContinuation(ctx, t, c, calls)
		},
		"ListPaginationRareObject": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestListPaginationRareObject(ctx, t, c, calls)
		},
		"ListContinuationWithFilter": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestListContinuationWithFilter(ctx, t, c, calls)
		},
		"ListInconsistentContinuation": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestListInconsistentContinuation(ctx, t, c, nil) // as upstream: needs cache internals
		},
		"GuaranteedUpdate": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGuaranteedUpdate(ctx, t, c, noop)
		},
		"GuaranteedUpdateWithTTL": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, c)
		},
		"GuaranteedUpdateChecksStoredData": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGuaranteedUpdateChecksStoredData(ctx, t, c)
		},
		"GuaranteedUpdateWithConflict": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, c)
		},
		"GuaranteedUpdateWithSuggestionAndConflict": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, c)
		},
		"Count": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestCount(ctx, t, c) },
		"Watch": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestWatch(ctx, t, c) },
		"WatchFromZero": func(t *testing.T, ctx context.Context, c cached) {
			// As upstream, whose compaction callback trims the watch cache's internals: the
			// cache keeps serving a window of history that the store has compacted.
			storagetesting.RunTestWatchFromZero(ctx, t, c, nil)
		},
		"DeleteTriggerWatch": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestDeleteTriggerWatch(ctx, t, c) },
		"WatchFromNonZero":   func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestWatchFromNonZero(ctx, t, c) },
		"DelayedWatchDelivery": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestDelayedWatchDelivery(ctx, t, c)
		},
		"WatchContextCancel": func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestWatchContextCancel(ctx, t, c) },
		"WatcherTimeout":     func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestWatcherTimeout(ctx, t, c) },
		"WatchDeleteEventObjectHaveLatestRV": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, c)
		},
		"WatchInitializationSignal": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestWatchInitializationSignal(ctx, t, c)
		},
		"WatchDispatchBookmarkEvents": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, c, true)
		},
		"OptionalWatchBookmarksWithCorrectResourceVersion": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion(ctx, t, c)
		},
		"WatchSemantics": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunWatchSemantics(ctx, t, createWaiter{c})
		},
		"WatchSemanticInitialEventsExtended": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, createWaiter{c})
		},
		"SendInitialEventsBackwardCompatibility": func(t *testing.T, ctx context.Context, c cached) {
			storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, c)
		},
	}
	setups := map[string]cacherSetup{
		"ClusterScopedWatch":   {clusterScoped: true, nodeNameIndex: true},
		"NamespaceScopedWatch": {nodeNameIndex: true},
	}
	tests["ClusterScopedWatch"] = func(t *testing.T, ctx context.Context, c cached) { storagetesting.RunTestClusterScopedWatch(ctx, t, c) }
	tests["NamespaceScopedWatch"] = func(t *testing.T, ctx context.Context, c cached) {
		storagetesting.RunTestNamespaceScopedWatch(ctx, t, c)
	}
	// Run* that k8s.io/apiserver's own cacher tests do not run through the cacher either.
	notThroughCacher := map[string]string{
		"ListResourceVersionMatch":          "disabled in upstream's cacher tests (kubernetes#109831)",
		"WatchError":                        "disabled in upstream's cacher tests (kubernetes#109831): a transformer error ends the cacher's own storage watch, which it retries instead of passing on",
		"ProgressNotify":                    "the cacher never forwards storage bookmarks; WatchDispatchBookmarkEvents covers its own",
		"WatchErrorIsBlockingFurtherEvents": "not in upstream's cacher tests; like WatchError it needs a transformer error to reach the watcher, which the cacher retries instead",
		"TransformationFailure": "disabled in upstream's cacher tests (kubernetes#109831): whether Delete fails depends on whether the cache " +
			"decoded the object before the transformer changed back; the raw store passes it",
	}
	for name, reason := range notThroughCacher {
		t.Run(name, func(t *testing.T) { t.Skip(reason) })
	}
	for name, run := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, c := newCacher(t, setups[name])
			run(t, ctx, c)
		})
	}
}
