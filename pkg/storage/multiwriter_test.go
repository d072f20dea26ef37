package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// historyEntry is one committed change as the database records it.
type historyEntry struct {
	rv  int64
	key string
	typ watch.EventType
}

// readHistory returns every change after rv from the log, in RV order.
func readHistory(t *testing.T, b *Backend, after int64) []historyEntry {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT rv, key, created, deleted FROM changes WHERE rv > $1 ORDER BY rv`, after)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []historyEntry
	for rows.Next() {
		var h historyEntry
		var created, deleted bool
		if err := rows.Scan(&h.rv, &h.key, &created, &deleted); err != nil {
			t.Fatal(err)
		}
		switch {
		case created:
			h.typ = watch.Added
		case deleted:
			h.typ = watch.Deleted
		default:
			h.typ = watch.Modified
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// collect reads a watch until it has seen rv, the channel closes or the deadline passes.
// It returns the events and whether the watch ended (closed or errored) by itself.
func collect(w watch.Interface, until int64, timeout time.Duration) (events []historyEntry, ended bool, err error) {
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return events, true, nil
			}
			if ev.Type == watch.Error {
				return events, true, nil
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			obj := ev.Object.(*example.Pod)
			rv, perr := apistorage.APIObjectVersioner{}.ObjectResourceVersion(obj)
			if perr != nil {
				return events, false, perr
			}
			events = append(events, historyEntry{rv: int64(rv), key: "/pods/" + obj.Namespace + "/" + obj.Name, typ: ev.Type})
			if int64(rv) >= until {
				return events, false, nil
			}
		case <-deadline:
			return events, false, fmt.Errorf("timed out waiting for RV %d after %d events", until, len(events))
		}
	}
}

var errTestAbort = errors.New("aborted by the test after the RVs were taken")

// TestMultiWriter runs 16 writers on 3 store instances with separate pools on one database.
// Every write transaction sleeps at random before it takes its RVs and again before COMMIT,
// and one in ten is aborted after it took them. Each instance has a
// watcher. All three streams must equal the committed history read back from the database:
// same order, strictly increasing, no gap, nothing that did not commit.
func TestMultiWriter(t *testing.T) {
	const (
		instances = 3
		writers   = 16
		opsEach   = 25
		keys      = 12
	)
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	var stores []*Store
	for i := 0; i < instances; i++ {
		b, err := NewBackend(ctx, pgtest.NewPool(t, dsn, 8), testOptions)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		b.beforeRV = func() error {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			return nil
		}
		b.afterRV = func() error {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			if rand.IntN(10) == 0 {
				return errTestAbort
			}
			return nil
		}
		stores = append(stores, newPodStore(b))
	}
	start, err := stores[0].currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var watchers []watch.Interface
	for _, s := range stores {
		w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: fmt.Sprint(start), Recursive: true, Predicate: apistorage.Everything})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers = append(watchers, w)
	}

	var (
		mu    sync.Mutex
		acked = map[int64]string{} // RV -> key of every write reported successful
		wg    sync.WaitGroup
	)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := stores[i%instances]
			for op := 0; op < opsEach; op++ {
				name := fmt.Sprintf("p%d", rand.IntN(keys))
				key := "/pods/ns/" + name
				out := &example.Pod{}
				var err error
				switch rand.IntN(3) {
				case 0:
					err = s.Delete(ctx, key, out, nil, apistorage.ValidateAllObjectFunc, nil)
				default:
					err = s.GuaranteedUpdate(ctx, key, out, true, nil, apistorage.SimpleUpdate(func(runtime.Object) (runtime.Object, error) {
						return &example.Pod{
							ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
							Spec:       example.PodSpec{NodeName: fmt.Sprintf("w%d-%d", i, op)},
						}, nil
					}), nil)
				}
				if err == nil {
					rv, _ := apistorage.APIObjectVersioner{}.ObjectResourceVersion(out)
					mu.Lock()
					acked[int64(rv)] = key
					mu.Unlock()
				} else if !apistorage.IsNotFound(err) && !errors.Is(err, errTestAbort) {
					t.Errorf("write %s: %v", key, err)
				}
			}
		}(i)
	}
	wg.Wait()

	history := readHistory(t, stores[0].b, start)
	if len(history) == 0 {
		t.Fatal("no writes committed")
	}
	for i, h := range history {
		if h.rv != start+int64(i)+1 {
			t.Fatalf("history is not gapless at %d: RV %d", i, h.rv)
		}
	}
	inHistory := map[int64]string{}
	for _, h := range history {
		inHistory[h.rv] = h.key
	}
	for rv, key := range acked {
		if inHistory[rv] != key {
			t.Errorf("acknowledged write %s at RV %d is not in the history (found %q)", key, rv, inHistory[rv])
		}
	}
	last := history[len(history)-1].rv
	for i, w := range watchers {
		events, ended, err := collect(w, last, wait30s)
		if err != nil {
			t.Fatalf("watcher %d: %v", i, err)
		}
		if ended {
			t.Fatalf("watcher %d ended early after %d events", i, len(events))
		}
		if len(events) != len(history) {
			t.Fatalf("watcher %d saw %d events, history has %d", i, len(events), len(history))
		}
		for j := range history {
			if events[j] != history[j] {
				t.Fatalf("watcher %d event %d = %+v, history has %+v", i, j, events[j], history[j])
			}
		}
	}
	t.Logf("%d committed writes, %d acknowledged, %d aborted or conflicting", len(history), len(acked), writers*opsEach-len(acked))
}

const wait30s = 30 * time.Second
