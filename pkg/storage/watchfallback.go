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
//
// A watch of the cache ends with 410 when the feed finds that the database went back: the
// cacher would only close it once it has listed again, and its client would then resume from
// an RV of the lost history. While the cache has not listed again, the store serves watches.
func (c *labelIndexedCache) Watch(ctx context.Context, key string, opts apistorage.ListOptions) (watch.Interface, error) {
	epoch, rewound := c.store.b.feed.rewindSignal()
	if !c.current(epoch) {
		return c.store.Watch(ctx, key, opts)
	}
	w, err := c.Cacher.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	var fromStore func(context.Context) (watch.Interface, error)
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		fromStore = func(ctx context.Context) (watch.Interface, error) {
			return c.store.Watch(ctx, key, opts)
		}
	}
	return newFallbackWatch(ctx, w, fromStore, rewound), nil
}

// fallbackWatch forwards the events of the cache's watch, unless its first event is a 410
// and fromStore is set: then it forwards those of the store's watch from the same RV. Stop
// stops the watch being forwarded, whose remaining events are still forwarded until it
// closes, as the cache's own watchers do. When rewound closes it ends with 410.
type fallbackWatch struct {
	result chan watch.Event

	mu      sync.Mutex
	current watch.Interface
	stopped bool
}

func newFallbackWatch(ctx context.Context, cached watch.Interface, fromStore func(context.Context) (watch.Interface, error),
	rewound <-chan struct{}) *fallbackWatch {
	f := &fallbackWatch{result: make(chan watch.Event), current: cached}
	go f.run(ctx, cached, fromStore, rewound)
	return f
}

func (f *fallbackWatch) run(ctx context.Context, w watch.Interface, fromStore func(context.Context) (watch.Interface, error),
	rewound <-chan struct{}) {
	defer close(f.result)
	first := true
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			f.Stop()
			return
		case <-rewound:
			w.Stop()
			f.send(ctx, goneEvent())
			return
		case ev, ok = <-w.ResultChan():
			if !ok {
				return
			}
		}
		if first && fromStore != nil && isGone(ev) {
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
		if !f.send(ctx, ev) {
			f.Stop()
			return
		}
	}
}

// send forwards ev unless the context ended first.
func (f *fallbackWatch) send(ctx context.Context, ev watch.Event) bool {
	select {
	case f.result <- ev:
		return true
	case <-ctx.Done():
		return false
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

// goneEvent is the 410 that ends a watch open when the database went back.
func goneEvent() watch.Event {
	status := errRewound.Status()
	return watch.Event{Type: watch.Error, Object: &status}
}

// goneWatch is a watch that ends with goneEvent at once.
func goneWatch() watch.Interface {
	ch := make(chan watch.Event, 1)
	ch <- goneEvent()
	close(ch)
	return watch.NewProxyWatcher(ch)
}

func (f *fallbackWatch) ResultChan() <-chan watch.Event { return f.result }

func (f *fallbackWatch) Stop() {
	f.mu.Lock()
	f.stopped = true
	w := f.current
	f.mu.Unlock()
	w.Stop()
}
