package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	apistorage "k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

var auditResource = schema.GroupResource{Resource: "auditpods"}

// testEntry records a write as a Pod named after its RV, with the write in its labels.
func testEntry(w AuditedWrite) (runtime.Object, error) {
	username := ""
	if w.User != nil {
		username = w.User.GetName()
	}
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: w.Namespace,
		Name:      fmt.Sprintf("%020d", w.RV),
		Labels: map[string]string{
			"verb": w.Verb, "subresource": w.Subresource, "user": username, "resource": w.Resource.Resource,
			"name": w.Name, "rv": strconv.FormatInt(w.RV, 10),
		},
	}}, nil
}

// auditSetup returns a pod store whose writes are audited into the returned audit store.
func auditSetup(t *testing.T, retention time.Duration) (*Backend, *Store, *Store) {
	b := newTestBackend(t, testOptions)
	b.SetAuditTrail(AuditTrail{
		Resource:  auditResource,
		Audited:   func(gr schema.GroupResource) bool { return gr.Resource == "pods" },
		Entry:     testEntry,
		Retention: retention,
	})
	audit := b.NewStore(codec, newPod, newPodList, "", "/auditpods", auditResource,
		storagetesting.NewPrefixTransformer([]byte(testPrefix), false))
	return b, newPodStore(b), audit
}

func asUser(ctx context.Context, name, verb, subresource string) context.Context {
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: []string{"tenants"}})
	return request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: verb, Resource: "pods",
		Subresource: subresource, Namespace: "ns", Name: "p"})
}

// entries lists the audit store's entries by their write's RV.
func entries(t *testing.T, audit *Store) map[string]map[string]string {
	t.Helper()
	list := &example.PodList{}
	if err := audit.GetList(context.Background(), "/auditpods", apistorage.ListOptions{Predicate: apistorage.Everything, Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, p := range list.Items {
		if p.Name != fmt.Sprintf("%020s", p.Labels["rv"]) {
			t.Errorf("entry %s describes the write at RV %s", p.Name, p.Labels["rv"])
		}
		got[p.Labels["rv"]] = p.Labels
	}
	return got
}

func TestAuditTrailRecordsEachWriteWithItsRVAndUser(t *testing.T) {
	b, pods, audit := auditSetup(t, 0)
	ctx := context.Background()
	key := "/pods/ns/p"

	created := &example.Pod{}
	if err := pods.Create(asUser(ctx, "alice", "create", ""), key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, created, 0); err != nil {
		t.Fatal(err)
	}
	updated := &example.Pod{}
	if err := pods.GuaranteedUpdate(asUser(ctx, "bob", "patch", "status"), key, updated, false, nil,
		apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			obj.(*example.Pod).Status.Message = "hi"
			return obj, nil
		}), nil); err != nil {
		t.Fatal(err)
	}
	// A no-op update writes nothing, so it has no entry.
	if err := pods.GuaranteedUpdate(asUser(ctx, "bob", "update", ""), key, &example.Pod{}, false, nil,
		apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) { return obj, nil }), nil); err != nil {
		t.Fatal(err)
	}
	// A failed precondition writes nothing either.
	wrongUID := "other"
	err := pods.Delete(asUser(ctx, "carol", "delete", ""), key, &example.Pod{}, apistorage.NewUIDPreconditions(wrongUID),
		apistorage.ValidateAllObjectFunc, nil)
	if !apistorage.IsConflict(err) && err == nil {
		t.Fatalf("delete with a wrong UID: %v", err)
	}
	// A create of an existing key is refused, without an entry.
	if err := pods.Create(asUser(ctx, "carol", "create", ""), key, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, 0); !apistorage.IsExist(err) {
		t.Fatalf("second create: %v", err)
	}
	deleted := &example.Pod{}
	if err := pods.Delete(ctx, key, deleted, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		t.Fatal(err)
	}
	// Not audited: another resource, and an object outside namespaces.
	other := b.NewStore(codec, newPod, newPodList, "", "/others", schema.GroupResource{Resource: "others"}, storagetesting.NewPrefixTransformer([]byte(testPrefix), false))
	if err := other.Create(ctx, "/others/ns/o", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "ns"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := pods.Create(ctx, "/pods/c", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, nil, 0); err != nil {
		t.Fatal(err)
	}

	var current int64
	if err := b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
		t.Fatal(err)
	}
	got := entries(t, audit)
	want := map[string]map[string]string{
		created.ResourceVersion: {"verb": "create", "subresource": "", "user": "alice", "resource": "pods", "name": "p", "rv": created.ResourceVersion},
		updated.ResourceVersion: {"verb": "patch", "subresource": "status", "user": "bob", "resource": "pods", "name": "p", "rv": updated.ResourceVersion},
		// Without request information: the storage's own verb, and no user.
		deleted.ResourceVersion: {"verb": "delete", "subresource": "", "user": "", "resource": "pods", "name": "p", "rv": deleted.ResourceVersion},
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d: %v", len(got), len(want), got)
	}
	for rv, labels := range want {
		for k, v := range labels {
			if got[rv][k] != v {
				t.Errorf("entry of the write at RV %s: %s=%q, want %q", rv, k, got[rv][k], v)
			}
		}
	}
	// Each entry took an RV of its own: 3 entries, 5 writes.
	if first, _ := strconv.ParseInt(created.ResourceVersion, 10, 64); current-first+1 != 8 {
		t.Errorf("RVs %d..%d for 5 writes and 3 entries", first, current)
	}
}

// TestAuditTrailCommitsWithTheWrite aborts write transactions after they took their RVs: the
// writes fail, and neither they nor their entries exist. Those that commit have their entries.
func TestAuditTrailCommitsWithTheWrite(t *testing.T) {
	b, pods, audit := auditSetup(t, 0)
	ctx := context.Background()
	var mu sync.Mutex
	n := 0
	injected := errors.New("injected failure before commit")
	// Every third transaction fails after taking its RVs.
	b.afterRV = func() error {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%3 == 0 {
			return injected
		}
		return nil
	}
	type outcome struct {
		name string
		rv   string
		err  error
	}
	results := make(chan outcome, 200)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				out := &example.Pod{}
				err := pods.Create(asUser(ctx, "alice", "create", ""), "/pods/ns/"+name, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, out, 0)
				results <- outcome{name, out.ResourceVersion, err}
			}
		}()
	}
	wg.Wait()
	close(results)
	b.afterRV = nil

	got := entries(t, audit)
	acked, failed := 0, 0
	for r := range results {
		exists := pods.Get(ctx, "/pods/ns/"+r.name, apistorage.GetOptions{}, &example.Pod{}) == nil
		if r.err != nil {
			failed++
			if exists {
				t.Errorf("%s: the create failed (%v) but the object exists", r.name, r.err)
			}
			for _, e := range got {
				if e["name"] == r.name {
					t.Errorf("%s: the create failed (%v) but has the entry of RV %s", r.name, r.err, e["rv"])
				}
			}
			continue
		}
		acked++
		if e := got[r.rv]; e == nil || e["name"] != r.name {
			t.Errorf("%s: acknowledged at RV %s without its entry (%v)", r.name, r.rv, e)
		}
	}
	if failed == 0 || acked == 0 {
		t.Fatalf("%d acknowledged, %d failed: the test needs both", acked, failed)
	}
	if len(got) != acked {
		t.Errorf("%d entries for %d acknowledged writes", len(got), acked)
	}
	t.Logf("%d writes acknowledged, %d failed, %d entries", acked, failed, len(got))
}

func TestAuditTrailRetention(t *testing.T) {
	_, pods, audit := auditSetup(t, time.Second)
	ctx := context.Background()
	if err := pods.Create(asUser(ctx, "alice", "create", ""), "/pods/ns/p", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, audit); len(got) != 1 {
		t.Fatalf("%d entries after one write", len(got))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(entries(t, audit)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the entry outlived its retention of 1s by 9s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The object itself has no TTL.
	if err := pods.Get(ctx, "/pods/ns/p", apistorage.GetOptions{}, &example.Pod{}); err != nil {
		t.Fatal(err)
	}
}

// Without its store the trail cannot record: audited writes fail rather than go unrecorded.
func TestAuditTrailRefusesWritesItCannotRecord(t *testing.T) {
	b := newTestBackend(t, testOptions)
	b.SetAuditTrail(AuditTrail{Resource: auditResource, Audited: func(schema.GroupResource) bool { return true }, Entry: testEntry})
	pods := newPodStore(b)
	ctx := context.Background()
	err := pods.Create(ctx, "/pods/ns/p", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, 0)
	if err == nil {
		t.Fatal("an audited write without the audit store succeeded")
	}
	if err := pods.Get(ctx, "/pods/ns/p", apistorage.GetOptions{}, &example.Pod{}); !apistorage.IsNotFound(err) {
		t.Fatalf("the refused write's object: %v", err)
	}
}
