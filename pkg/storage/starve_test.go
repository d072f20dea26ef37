package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// starveBound is how long a write or a watch event may take while requests hold every pooled
// connection: far more than either needs on a loaded machine, far less than the batch timeout.
const starveBound = 10 * time.Second

// TestSaturatedRequestPoolStillCommitsAndFeeds holds every connection of the pool that
// requests use, as a burst of slow lists would. A write must still commit and a watch must
// still receive its event: the committer and the feed have connections of their own.
func TestSaturatedRequestPoolStillCommitsAndFeeds(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend(t, testOptions)
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
	// An event before the pool is taken shows the watch is past its catch-up from the log,
	// which reads on the request pool.
	createWithin(t, s, "before")
	expectAdded(t, w, "before")

	holdEveryConnection(t, b.pool)
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := s.Get(rctx, "/pods/ns/before", apistorage.GetOptions{}, &example.Pod{}); err == nil {
		t.Fatal("a read got a connection: the request pool is not saturated")
	}

	createWithin(t, s, "while-saturated")
	expectAdded(t, w, "while-saturated")
}

// holdEveryConnection acquires all of pool's connections until the test ends.
func holdEveryConnection(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), starveBound)
	defer cancel()
	for i := int32(0); i < pool.Config().MaxConns; i++ {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("acquiring connection %d of %d: %v", i+1, pool.Config().MaxConns, err)
		}
		t.Cleanup(c.Release)
	}
}

func createWithin(t *testing.T, s *Store, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), starveBound)
	defer cancel()
	started := time.Now()
	if err := s.Create(ctx, "/pods/ns/"+name, stallPod(name), nil, 0); err != nil {
		t.Fatalf("creating %s failed after %s: %v", name, time.Since(started).Round(time.Millisecond), err)
	}
}

func expectAdded(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed before the event of %s", name)
		}
		pod, isPod := ev.Object.(*example.Pod)
		if ev.Type != watch.Added || !isPod || pod.Name != name {
			t.Fatalf("got %s %#v, want ADDED %s", ev.Type, ev.Object, name)
		}
	case <-time.After(starveBound):
		t.Fatalf("no event for %s within %s", name, starveBound)
	}
}

// TestReadinessFailsWhileTheFeedCannotReadTheLog makes the feed's read of the change log hang
// for real: another session holds the log in ACCESS EXCLUSIVE mode. While it does, no watch of
// the process gets anything, so ReadinessCheck must fail within the configured bound, and pass
// again once the lock is gone. Once the read hangs without end (only the staleness bound can
// tell), once it times out (the poll timeout reports it).
func TestReadinessFailsWhileTheFeedCannotReadTheLog(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pollTimeout time.Duration
		staleAfter  time.Duration
		want        string
	}{
		{name: "hanging read", pollTimeout: time.Minute, staleAfter: time.Second, want: "has not completed a read of the change log"},
		{name: "read timeout", pollTimeout: time.Second, staleAfter: time.Minute, want: "reading the change log took longer than 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions
			opts.FeedPollTimeout, opts.FeedStaleAfter = tc.pollTimeout, tc.staleAfter
			// Longer than the test waits: the lock wait itself must not end the read.
			opts.LockTimeout = 25 * time.Second
			b := newTestBackend(t, opts)
			ctx := context.Background()
			if err := waitReadiness(b, true, starveBound); err != nil {
				t.Fatal(err)
			}

			tx, err := b.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `LOCK TABLE changes IN ACCESS EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			locked := time.Now()
			var holder int32
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder); err != nil {
				t.Fatal(err)
			}
			// The fault is in place: the feed's read waits for this lock. Asked outside the
			// transaction, which would keep seeing its first snapshot of pg_stat_activity.
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, starveBound, true, func(ctx context.Context) (bool, error) {
				var blocked int
				err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`, holder).Scan(&blocked)
				return blocked > 0, err
			}); err != nil {
				t.Fatalf("the feed's read did not block on the locked change log: %v", err)
			}

			bound := min(tc.pollTimeout, tc.staleAfter) + 5*time.Second
			if err := waitReadiness(b, false, bound); err != nil {
				t.Fatalf("readiness stayed green for %s with the feed's read of the log blocked: %v", time.Since(locked).Round(time.Millisecond), err)
			}
			if err := b.ReadinessCheck(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadinessCheck() = %v, want an error saying %q", err, tc.want)
			}
			t.Logf("red %s after the lock: %v", time.Since(locked).Round(time.Millisecond), b.ReadinessCheck())

			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := waitReadiness(b, true, starveBound); err != nil {
				t.Fatalf("readiness did not recover once the change log was free: %v", err)
			}
		})
	}
}

// waitReadiness waits until ReadinessCheck passes (ready) or fails (!ready).
func waitReadiness(b *Backend, ready bool, within time.Duration) error {
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, within, true, func(context.Context) (bool, error) {
		return (b.ReadinessCheck() == nil) == ready, nil
	})
}

// TestSaturatedRequestPoolStillAnswersALostCreate creates a key that exists while requests
// hold every pooled connection. The committer learns why the create inserted nothing on its
// own connection; on the request pool it would wait for a free one, and every write queued
// behind it with it.
func TestSaturatedRequestPoolStillAnswersALostCreate(t *testing.T) {
	b := newTestBackend(t, testOptions)
	s := newPodStore(b)
	createWithin(t, s, "taken")
	holdEveryConnection(t, b.pool)

	ctx, cancel := context.WithTimeout(context.Background(), starveBound)
	defer cancel()
	started := time.Now()
	err := s.Create(ctx, "/pods/ns/taken", stallPod("taken"), nil, 0)
	if !apistorage.IsExist(err) {
		t.Fatalf("creating an existing key while the request pool is saturated: got %v after %s, want a key-exists error",
			err, time.Since(started).Round(time.Millisecond))
	}
	createWithin(t, s, "after")
}
