package agent

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// controller is one kind's reconcile loop: a rate-limited work queue of "namespace/name" keys,
// filled by informer events, drained by workers that call reconcile. An error requeues the key
// with backoff; success forgets its failures.
type controller struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile func(ctx context.Context, key string) error
	pending   pendingSince
}

func newController(name string, reconcile func(ctx context.Context, key string) error) *controller {
	return &controller{
		name: name,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		reconcile: reconcile,
	}
}

// add queues key for a change that happened now.
func (c *controller) add(key string) {
	c.pending.add(key, time.Now())
	c.queue.Add(key)
}

// unwrapTombstone is the last known object of a delete event whose final state the informer
// missed, or obj itself.
func unwrapTombstone(obj interface{}) interface{} {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// enqueue adds the key of an informer object (or of its tombstone).
func (c *controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.add(key)
}

// handler enqueues the object of every add, update and delete event.
func (c *controller) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}
}

// run drains the queue with the given number of workers until ctx is done.
func (c *controller) run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNext(ctx) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	started := time.Now()
	err := c.reconcile(ctx, key)
	reconcileDuration.WithLabelValues(c.name).Observe(time.Since(started).Seconds())
	if err != nil {
		reconcilesTotal.WithLabelValues(c.name, "error").Inc()
		// A conflict only means the cache had not yet seen the agent's own last write.
		if apierrors.IsConflict(err) {
			klog.V(4).InfoS("conflict; retrying", "controller", c.name, "key", key)
		} else {
			klog.ErrorS(err, "reconciling; will retry", "controller", c.name, "key", key)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	reconcilesTotal.WithLabelValues(c.name, "success").Inc()
	c.pending.done(key, started)
	c.queue.Forget(key)
	return true
}
