package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

type heldBy string

func (h heldBy) Error() string { return "held by " + string(h) }

// Of racing creates that claim one unique key in a namespace exactly one wins, the others
// learn who holds it, other namespaces are unaffected, and deleting the holder frees the key.
func TestUniqueIndexOneOfRacingCreatesWins(t *testing.T) {
	b := newTestBackend(t, testOptions)
	pods := schema.GroupResource{Resource: "pods"}
	b.SetUniqueIndex(pods, UniqueIndex{
		Key:      func(obj runtime.Object) string { return obj.(*example.Pod).Spec.NodeName },
		Conflict: func(_ runtime.Object, holder string) error { return heldBy(holder) },
	})
	s := newPodStore(b)
	ctx := context.Background()
	create := func(ns, name, node string) error {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: example.PodSpec{NodeName: node}}
		return s.Create(ctx, "/pods/"+ns+"/"+name, pod, &example.Pod{}, 0)
	}

	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = create("a", fmt.Sprintf("p%d", i), "node-1")
		}(i)
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		var held heldBy
		switch {
		case err == nil && winner == "":
			winner = fmt.Sprintf("p%d", i)
		case err == nil:
			t.Errorf("p%d and %s both created with the same unique key", i, winner)
		case !errors.As(err, &held):
			t.Errorf("p%d: want the index's conflict error, got %v", i, err)
		}
	}
	if winner == "" {
		t.Fatal("no create won")
	}
	for i, err := range errs {
		var held heldBy
		if errors.As(err, &held) && string(held) != winner {
			t.Errorf("p%d: told the key is held by %q, it is held by %q", i, held, winner)
		}
	}

	if err := create("b", "p0", "node-1"); err != nil {
		t.Errorf("same key in another namespace: %v", err)
	}
	if err := create("a", "other-node", "node-2"); err != nil {
		t.Errorf("another key: %v", err)
	}
	if err := create("a", "no-key", ""); err != nil {
		t.Errorf("an object claiming no key: %v", err)
	}
	if err := create("a", winner, "node-3"); !apistorage.IsExist(err) {
		t.Errorf("a taken name must still report the name, not the key: got %v", err)
	}

	if err := s.Delete(ctx, "/pods/a/"+winner, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		t.Fatal(err)
	}
	if err := create("a", "successor", "node-1"); err != nil {
		t.Errorf("the key is free once its holder is deleted: %v", err)
	}
}

// GuaranteedUpdate of a key that does not exist creates the object (server-side apply and
// update of a new object take that path): it must claim the unique key as Create does.
func TestUniqueIndexHoldsForCreateThroughUpdate(t *testing.T) {
	b := newTestBackend(t, testOptions)
	b.SetUniqueIndex(schema.GroupResource{Resource: "pods"}, UniqueIndex{
		Key:      func(obj runtime.Object) string { return obj.(*example.Pod).Spec.NodeName },
		Conflict: func(_ runtime.Object, holder string) error { return heldBy(holder) },
	})
	s := newPodStore(b)
	ctx := context.Background()
	applyNew := func(name, node string) error {
		return s.GuaranteedUpdate(ctx, "/pods/a/"+name, &example.Pod{}, true, nil,
			func(runtime.Object, apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
				return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}, Spec: example.PodSpec{NodeName: node}}, nil, nil
			}, nil)
	}
	if err := applyNew("first", "node-1"); err != nil {
		t.Fatal(err)
	}
	var held heldBy
	if err := applyNew("second", "node-1"); !errors.As(err, &held) || string(held) != "first" {
		t.Fatalf("a second object with the same unique key through GuaranteedUpdate: %v, want held by first", err)
	}
	if err := s.Create(ctx, "/pods/a/third", &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "third"},
		Spec: example.PodSpec{NodeName: "node-2"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := applyNew("fourth", "node-2"); !errors.As(err, &held) || string(held) != "third" {
		t.Fatalf("a key claimed by Create, then through GuaranteedUpdate: %v, want held by third", err)
	}
	if err := applyNew("fifth", "node-3"); err != nil {
		t.Errorf("a free key through GuaranteedUpdate: %v", err)
	}
}

// Objects stored before migration 000002 have no unique key: a store of a resource with an
// index gives them theirs when it starts, oldest first, so that a new create with the same key
// is refused; of two old objects sharing a key, the older keeps it.
func TestUniqueKeysFilledForObjectsStoredBeforeTheIndex(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend(t, testOptions)
	before := newPodStore(b) // no index yet: unique_key stays NULL, as before migration 000002
	for _, p := range []struct{ name, node string }{{"old", "node-1"}, {"older-twin", "node-2"}, {"younger-twin", "node-2"}, {"none", ""}} {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: p.name}, Spec: example.PodSpec{NodeName: p.node}}
		if err := before.Create(ctx, "/pods/a/"+p.name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	b.SetUniqueIndex(schema.GroupResource{Resource: "pods"}, UniqueIndex{
		Key:      func(obj runtime.Object) string { return obj.(*example.Pod).Spec.NodeName },
		Conflict: func(_ runtime.Object, holder string) error { return heldBy(holder) },
	})
	s := newPodStore(b)
	create := func(name, node string) error {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}, Spec: example.PodSpec{NodeName: node}}
		return s.Create(ctx, "/pods/a/"+name, pod, nil, 0)
	}
	var held heldBy
	if err := create("new", "node-1"); !errors.As(err, &held) || string(held) != "old" {
		t.Errorf("a new object with the key of one stored before the index: %v, want held by old", err)
	}
	if err := create("new-2", "node-2"); !errors.As(err, &held) || string(held) != "older-twin" {
		t.Errorf("a new object with the key two stored before the index share: %v, want held by older-twin", err)
	}
	if err := create("new-3", "node-3"); err != nil {
		t.Errorf("a free key: %v", err)
	}
}
