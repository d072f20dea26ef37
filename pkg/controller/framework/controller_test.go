package framework

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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
