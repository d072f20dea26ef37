package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// TestBackgroundCompaction lets the compactor run with a short window and checks that reads
// and watches before the compacted RV get 410 Gone while newer ones keep working.
func TestBackgroundCompaction(t *testing.T) {
	opts := testOptions
	opts.DisableCompaction = false
	opts.CompactionWindow = time.Second
	opts.CompactionInterval = 100 * time.Millisecond
	s := newPodStore(newTestBackend(t, opts))
	ctx := context.Background()

	var rvs []string
	for _, name := range []string{"a", "b", "c"} {
		out := &example.Pod{}
		if err := s.Create(ctx, "/pods/ns/"+name, &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, out, 0); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, out.ResourceVersion)
	}
	// Once the window has passed every change, the compactor moves to the newest one and
	// deletes the log below it.
	var compacted, left int64
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		err := s.b.pool.QueryRow(ctx, `SELECT rv, (SELECT count(*) FROM changes WHERE rv < compaction.rv) FROM compaction`).Scan(&compacted, &left)
		return fmt.Sprint(compacted) == rvs[2] && left == 0, err
	}); err != nil {
		t.Fatalf("compactor did not reach RV %s (at %d, %d rows below): %v", rvs[2], compacted, left, err)
	}

	exact := func(rv string) error {
		return s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, ResourceVersion: rv,
			ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: apistorage.Everything}, &example.PodList{})
	}
	if err := exact(rvs[1]); !apierrors.IsResourceExpired(err) {
		t.Errorf("list at compacted RV %s: got %v, want 410 Expired", rvs[1], err)
	}
	if err := exact(rvs[2]); err != nil {
		t.Errorf("list at the compaction RV %s: %v", rvs[2], err)
	}

	w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: rvs[0], Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if status, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || status.Code != 410 {
			t.Errorf("watch from compacted RV %s: got %+v, want a 410 error", rvs[0], ev)
		}
	case <-time.After(wait30s):
		t.Fatal("no event from a watch at a compacted RV")
	}
}
