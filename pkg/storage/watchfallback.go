package storage

import (
	"context"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// Watch implements storage.Interface. The watch cache of a process holds events only from its
// own first list on, so after a restart it answers a watch from an older resourceVersion with
// 410 Gone, although the change log still has every change since (only compaction removes
// them) and the client would have to relist for nothing. Such a watch is served by the store
// instead, which replays the log; the store answers 410 only when the RV was compacted.
func (c *labelIndexedCache) Watch(ctx context.Context, key string, opts apistorage.ListOptions) (watch.Interface, error) {
	w, err := c.Cacher.Watch(ctx, key, opts)
	if err != nil || opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		return w, err
	}
	return newFallbackWatch(ctx, w, func(ctx context.Context) (watch.Interface, error) {
		return c.store.Watch(ctx, key, opts)
	}), nil
}

// fallbackWatch forwards the events of the cache's watch, unless its first event is a 410:
// then it forwards those of the store's watch from the same RV. Stop stops the watch being
// forwarded, whose remaining events are still forwarded until it closes, as the cache's own
// watchers do.
type fallbackWatch struct {
	result chan watch.Event

	mu      sync.Mutex
	current watch.Interface
	stopped bool
}

func newFallbackWatch(ctx context.Context, cached watch.Interface, fromStore func(context.Context) (watch.Interface, error)) *fallbackWatch {
	f := &fallbackWatch{result: make(chan watch.Event), current: cached}
	go f.run(ctx, cached, fromStore)
	return f
}

func (f *fallbackWatch) run(ctx context.Context, w watch.Interface, fromStore func(context.Context) (watch.Interface, error)) {
	defer close(f.result)
	first := true
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			f.Stop()
			return
		case ev, ok = <-w.ResultChan():
			if !ok {
				return
			}
		}
		if first && isGone(ev) {
			w.Stop()
			stored, err := fromStore(ctx)
			if err == nil {
				if w = f.switchTo(stored); w == nil {
					return
				}
				first = false
				continue
			}
			status := toStatusError(clientError(err)).Status()
			ev = watch.Event{Type: watch.Error, Object: &status}
		}
		first = false
		select {
		case f.result <- ev:
		case <-ctx.Done():
			f.Stop()
			return
		}
	}
}

// switchTo makes w the watch forwarded, or stops it and returns nil if Stop came first.
func (f *fallbackWatch) switchTo(w watch.Interface) watch.Interface {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		w.Stop()
		return nil
	}
	f.current = w
	return w
}

func isGone(ev watch.Event) bool {
	status, ok := ev.Object.(*metav1.Status)
	return ev.Type == watch.Error && ok && status.Code == http.StatusGone
}

func (f *fallbackWatch) ResultChan() <-chan watch.Event { return f.result }

func (f *fallbackWatch) Stop() {
	f.mu.Lock()
	f.stopped = true
	w := f.current
	f.mu.Unlock()
	w.Stop()
}
