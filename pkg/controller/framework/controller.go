// Package framework is what every controller of the service shares: a rate-limited work queue
// of "namespace/name" keys filled by informer events, the workers that drain it, the reconcile
// metrics, and the recorder of Kubernetes Events.
package framework

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
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
	// panicRecorder records a panic's Warning Event on the object panicObjects holds under
	// the key (RecordPanicsOn); a panic is only logged and counted without them.
	panicRecorder record.EventRecorder
	panicObjects  KeyGetter
}

// KeyGetter finds an object by its "namespace/name" key: an informer's store or indexer.
type KeyGetter interface {
	GetByKey(key string) (item interface{}, exists bool, err error)
}

// EventReconcilePanicked is the reason of the Warning Event recorded on an object whose
// reconcile panicked.
const EventReconcilePanicked = "ReconcilePanicked"

// RecordPanicsOn makes the controller record a Warning Event, through recorder, on the object
// that objects (the informer's store of the kind it reconciles) holds under a key whose
// reconcile panicked, so that the object's owner sees it in `kubectl describe`.
func (c *Controller) RecordPanicsOn(recorder record.EventRecorder, objects KeyGetter) {
	c.panicRecorder, c.panicObjects = recorder, objects
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

// Reconcile reconciles key once, outside the queue and the workers (no retry, no recovery
// from a panic): for tests that hold every controller to the same rule.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	return c.reconcile(ctx, key)
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

// EventSource is what Watch needs of an informer: a cache.SharedInformer, or several informers
// seen as one (the per-namespace Secret informers of pkg/controller/tenantsecrets).
type EventSource interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

// Watch adds handler to the informer inf. Run starts no worker before each handler added this
// way has been given the objects its informer first listed, so that the first reconciles see
// every key those adds queue.
func (c *Controller) Watch(inf EventSource, handler cache.ResourceEventHandler) error {
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

// Running tells whether Run drains the queue: false before, after, and while a standby waits
// for its Lease.
func (c *Controller) Running() bool { return c.running.Load() }

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
	err, panicked := c.reconcileContained(ctx, key)
	reconcileDuration.WithLabelValues(c.Name).Observe(time.Since(started).Seconds())
	if panicked {
		reconcilesTotal.WithLabelValues(c.Name, "panic").Inc()
		// With backoff, as a failure: a key that panics every time must not spin.
		c.Queue.AddRateLimited(key)
		return true
	}
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

// reconcileContained reconciles key, recovering from a panic of the reconcile, which it
// reports: a defect met by one object must not stop the process, and with it every other key
// and controller. Left to the worker, the panic would reach wait.UntilWithContext's
// utilruntime.HandleCrash, which panics again (utilruntime.ReallyCrash) and ends the process.
func (c *Controller) reconcileContained(ctx context.Context, key string) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
			c.reportPanic(key, r, debug.Stack())
		}
	}()
	return c.reconcile(ctx, key), false
}

// reportPanic counts, logs and records on the key's object a recovered panic. Recording the
// Event must not panic again: the object is only read from the store.
func (c *Controller) reportPanic(key string, r interface{}, stack []byte) {
	reconcilePanicsTotal.WithLabelValues(c.Name).Inc()
	klog.ErrorS(fmt.Errorf("panic: %v", r), "reconcile panicked; will retry with backoff", "controller", c.Name, "key", key,
		"stack", string(stack))
	if c.panicRecorder == nil || c.panicObjects == nil {
		return
	}
	item, exists, err := c.panicObjects.GetByKey(key)
	if err != nil || !exists {
		return
	}
	if obj, ok := item.(runtime.Object); ok {
		c.panicRecorder.Event(obj, corev1.EventTypeWarning, EventReconcilePanicked,
			Redact(fmt.Sprintf("The %s controller failed on this object (%v) and will retry with backoff; other objects are unaffected. "+
				"This is a defect of the service: please report it.", c.Name, r)))
	}
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
