package storage

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// The rewind tests restore a PostgreSQL of their own from a base backup taken earlier, under a
// backend whose watches (of the store and of the watch cache, CachedDecorator's) received the
// writes made after the backup. Every one of those watches must end with 410, consistent lists
// through the cache must answer the restored state, and new watches must receive new writes.

// TestRewindBehind leaves the restored database behind the RV the backend has seen. The feed
// is held while the database is restored, so the first to find out is the cache's consistent
// list, whose RV probe reads the lower counter: it must answer the restored state, not the
// cache's, and end every watch.
func TestRewindBehind(t *testing.T) {
	r := newRewindSetup(t)
	release := r.holdFeed(t)
	r.server.RestoreFrom(r.backup)

	names, rv := r.consistentList(t)
	if want := r.before; fmt.Sprint(names) != fmt.Sprint(want) || rv != r.backupRV {
		t.Errorf("consistent list through the cache after the restore: %v at RV %d, want the restored %v at RV %d", names, rv, want, r.backupRV)
	}
	r.expectGone(t)
	release()
	r.expectNewWritesWatched(t, r.before)
}

// TestRewindWrittenPast restores the database and, while the backend's feed is held, writes
// through another backend (another replica) past the RV the feed had dispatched: the counter
// no longer tells, the change the feed dispatched at its RV is another one now.
func TestRewindWrittenPast(t *testing.T) {
	ctx := context.Background()
	r := newRewindSetup(t)
	release := r.holdFeed(t)
	r.server.RestoreFrom(r.backup)

	other, err := NewBackend(ctx, pgtest.NewPool(t, r.server.DSN(), 4), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	s := newPodStore(other)
	want := append([]string{}, r.before...)
	var last int64
	for i := 0; i < len(r.lost)+2; i++ {
		last = create(t, s, fmt.Sprintf("new-%d", i))
		want = append(want, fmt.Sprintf("new-%d", i))
	}
	other.Close()
	if last <= r.lostRV {
		t.Fatalf("the writes after the restore reached RV %d, not past the lost %d", last, r.lostRV)
	}
	release()

	r.expectGone(t)
	names, rv := r.consistentList(t)
	sort.Strings(want)
	if fmt.Sprint(names) != fmt.Sprint(want) || rv != last {
		t.Errorf("consistent list through the cache after the restore: %v at RV %d, want %v at RV %d", names, rv, want, last)
	}
	r.expectNewWritesWatched(t, want)
}

type rewindSetup struct {
	server *pgtest.Server
	b      *Backend
	raw    *Store
	cached *labelIndexedCache
	// backup was taken at backupRV, after the objects named before were written; the writes
	// of lost came after it, up to lostRV.
	backup           string
	backupRV, lostRV int64
	before, lost     []string
	// watches were open while lost was written, and delivered it.
	watches map[string]watch.Interface
}

func newRewindSetup(t *testing.T) *rewindSetup {
	ctx := context.Background()
	r := &rewindSetup{server: pgtest.StartServer(t), watches: map[string]watch.Interface{}}
	var err error
	if r.b, err = NewBackend(ctx, pgtest.NewPool(t, r.server.DSN(), 10), testOptions); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.b.Close)
	r.raw = newPodStore(r.b)
	r.cached = cachedPodStore(t, r.b)

	for i := 0; i < 5; i++ {
		r.before = append(r.before, fmt.Sprintf("before-%d", i))
		r.backupRV = create(t, r.raw, r.before[i])
	}
	r.backup = r.server.BaseBackup()
	if names, rv := r.consistentList(t); fmt.Sprint(names) != fmt.Sprint(r.before) || rv != r.backupRV {
		t.Fatalf("consistent list before the restore: %v at RV %d, want %v at RV %d", names, rv, r.before, r.backupRV)
	}
	from := apistorage.ListOptions{ResourceVersion: fmt.Sprint(r.backupRV), Recursive: true, Predicate: apistorage.Everything}
	for name, s := range map[string]apistorage.Interface{"store": r.raw, "cache": r.cached} {
		if r.watches[name], err = s.Watch(ctx, "/pods", from); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.watches[name].Stop)
	}
	// From the cache's state, with initial events.
	if r.watches["cache from 0"], err = r.cached.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: apistorage.Everything}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.watches["cache from 0"].Stop)
	expectAddedOf(t, r.watches["cache from 0"], r.before...)

	for i := 0; i < 4; i++ {
		r.lost = append(r.lost, fmt.Sprintf("lost-%d", i))
		r.lostRV = create(t, r.raw, r.lost[i])
	}
	for _, w := range r.watches {
		expectAddedOf(t, w, r.lost...)
	}
	if names, rv := r.consistentList(t); len(names) != len(r.before)+len(r.lost) || rv != r.lostRV {
		t.Fatalf("consistent list before the restore: %v at RV %d, want %d objects at RV %d", names, rv, len(r.before)+len(r.lost), r.lostRV)
	}
	return r
}

// cachedPodStore builds a pod store with CachedDecorator, as the apiserver's registry does.
func cachedPodStore(t *testing.T, b *Backend) *labelIndexedCache {
	t.Helper()
	config := &storagebackend.ConfigForResource{
		Config:        storagebackend.Config{Codec: codec, Transformer: storagetesting.NewPrefixTransformer([]byte(testPrefix), false)},
		GroupResource: schema.GroupResource{Resource: "pods"},
	}
	keyFunc := func(obj runtime.Object) (string, error) { return apistorage.NamespaceKeyFunc("/pods", obj) }
	s, destroy, err := b.CachedDecorator()(config, "/pods", keyFunc, newPod, newPodList, podAttrs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destroy)
	c := s.(*labelIndexedCache)
	if err := c.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// holdFeed keeps the backend's feed from reading the change log, by holding the only
// connection of its pool, until the function returned is called.
func (r *rewindSetup) holdFeed(t *testing.T) func() {
	t.Helper()
	conn, err := r.b.feedPool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(conn.Release) }
	t.Cleanup(release)
	return release
}

// consistentList lists every pod through the cache at resourceVersion "" and returns their
// names, sorted, and the list's RV. A request may fail while the pool replaces the
// connections of the server that went away.
func (r *rewindSetup) consistentList(t *testing.T) ([]string, int64) {
	t.Helper()
	var list *example.PodList
	err := eventually(func() error {
		list = &example.PodList{}
		return r.cached.GetList(context.Background(), "/pods", apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, list)
	})
	if err != nil {
		t.Fatalf("consistent list: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	var rv int64
	fmt.Sscan(list.ResourceVersion, &rv)
	return names, rv
}

// expectGone requires every watch open across the restore to end with 410 next, and nothing
// else first.
func (r *rewindSetup) expectGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(wait30s)
	for name, w := range r.watches {
		select {
		case ev, ok := <-w.ResultChan():
			status, isStatus := ev.Object.(*metav1.Status)
			switch {
			case !ok:
				t.Errorf("watch of the %s ended without an error", name)
			case ev.Type != watch.Error || !isStatus:
				t.Errorf("watch of the %s delivered %s %s after the restore, want a 410 error", name, ev.Type, describe(ev.Object))
			case status.Code != http.StatusGone:
				t.Errorf("watch of the %s ended with %d %s, want 410", name, status.Code, status.Message)
			default:
				t.Logf("watch of the %s: %d %s", name, status.Code, status.Message)
				if _, open := <-w.ResultChan(); open {
					t.Errorf("watch of the %s went on after its 410", name)
				}
			}
		case <-time.After(time.Until(deadline)):
			t.Errorf("watch of the %s neither ended nor delivered anything after the restore", name)
		}
	}
}

// expectNewWritesWatched requires new watches from the RV of a consistent list, of the store
// and of the cache, to receive a write made after the restore, and the watch cache to have
// listed again: the cacher's own consistent list, which the cache answers once it holds the
// RV that the database reports, must be the restored objects (names) and the new one.
func (r *rewindSetup) expectNewWritesWatched(t *testing.T, names []string) {
	t.Helper()
	ctx := context.Background()
	_, rv := r.consistentList(t)
	from := apistorage.ListOptions{ResourceVersion: fmt.Sprint(rv), Recursive: true, Predicate: apistorage.Everything}
	var watches []watch.Interface
	for _, s := range []apistorage.Interface{r.raw, r.cached} {
		w, err := s.Watch(ctx, "/pods", from)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	create(t, r.raw, "after")
	for _, w := range watches {
		expectAddedOf(t, w, "after")
	}
	list := &example.PodList{}
	if err := eventually(func() error {
		return r.cached.Cacher.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, list)
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Items {
		got = append(got, p.Name)
	}
	sort.Strings(got)
	want := append(append([]string{}, names...), "after")
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the watch cache lists %v at RV %s, want %v", got, list.ResourceVersion, want)
	}
}

// create creates a pod and returns its RV, retrying while the database is restarting. A
// create that failed there was not applied, or a retry finds it.
func create(t *testing.T, s *Store, name string) int64 {
	t.Helper()
	ctx := context.Background()
	key, out := "/pods/ns/"+name, &example.Pod{}
	err := eventually(func() error {
		err := s.Create(ctx, key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, out, 0)
		if apistorage.IsExist(err) {
			return s.Get(ctx, key, apistorage.GetOptions{}, out)
		}
		return err
	})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	var rv int64
	fmt.Sscan(out.ResourceVersion, &rv)
	return rv
}

// eventually retries f for 30 s while it fails as requests do while the database restarts
// (503) or the watch cache lists again (429).
func eventually(f func() error) error {
	var err error
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, wait30s, true, func(context.Context) (bool, error) {
		err = f()
		return !apierrors.IsServiceUnavailable(err) && !apierrors.IsTooManyRequests(err), nil
	})
	return err
}

// expectAddedOf requires the next events of w to be the Added events of names, in any order
// (the cache's initial events come in no particular order).
func expectAddedOf(t *testing.T, w watch.Interface, names ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, name := range names {
		want[name] = true
	}
	for len(want) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended, want Added for %v", want)
			}
			if pod, isPod := unwrap(ev.Object).(*example.Pod); ev.Type != watch.Added || !isPod || !want[pod.Name] {
				t.Fatalf("got %s %s, want Added for one of %v", ev.Type, describe(ev.Object), want)
			} else {
				delete(want, pod.Name)
			}
		case <-time.After(wait30s):
			t.Fatalf("no event, want Added for %v", want)
		}
	}
}

// unwrap returns the object of the watch cache's wrapper for objects it sends.
func unwrap(obj runtime.Object) runtime.Object {
	if c, ok := obj.(runtime.CacheableObject); ok {
		return c.GetObject()
	}
	return obj
}

func describe(obj runtime.Object) string {
	switch o := unwrap(obj).(type) {
	case *example.Pod:
		return o.Name + " at RV " + o.ResourceVersion
	case *metav1.Status:
		return fmt.Sprintf("%d %s", o.Code, o.Message)
	}
	return fmt.Sprintf("%T", obj)
}

// TestRewindConsistentGet restores the database and, while the backend's feed is held,
// another replica creates the first lost object again, at the very RV it had in the lost
// history (and with other labels), then writes past the lost RVs. The cache still holds the
// lost object, at the RV the database now gives the new one: a consistent get that trusted an
// equal RV would answer the lost object. It must answer the new one, and end every watch, as
// the feed would on its next read: the get's statement is the first to find the rewind.
func TestRewindConsistentGet(t *testing.T) {
	ctx := context.Background()
	r := newRewindSetup(t)
	name := r.lost[0]
	key := "/pods/ns/" + name
	if err := r.cached.Cacher.Get(ctx, key, apistorage.GetOptions{ResourceVersion: fmt.Sprint(r.lostRV)}, &example.Pod{}); err != nil {
		t.Fatalf("the cache does not hold %s: %v", name, err)
	}
	release := r.holdFeed(t)
	r.server.RestoreFrom(r.backup)

	other, err := NewBackend(ctx, pgtest.NewPool(t, r.server.DSN(), 4), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	s := newPodStore(other)
	again := &example.Pod{}
	if err := eventually(func() error {
		return s.Create(ctx, key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{"history": "new"}}}, again, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != fmt.Sprint(r.backupRV+1) {
		t.Fatalf("%s created again at RV %s, want the RV it had in the lost history, %d", name, again.ResourceVersion, r.backupRV+1)
	}
	cached := &example.Pod{}
	if err := r.cached.Cacher.Get(ctx, key, apistorage.GetOptions{ResourceVersion: "0"}, cached); err != nil || cached.ResourceVersion != again.ResourceVersion {
		t.Fatalf("the cache holds %s at RV %s (%v), want the lost object at RV %s", name, cached.ResourceVersion, err, again.ResourceVersion)
	}
	for i := 0; i < len(r.lost)+2; i++ {
		if last := create(t, s, fmt.Sprintf("new-%d", i)); i == len(r.lost)+1 && last <= r.lostRV {
			t.Fatalf("the writes after the restore reached RV %d, not past the lost %d", last, r.lostRV)
		}
	}
	other.Close()

	got := &example.Pod{}
	if err := r.cached.Get(ctx, key, apistorage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != again.ResourceVersion || got.Labels["history"] != "new" {
		t.Errorf("consistent get of %s after the restore: RV %s, labels %v; want the object created again at RV %s with history=new",
			name, got.ResourceVersion, got.Labels, again.ResourceVersion)
	}
	release()
	r.expectGone(t)
}
