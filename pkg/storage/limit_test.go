package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

func withLimit(ctx context.Context, limit int64) context.Context {
	return WithCountLimit(ctx, func(context.Context, runtime.Object) (int64, error) { return limit, nil })
}

// GuaranteedUpdate of a missing key (server-side apply) creates: the limit holds there too,
// evaluated on the object it creates.
func TestCountLimitHoldsForCreateThroughUpdate(t *testing.T) {
	s := newPodStore(newTestBackend(t, testOptions))
	ctx := WithCountLimit(context.Background(), func(_ context.Context, obj runtime.Object) (int64, error) {
		if obj.(*example.Pod).Spec.NodeName == "unlimited" {
			return 0, nil
		}
		return 1, nil
	})
	applyNew := func(name, node string) error {
		return s.GuaranteedUpdate(ctx, "/pods/a/"+name, &example.Pod{}, true, nil,
			func(runtime.Object, apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
				return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}, Spec: example.PodSpec{NodeName: node}}, nil, nil
			}, nil)
	}
	if err := applyNew("first", ""); err != nil {
		t.Fatal(err)
	}
	var exceeded *CountLimitError
	if err := applyNew("second", ""); !errors.As(err, &exceeded) || exceeded.Limit != 1 {
		t.Fatalf("a second object through GuaranteedUpdate: %v, want the limit of 1", err)
	}
	if err := applyNew("third", "unlimited"); err != nil {
		t.Errorf("an object whose limit is 0 is not limited: %v", err)
	}
	// Updating an existing object is no creation.
	if err := applyNew("first", "changed"); err != nil {
		t.Errorf("updating an object of a full namespace: %v", err)
	}
}

// Racing creates under a count limit, on two backends sharing one database (two replicas),
// fill exactly the limit: none passes the last place, and every loser is told the limit.
func TestCountLimitHoldsForRacingCreatesOnTwoReplicas(t *testing.T) {
	const limit, racers = 5, 24
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	var stores []*Store
	for i := 0; i < 2; i++ {
		b, err := NewBackend(ctx, pgtest.NewPool(t, dsn, 8), testOptions)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		stores = append(stores, newPodStore(b))
	}
	create := func(s *Store, ns, name string, limit int64) error {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		return s.Create(withLimit(ctx, limit), "/pods/"+ns+"/"+name, pod, &example.Pod{}, 0)
	}

	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = create(stores[i%2], "a", fmt.Sprintf("p%02d", i), limit)
		}(i)
	}
	wg.Wait()
	created := 0
	for i, err := range errs {
		var exceeded *CountLimitError
		switch {
		case err == nil:
			created++
		case !errors.As(err, &exceeded) || exceeded.Limit != limit:
			t.Errorf("p%02d: want a *CountLimitError of %d, got %v", i, limit, err)
		}
	}
	if created != limit {
		t.Fatalf("%d racing creates succeeded under a limit of %d", created, limit)
	}
	count := func(ns string) int64 {
		t.Helper()
		var list example.PodList
		if err := stores[0].GetList(ctx, "/pods/"+ns, apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, &list); err != nil {
			t.Fatal(err)
		}
		return int64(len(list.Items))
	}
	if n := count("a"); n != limit {
		t.Fatalf("namespace a holds %d objects, want %d", n, limit)
	}

	// Another namespace, and a namespace whose name extends this one's, count apart.
	if err := create(stores[1], "b", "p00", limit); err != nil {
		t.Errorf("another namespace: %v", err)
	}
	if err := create(stores[1], "a0", "p00", 1); err != nil {
		t.Errorf("namespace a0: %v", err)
	}
	// A create without a limit is not counted against.
	if err := stores[0].Create(ctx, "/pods/a/unlimited", &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "unlimited"}}, nil, 0); err != nil {
		t.Errorf("a create without a limit: %v", err)
	}
	// A taken name is still reported as such, not as the limit.
	if err := create(stores[0], "a", "p-taken", 100); err != nil {
		t.Fatal(err)
	}
	if err := create(stores[0], "a", "p-taken", 100); !apistorage.IsExist(err) {
		t.Errorf("a taken name: got %v, want it exists", err)
	}
	// Deleting frees a place.
	var errLimit *CountLimitError
	if err := create(stores[0], "a", "late", count("a")); !errors.As(err, &errLimit) {
		t.Fatalf("a full namespace: got %v", err)
	}
	if err := stores[1].Delete(ctx, "/pods/a/unlimited", &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		t.Fatal(err)
	}
	if err := create(stores[0], "a", "late", count("a")+1); err != nil {
		t.Errorf("after a delete: %v", err)
	}
}

// Within one backend, creates queued together land in one batch: the rule of one limited
// create per namespace in a batch keeps the last place from being taken twice, and a batch
// that a refused create rolls back still commits the others.
func TestCountLimitInOneBatch(t *testing.T) {
	b := newTestBackend(t, testOptions)
	s := newPodStore(b)
	ctx := context.Background()
	const racers = 16
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ns := "x"
			if i%2 == 1 {
				ns = fmt.Sprintf("free-%d", i)
			}
			pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%02d", i)}}
			errs[i] = s.Create(withLimit(ctx, 1), "/pods/"+ns+"/"+pod.Name, pod, nil, 0)
		}(i)
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		var exceeded *CountLimitError
		switch {
		case i%2 == 1 && err != nil:
			t.Errorf("p%02d, alone in its namespace: %v", i, err)
		case i%2 == 0 && err == nil:
			won++
		case i%2 == 0 && !errors.As(err, &exceeded):
			t.Errorf("p%02d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates took the one place of namespace x", won)
	}
}
