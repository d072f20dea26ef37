package storage

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// TestConsistentGetsReadTheLatestWrite writes pods one after the other, from several writers
// at once, straight to the store (as another replica would: the cache learns of them only
// through its watch, a moment later), and gets each right after its write returned, without a
// resourceVersion: the get must return that write or a later one, never what the cache held
// before, and a pod just deleted must be gone. A get that took the watch cache as it is
// (resourceVersion "0") fails this at once.
func TestConsistentGetsReadTheLatestWrite(t *testing.T) {
	ctx, c := newCacher(t, cacherSetup{})
	const writers, rounds = 4, 60
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- consistentGetRounds(ctx, c, w, rounds)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func consistentGetRounds(ctx context.Context, c cached, w, rounds int) error {
	for i := range rounds {
		key := fmt.Sprintf("/pods/ns/w%d-%d", w, i%5)
		want := &example.Pod{}
		if err := c.store.GuaranteedUpdate(ctx, key, want, true, nil, func(in runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			pod := in.(*example.Pod)
			pod.Name, pod.Namespace = fmt.Sprintf("w%d-%d", w, i%5), "ns"
			pod.Labels = map[string]string{"round": strconv.Itoa(i)}
			return pod, nil, nil
		}, nil); err != nil {
			return err
		}
		got := &example.Pod{}
		if err := c.Get(ctx, key, apistorage.GetOptions{}, got); err != nil {
			return fmt.Errorf("get %s after round %d: %w", key, i, err)
		}
		if got.ResourceVersion != want.ResourceVersion || got.Labels["round"] != strconv.Itoa(i) {
			return fmt.Errorf("get %s after the write of round %d at RV %s returned round %s at RV %s",
				key, i, want.ResourceVersion, got.Labels["round"], got.ResourceVersion)
		}
		if i%7 == 6 {
			if err := c.store.Delete(ctx, key, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
				return err
			}
			err := c.Get(ctx, key, apistorage.GetOptions{}, &example.Pod{})
			if !apistorage.IsNotFound(err) {
				return fmt.Errorf("get %s right after its delete: %v, want not found", key, err)
			}
			if err := c.Get(ctx, key, apistorage.GetOptions{IgnoreNotFound: true}, got); err != nil || got.ResourceVersion != "" {
				return fmt.Errorf("get %s (ignoring not found) right after its delete: %v, RV %q", key, err, got.ResourceVersion)
			}
		}
	}
	return nil
}

// TestConsistentGetsComeFromTheCache checks that a get without a resourceVersion is answered
// with the cache's object once the cache holds the version the database has: two gets return
// the same labels map, the one the cache decoded, where two reads of the store decode two.
// A cluster-scoped object (no namespace in its key) is served the same way.
func TestConsistentGetsComeFromTheCache(t *testing.T) {
	for _, tc := range []struct{ name, key, namespace string }{
		{"namespaced", "/pods/ns/cached", "ns"},
		{"cluster-scoped", "/pods/cached", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			consistentGetFromTheCache(t, cacherSetup{clusterScoped: tc.namespace == ""}, tc.key, tc.namespace)
		})
	}
}

func consistentGetFromTheCache(t *testing.T, setup cacherSetup, key, namespace string) {
	ctx, c := newCacher(t, setup)
	created := &example.Pod{}
	if err := c.store.Create(ctx, key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cached", Namespace: namespace,
		Labels: map[string]string{"a": "b"}}}, created, 0); err != nil {
		t.Fatal(err)
	}
	// Until the cache has the pod.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		err := c.Cacher.Get(ctx, key, apistorage.GetOptions{ResourceVersion: created.ResourceVersion}, &example.Pod{})
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	first, second := &example.Pod{}, &example.Pod{}
	for _, p := range []*example.Pod{first, second} {
		if err := c.Get(ctx, key, apistorage.GetOptions{}, p); err != nil {
			t.Fatal(err)
		}
		if p.ResourceVersion != created.ResourceVersion {
			t.Fatalf("RV %s, want %s", p.ResourceVersion, created.ResourceVersion)
		}
	}
	if reflect.ValueOf(first.Labels).UnsafePointer() != reflect.ValueOf(second.Labels).UnsafePointer() {
		t.Error("two gets decoded two objects: they were not served from the cache")
	}
	fromStore := &example.Pod{}
	if err := c.store.Get(ctx, key, apistorage.GetOptions{}, fromStore); err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(first.Labels).UnsafePointer() == reflect.ValueOf(fromStore.Labels).UnsafePointer() {
		t.Error("the store's get returned the cache's labels: the check above proves nothing")
	}
}

// TestVersionLookupsShareStatements checks that concurrent lookups get each key's own
// version, missing keys included, however they are batched.
func TestVersionLookupsShareStatements(t *testing.T) {
	ctx, s := testSetup(t)
	want := map[string]int64{}
	for i := range 20 {
		out := &example.Pod{}
		key := fmt.Sprintf("/pods/ns/p%d", i)
		if err := s.Create(ctx, key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns"}}, out, 0); err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
		prepared, _ := s.prepareKey(key)
		want[prepared] = rv
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for g := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, _ := s.prepareKey(fmt.Sprintf("/pods/ns/p%d", g%25)) // 20 to 24 do not exist
			got, err := s.b.currentVersion(ctx, key)
			if err != nil || got != want[key] {
				errs <- fmt.Errorf("%s: version %d, %v; want %d", key, got, err, want[key])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
