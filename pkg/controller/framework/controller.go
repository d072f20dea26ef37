// Package framework is what every controller of the service shares: a rate-limited work queue
// of "namespace/name" keys filled by informer events, the workers that drain it, the reconcile
// metrics, and the recorder of Kubernetes Events.
package framework

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Controller is one kind's reconcile loop: a rate-limited work queue of "namespace/name" keys,
// filled by informer events, drained by workers that call reconcile. An error requeues the key
// with backoff; success forgets its failures.
type Controller struct {
	// Name labels the controller's metrics and its work queue's.
	Name string
	// Queue is for what the handlers cannot say: AddAfter for the reference's timers.
	Queue     workqueue.TypedRateLimitingInterface[string]
	reconcile func(ctx context.Context, key string) error
	pending   PendingSince
	// running is set while Run drains the queue: a standby (leader election) queues changes
	// without reconciling them, and its waiting is not an unreconciled change's age.
	running atomic.Bool
	// handlersSynced tell whether the handlers added by Watch have been given their informers'
	// initial lists.
	handlersSynced []cache.InformerSynced
}

// NewController makes a controller whose workers call reconcile with each queued key.
func NewController(name string, reconcile func(ctx context.Context, key string) error) *Controller {
	return &Controller{
		Name: name,
		Queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		reconcile: reconcile,
	}
}

// Add queues key for a change that happened now.
func (c *Controller) Add(key string) {
	c.pending.Add(key, time.Now())
	c.Queue.Add(key)
}

// UnwrapTombstone is the last known object of a delete event whose final state the informer
// missed, or obj itself.
func UnwrapTombstone(obj interface{}) interface{} {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// Enqueue adds the key of an informer object (or of its tombstone).
func (c *Controller) Enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.Add(key)
}

// Handler enqueues the object of every add, update and delete event.
func (c *Controller) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.Enqueue,
		UpdateFunc: func(_, obj interface{}) { c.Enqueue(obj) },
		DeleteFunc: c.Enqueue,
	}
}

// Watch adds handler to the informer inf. Run starts no worker before each handler added this
// way has been given the objects its informer first listed, so that the first reconciles see
// every key those adds queue.
func (c *Controller) Watch(inf cache.SharedInformer, handler cache.ResourceEventHandler) error {
	reg, err := inf.AddEventHandler(handler)
	if err != nil {
		return err
	}
	c.handlersSynced = append(c.handlersSynced, reg.HasSynced)
	return nil
}

// HandlersSynced tells whether every handler added by Watch has been given its informer's
// initial list (and the informer has listed).
func (c *Controller) HandlersSynced() bool {
	for _, synced := range c.handlersSynced {
		if !synced() {
			return false
		}
	}
	return true
}

// Run drains the queue with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.Queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.HandlersSynced) {
		return
	}
	c.running.Store(true)
	defer c.running.Store(false)
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
	c.Queue.ShutDown()
	wg.Wait()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.Queue.Get()
	if quit {
		return false
	}
	defer c.Queue.Done(key)
	started := time.Now()
	err := c.reconcile(ctx, key)
	reconcileDuration.WithLabelValues(c.Name).Observe(time.Since(started).Seconds())
	if err != nil {
		reconcilesTotal.WithLabelValues(c.Name, "error").Inc()
		// A conflict only means the cache had not yet seen the controller's own last write.
		if apierrors.IsConflict(err) {
			klog.V(4).InfoS("conflict; retrying", "controller", c.Name, "key", key)
		} else {
			klog.ErrorS(err, "reconciling; will retry", "controller", c.Name, "key", key)
		}
		c.Queue.AddRateLimited(key)
		return true
	}
	reconcilesTotal.WithLabelValues(c.Name, "success").Inc()
	c.pending.Done(key, started)
	c.Queue.Forget(key)
	return true
}

// OnChange calls f with the object of every add, update and delete event.
func OnChange(f func(obj interface{})) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, obj interface{}) { f(obj) }, DeleteFunc: f}
}

// OnGenerationChange calls f on adds and deletes, and on the updates that change the object's
// generation (its spec): status writes, the controllers' own among them, need no second look.
func OnGenerationChange(f func(obj interface{})) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: f,
		UpdateFunc: func(old, obj interface{}) {
			if o, n := old.(metav1.Object), obj.(metav1.Object); o.GetGeneration() != n.GetGeneration() {
				f(obj)
			}
		},
		DeleteFunc: f,
	}
}

// EnqueueUsers queues the objects that users holds under index by the changed object's
// "namespace/name": for each add, update and delete of an object that others name (a Secret
// their spec refers to), the objects that name it.
func (c *Controller) EnqueueUsers(users cache.Indexer, index string) cache.ResourceEventHandler {
	return OnChange(func(obj interface{}) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		objs, _ := users.ByIndex(index, key)
		for _, o := range objs {
			c.Enqueue(o)
		}
	})
}
