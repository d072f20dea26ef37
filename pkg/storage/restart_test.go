package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// TestRestart stops PostgreSQL (immediate shutdown, like a crash) in the middle of a write and
// watch load and starts it again. The server is the test's own: the shared one serves other
// packages' tests running at the same time. Every acknowledged write must survive; the readiness check
// must fail while the server is down; the watcher, which falls behind its queue meanwhile, must
// deliver exactly the committed history and keep going: it must neither skip a change nor end.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	server := pgtest.StartServer(t)
	pool := pgtest.NewPool(t, server.DSN(), 20)
	opts := testOptions
	// A queue far smaller than the writes before the crash, so that the watch falls behind.
	opts.WatchQueue = 16
	b, err := NewBackend(ctx, pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s := newPodStore(b)
	start, err := s.currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: fmt.Sprint(start), Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	relayed := make(chan watch.Event, 1<<16)
	relay := func() {
		defer close(relayed)
		for ev := range w.ResultChan() {
			relayed <- ev
		}
	}

	var (
		mu    sync.Mutex
		acked = map[string]string{} // key -> RV of every Create reported successful
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("w%d-%d", i, n)}}
				out := &example.Pod{}
				opCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := s.Create(opCtx, "/pods/ns/"+pod.Name, pod, out, 0)
				cancel()
				if err == nil {
					mu.Lock()
					acked["/pods/ns/"+pod.Name] = out.ResourceVersion
					mu.Unlock()
				} else {
					time.Sleep(20 * time.Millisecond) // the server is down; do not spin
				}
			}
		}(i)
	}

	time.Sleep(500 * time.Millisecond)
	server.Stop("immediate")
	// Nobody read the watch until now, so it overflowed its queue: reading it now makes it
	// catch up from the log while PostgreSQL is down.
	go relay()
	stopped := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return s.ReadinessCheck() != nil, nil
	}); err != nil {
		t.Errorf("readiness check stayed healthy while PostgreSQL was down")
	}
	time.Sleep(time.Second)
	server.Start()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return s.ReadinessCheck() == nil, nil
	}); err != nil {
		t.Fatalf("readiness check did not recover: %v", s.ReadinessCheck())
	}
	t.Logf("ready again %v after the stop", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	for key, rv := range acked {
		got := &example.Pod{}
		if err := s.Get(ctx, key, apistorage.GetOptions{}, got); err != nil {
			t.Errorf("acknowledged write %s lost: %v", key, err)
		} else if got.ResourceVersion != rv {
			t.Errorf("acknowledged write %s at RV %s reads back at RV %s", key, rv, got.ResourceVersion)
		}
	}
	history := readHistory(t, s.b, start)
	if len(history) == 0 {
		t.Fatal("nothing was written")
	}
	events, ended, err := collect(relayWatch(relayed), history[len(history)-1].rv, wait30s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		if i >= len(history) || events[i] != history[i] {
			t.Fatalf("event %d = %+v does not match the history", i, events[i])
		}
	}
	t.Logf("%d acknowledged creates, %d committed, watcher delivered %d (ended: %v)", len(acked), len(history), len(events), ended)
	if ended || len(events) < len(history) {
		// The log survives the restart, so a watch has no reason to end: it resumes.
		t.Fatalf("the watch ended after %d of %d changes; it must resume after PostgreSQL restarts", len(events), len(history))
	}
	// A watch that survived must keep working.
	out := &example.Pod{}
	if err := s.Create(ctx, "/pods/ns/after", &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "after"}}, out, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-relayed:
		if ev.Type != watch.Added || ev.Object.(*example.Pod).Name != "after" {
			t.Fatalf("unexpected event after the restart: %+v", ev)
		}
	case <-time.After(wait30s):
		t.Fatal("no event after the restart")
	}
}

// relayWatch is a watch.Interface over events relayed from another watch.
type relayWatch chan watch.Event

func (r relayWatch) ResultChan() <-chan watch.Event { return r }
func (relayWatch) Stop()                            {}
