package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	apistorage "k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

var auditResource = schema.GroupResource{Resource: "auditpods"}

// testAudit stores a write as JSON and serves it as a Pod named after its RV, with the write
// in its labels.
var testAudit = AuditTrail{
	Resource: auditResource,
	Audited:  func(gr schema.GroupResource) bool { return gr.Resource == "pods" },
	Encode: func(w AuditedWrite) ([]byte, error) {
		username := ""
		if w.User != nil {
			username = w.User.GetName()
		}
		return json.Marshal(map[string]string{"verb": w.Verb, "subresource": w.Subresource, "user": username,
			"resource": w.Resource.Resource, "name": w.Name})
	},
	Decode: func(row AuditRow) (runtime.Object, error) {
		l := map[string]string{}
		if err := json.Unmarshal(row.Entry, &l); err != nil {
			return nil, err
		}
		l["rv"] = strconv.FormatInt(row.RV, 10)
		return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: row.Namespace, Name: AuditEntryName(row.RV), Labels: l,
			CreationTimestamp: metav1.NewTime(row.CommittedAt)}}, nil
	},
}

// auditSetup returns a pod store whose writes are audited, and the trail's storage.
func auditSetup(t testing.TB, retention time.Duration) (*Backend, *Store, *auditStorage) {
	b := newTestBackend(t, testOptions)
	trail := testAudit
	trail.Retention = retention
	b.SetAuditTrail(trail)
	audit, ok := b.auditStorage("/auditpods", auditResource, newPod)
	if !ok {
		t.Fatal("no audit storage for the trail's resource")
	}
	return b, newPodStore(b), audit
}

func asUser(ctx context.Context, name, verb, subresource string) context.Context {
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: []string{"tenants"}})
	return request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: verb, Resource: "pods",
		Subresource: subresource, Namespace: "ns", Name: "p"})
}

// entries lists the trail under key by the RV of their write.
func entries(t *testing.T, audit *auditStorage, key string) map[string]map[string]string {
	t.Helper()
	list := &example.PodList{}
	if err := audit.GetList(context.Background(), key, apistorage.ListOptions{Predicate: apistorage.Everything, Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, p := range list.Items {
		if p.Name != AuditEntryName(mustAtoi(t, p.Labels["rv"])) || p.ResourceVersion != p.Labels["rv"] {
			t.Errorf("entry %s (resourceVersion %s) describes the write at RV %s", p.Name, p.ResourceVersion, p.Labels["rv"])
		}
		got[p.Labels["rv"]] = p.Labels
	}
	return got
}

func mustAtoi(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
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
	if err := pods.Delete(asUser(ctx, "carol", "delete", ""), key, &example.Pod{}, apistorage.NewUIDPreconditions("other"),
		apistorage.ValidateAllObjectFunc, nil); err == nil {
		t.Fatal("delete with a wrong UID succeeded")
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
	// Another namespace's entry is listed in its own namespace only.
	if err := pods.Create(asUser(ctx, "dave", "create", ""), "/pods/ns2/q", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns2"}}, nil, 0); err != nil {
		t.Fatal(err)
	}

	got := entries(t, audit, "/auditpods/ns")
	want := map[string]map[string]string{
		created.ResourceVersion: {"verb": "create", "subresource": "", "user": "alice", "resource": "pods", "name": "p"},
		updated.ResourceVersion: {"verb": "patch", "subresource": "status", "user": "bob", "resource": "pods", "name": "p"},
		// Without request information: the storage's own verb, and no user.
		deleted.ResourceVersion: {"verb": "delete", "subresource": "", "user": "", "resource": "pods", "name": "p"},
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
	if all := entries(t, audit, "/auditpods"); len(all) != 4 {
		t.Errorf("%d entries in all namespaces, want 4", len(all))
	}

	// Get, selectors, pages and delete.
	one := &example.Pod{}
	if err := audit.Get(ctx, "/auditpods/ns/"+AuditEntryName(mustAtoi(t, created.ResourceVersion)), apistorage.GetOptions{}, one); err != nil ||
		one.Labels["user"] != "alice" {
		t.Fatalf("get: %v %+v", err, one.ObjectMeta)
	}
	for _, name := range []string{AuditEntryName(1 << 40), "x", "00000000000000000000"} {
		if err := audit.Get(ctx, "/auditpods/ns/"+name, apistorage.GetOptions{}, &example.Pod{}); !apistorage.IsNotFound(err) {
			t.Errorf("get %s: %v, want not found", name, err)
		}
	}
	selected := &example.PodList{}
	if err := audit.GetList(ctx, "/auditpods/ns", apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
		Label: labels.SelectorFromSet(labels.Set{"user": "bob"}), Field: fields.Everything(), GetAttrs: podAttrs}}, selected); err != nil ||
		len(selected.Items) != 1 {
		t.Fatalf("selected %v (%v), want bob's entry", selected.Items, err)
	}
	var names []string
	for cont := ""; ; {
		page := &example.PodList{}
		if err := audit.GetList(ctx, "/auditpods", apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
			Label: labels.Everything(), Field: fields.Everything(), Limit: 3, Continue: cont, GetAttrs: podAttrs}}, page); err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		if cont = page.Continue; cont == "" {
			break
		}
	}
	if len(names) != 4 {
		t.Errorf("pages of 3 gave %v, want 4 entries", names)
	}
	if err := audit.Delete(ctx, "/auditpods/ns/"+one.Name, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, audit, "/auditpods/ns"); len(got) != 2 {
		t.Errorf("%d entries after deleting one of 3", len(got))
	}
	if err := audit.Create(ctx, "/auditpods/ns/x", &example.Pod{}, nil, 0); err == nil {
		t.Error("an entry was created through the API")
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

	got := entries(t, audit, "/auditpods/ns")
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
	b, pods, audit := auditSetup(t, 500*time.Millisecond)
	ctx := context.Background()
	if err := pods.Create(asUser(ctx, "alice", "create", ""), "/pods/ns/p", &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.expireAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, audit, "/auditpods"); len(got) != 1 {
		t.Fatalf("%d entries after one write, before its retention passed", len(got))
	}
	time.Sleep(time.Second)
	if err := b.expireAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, audit, "/auditpods"); len(got) != 0 {
		t.Fatalf("%d entries after the retention passed", len(got))
	}
	// The object itself has no TTL.
	if err := pods.Get(ctx, "/pods/ns/p", apistorage.GetOptions{}, &example.Pod{}); err != nil {
		t.Fatal(err)
	}
}

// A watch of the trail gets each entry once, in RV order, from where it started; from "0", the
// current entries first.
func TestAuditTrailWatch(t *testing.T) {
	_, pods, audit := auditSetup(t, 0)
	ctx := context.Background()
	create := func(ns, name string) string {
		t.Helper()
		out := &example.Pod{}
		if err := pods.Create(asUser(ctx, "alice", "create", ""), "/pods/"+ns+"/"+name, &example.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, out, 0); err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	first := create("ns", "a")
	fromNow, err := audit.Watch(ctx, "/auditpods/ns", apistorage.ListOptions{ResourceVersion: first, Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer fromNow.Stop()
	fromZero, err := audit.Watch(ctx, "/auditpods/ns", apistorage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer fromZero.Stop()
	var want []string
	for i := 0; i < 30; i++ {
		want = append(want, create("ns", fmt.Sprintf("b%d", i)))
		create("other", fmt.Sprintf("c%d", i))
	}
	receive := func(w watch.Interface, n int) []string {
		t.Helper()
		var got []string
		timeout := time.After(10 * time.Second)
		for len(got) < n {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Added {
					t.Fatalf("event %s %v", ev.Type, ev.Object)
				}
				got = append(got, ev.Object.(*example.Pod).ResourceVersion)
			case <-timeout:
				t.Fatalf("%d of %d events", len(got), n)
			}
		}
		return got
	}
	if got := receive(fromNow, 30); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("from RV %s: %v, want %v", first, got, want)
	}
	if got := receive(fromZero, 31); fmt.Sprint(got) != fmt.Sprint(append([]string{first}, want...)) {
		t.Errorf("from 0: %v", got)
	}
	select {
	case ev := <-fromNow.ResultChan():
		t.Errorf("an extra event: %s %v", ev.Type, ev.Object)
	case <-time.After(300 * time.Millisecond):
	}
}
