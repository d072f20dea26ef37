package storage

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// Every write transaction reaches the commit observer with its duration and result.
func TestCommitObserverSeesEachTransaction(t *testing.T) {
	b := newTestBackend(t, testOptions)
	s := newPodStore(b)
	ctx := context.Background()
	var mu sync.Mutex
	var results []string
	b.SetCommitObserver(func(d time.Duration, result string) {
		if d <= 0 {
			t.Errorf("transaction of %s took %s", result, d)
		}
		mu.Lock()
		defer mu.Unlock()
		results = append(results, result)
	})
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(results)
	}
	create := func(name string) error {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		return s.Create(ctx, "/pods/ns/"+name, pod, &example.Pod{}, 0)
	}

	if err := create("a"); err != nil {
		t.Fatal(err)
	}
	if got := seen(); !slices.Equal(got, []string{CommitCommitted}) {
		t.Fatalf("after one create the observer saw %v", got)
	}
	failure := errors.New("injected")
	b.afterRV = func() error { return failure }
	if err := create("b"); err == nil {
		t.Fatal("a create whose transaction failed succeeded")
	}
	b.afterRV = nil
	if got := seen(); !slices.Equal(got, []string{CommitCommitted, CommitFailed}) {
		t.Fatalf("after a failed transaction the observer saw %v", got)
	}
}

// A database without streaming standbys reports every sync state, at zero.
func TestStandbysWithoutReplication(t *testing.T) {
	b := newTestBackend(t, testOptions)
	got, err := b.Standbys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, slices.Sorted(slices.Values(StandbySyncStates))) {
		t.Errorf("states %v, want %v", keys, StandbySyncStates)
	}
	for state, n := range got {
		if n != 0 {
			t.Errorf("%d standbys in state %s on a server without replication", n, state)
		}
	}
}

// A synchronous standby counts as "sync" for a role that may read the replication details,
// and as "unknown" for one that may not.
func TestStandbysOfAPrimary(t *testing.T) {
	pair := pgtest.StartPair(t, pgtest.Synchronous)
	ctx := context.Background()
	count := func(dsn string) map[string]int {
		t.Helper()
		b, err := NewBackend(ctx, pgtest.NewPool(t, dsn, 2), testOptions)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		got, err := b.Standbys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := count(pair.Primary.DSN()); got["sync"] != 1 || got["unknown"] != 0 {
		t.Errorf("as superuser: %v, want one sync standby", got)
	}

	admin := pgtest.NewPool(t, pair.Primary.DSN(), 1)
	for _, stmt := range []string{`CREATE ROLE plain LOGIN`, `CREATE DATABASE plain OWNER plain`} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	dsn := strings.Replace(strings.Replace(pair.Primary.DSN(), "postgres@", "plain@", 1), "/postgres?", "/plain?", 1)
	if got := count(dsn); got["sync"] != 0 || got["unknown"] != 1 {
		t.Errorf("as a role without pg_read_all_stats: %v, want one standby of unknown state", got)
	}
}

// A change the feed has not dispatched shows in FeedLag (resourceVersions) and FeedDelay (its
// age); neither counts once the feed has read it.
func TestFeedLagAndDelay(t *testing.T) {
	opts := testOptions
	// The feed reads the change log only when woken: the change below is written without a
	// notification, so it waits until Poll (or a write of this backend) wakes the feed. The
	// progress ticker wakes it too (the loop reads the log after every wake-up): at the test
	// options' 1 s, a tick between the write and the lag's reading let the feed dispatch the
	// change first, once in a loaded `make test`.
	opts.PollInterval, opts.FeedStaleAfter, opts.ProgressNotifyInterval = time.Hour, 2*time.Hour, time.Hour
	b := newTestBackend(t, opts)
	ctx := context.Background()
	if lag, err := b.FeedLag(ctx); err != nil || lag != 0 {
		t.Fatalf("lag of an idle feed: %d, %v", lag, err)
	}
	if delay, err := b.FeedDelay(ctx); err != nil || delay != 0 {
		t.Fatalf("delay of an idle feed: %s, %v", delay, err)
	}
	// The feed's listener wakes it once its LISTEN is in place, which may come after the write
	// below: then the feed reads the change at once. Nothing else wakes it afterwards, so a
	// second change written after that stays unread.
	for attempt := 1; ; attempt++ {
		if _, err := b.pool.Exec(ctx, `WITH bumped AS (UPDATE state SET rv = rv + 1 RETURNING rv)
		INSERT INTO changes (rv, key, created, deleted, committed_at) SELECT rv, '/pods/ns/late', true, true, now() - interval '10 seconds' FROM bumped`); err != nil {
			t.Fatal(err)
		}
		lag, err := b.FeedLag(ctx)
		if err == nil && lag == 0 && attempt < 3 {
			t.Logf("attempt %d: the feed, woken by its start-up, read the change already", attempt)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if err != nil || lag != 1 {
			t.Fatalf("lag with one change not dispatched: %d, %v", lag, err)
		}
		break
	}
	if delay, err := b.FeedDelay(ctx); err != nil || delay < 10*time.Second || delay > time.Minute {
		t.Errorf("delay of a change written 10 s ago: %s, %v", delay, err)
	}
	b.feed.wake()
	deadline := time.Now().Add(10 * time.Second)
	for {
		delay, err := b.FeedDelay(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if delay == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed has read the change, yet the delay is %s", delay)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
