package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
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

// TestAPanicIsContainedToItsKey: a reconcile that panics for one key is reported (metric,
// Event on the key's object) and retried with backoff, while the controller's other keys and
// other controllers go on. Were the panic to escape a worker, utilruntime.HandleCrash would
// panic again and end this test's process.
func TestAPanicIsContainedToItsKey(t *testing.T) {
	RegisterMetrics(func() []*Controller { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	attempts := map[string]int{}
	count := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return attempts[key]
	}
	objects := cache.NewStore(cache.MetaNamespaceKeyFunc)
	if err := objects.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "poison"}}); err != nil {
		t.Fatal(err)
	}
	reconcile := func(_ context.Context, key string) error {
		mu.Lock()
		attempts[key]++
		mu.Unlock()
		if key == "ns/poison" {
			var gone *corev1.ConfigMap // the kind of defect met: an object that is no more
			return errors.New(gone.Name)
		}
		return nil
	}
	panicky, other := NewController("panicky", reconcile), NewController("bystander", reconcile)
	rec := record.NewFakeRecorder(100)
	panicky.RecordPanicsOn(rec, objects)
	panics := func() float64 {
		v, err := testutil.GetCounterMetricValue(reconcilePanicsTotal.WithLabelValues("panicky"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := panics()
	go panicky.Run(ctx, 1)
	go other.Run(ctx, 1)

	panicky.Add("ns/poison")
	eventually := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	eventually("the poison key retried", func() bool { return count("ns/poison") >= 2 })
	started := time.Now()

	// The same worker goes on with the controller's other keys, and other controllers run.
	panicky.Add("ns/a")
	other.Add("ns/b")
	eventually("the other keys reconciled", func() bool { return count("ns/a") == 1 && count("ns/b") == 1 })

	// Backoff, not a spin: the default limiter doubles from 5 ms, a dozen attempts take 10 s.
	time.Sleep(300 * time.Millisecond)
	n := count("ns/poison")
	if n > 12 {
		t.Errorf("the poison key was reconciled %d times in %v: no backoff", n, time.Since(started))
	}
	eventually("every panic counted", func() bool { return panics()-before == float64(count("ns/poison")) })

	got := controllertestRecorded(rec)
	if len(got) == 0 || !strings.HasPrefix(got[0], "Warning ReconcilePanicked The panicky controller failed on this object (runtime error: invalid memory address") {
		t.Errorf("events %q", got)
	}
}

// controllertestRecorded drains rec (pkg/controller/controllertest imports this package).
func controllertestRecorded(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
