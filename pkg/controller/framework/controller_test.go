package framework

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestControllerRetriesUntilSuccess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan string, 10)
	c := NewController("test", func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		if calls[key] < 3 {
			return errors.New("not yet")
		}
		done <- key
		return nil
	})
	go c.Run(ctx, 2)

	obj := &metav1.ObjectMeta{Namespace: "ns", Name: "a"}
	c.Enqueue(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: obj})
	select {
	case key := <-done:
		if key != "ns/a" {
			t.Errorf("reconciled %q", key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never reconciled successfully")
	}
	// The worker records the success once reconcile has returned.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, pending := c.pending.Oldest()
		return !pending, nil
	}); err != nil {
		t.Error("the change is still pending after its successful reconcile")
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["ns/a"] != 3 {
		t.Errorf("%d reconciles, want two failures and a success", calls["ns/a"])
	}
}

func TestRunWaitsForTheHandlersOfTheInitialList(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cms []runtime.Object
	for i := range 50 {
		cms = append(cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint(i)}})
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(cms...), 0)
	inf := factory.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	reconciled := map[string]bool{}
	first := make(chan int, 1)
	var c *Controller
	c = NewController("test", func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		reconciled[key] = true
		if len(reconciled) == 1 {
			// What the first reconcile sees queued: every add, if Run waited for them.
			first <- c.Queue.Len()
		}
		return nil
	})
	// A slow handler: without the wait, the worker would start while the adds still arrive.
	if err := c.Watch(inf, cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		time.Sleep(time.Millisecond)
		c.Enqueue(obj)
	}}); err != nil {
		t.Fatal(err)
	}
	if c.HandlersSynced() {
		t.Fatal("handlers synced before the informer started")
	}
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)
	select {
	case queued := <-first:
		if queued != len(cms)-1 {
			t.Errorf("the first reconcile saw %d keys queued, want the other %d adds", queued, len(cms)-1)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reconciled")
	}
	if !c.HandlersSynced() {
		t.Error("handlers not synced once Run started its workers")
	}
}
