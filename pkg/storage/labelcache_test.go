package storage

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// TestSelectiveLabelListsFromStore checks which lists CachedDecorator's cacher wrapper serves
// from PostgreSQL. A "phantom" row is written into objects behind the change log's back, so
// the watch cache never sees it: a list that returns it came from the store. Selective label
// lists (a required label value, at most maxRows matches) must, with the store's exact list
// semantics (consistent read, RV 0, not-older-than, limit and continue at one snapshot); every
// other list must still come from the cache.
func TestSelectiveLabelListsFromStore(t *testing.T) {
	ctx, c := newCacher(t, cacherSetup{})
	c.maxRows = 4
	for i := range 6 {
		l := map[string]string{"a": "1"} // p0, p2, p4 and two phantoms: 5 matches
		if i%2 == 1 {
			l = map[string]string{"a": "2", "b": "x"} // p1, p3, p5 and a phantom: 4 matches
		}
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: fmt.Sprintf("p%d", i), Labels: l}}
		if err := c.store.Create(ctx, "/pods/n/"+pod.Name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	writePhantom(ctx, t, c.store, &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "phantom",
		Labels: map[string]string{"a": "2", "b": "x"}}})
	for _, name := range []string{"phantom1", "phantom2"} {
		writePhantom(ctx, t, c.store, &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name,
			Labels: map[string]string{"a": "1"}}})
	}
	// The cache must be at the store's RV, or the cache-served lists below could fail for
	// reasons of their own.
	current, err := c.store.currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}

	list := func(t *testing.T, sel string, opts apistorage.ListOptions) (names []string, rv string, cont string) {
		t.Helper()
		selector, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		opts.Recursive = true
		opts.Predicate.Label, opts.Predicate.Field, opts.Predicate.GetAttrs = selector, fields.Everything(), podAttrs
		out := &example.PodList{}
		if err := c.GetList(ctx, "/pods/n", opts, out); err != nil {
			t.Fatalf("%q %+v: %v", sel, opts, err)
		}
		for _, p := range out.Items {
			names = append(names, p.Name)
		}
		return names, out.ResourceVersion, out.Continue
	}
	fromStore := []string{"p1", "p3", "p5", "phantom"}
	for _, tc := range []struct {
		name string
		sel  string
		opts apistorage.ListOptions
		want []string
	}{
		{"consistent", "a=2", apistorage.ListOptions{}, fromStore},
		{"any", "a==2", apistorage.ListOptions{ResourceVersion: "0"}, fromStore},
		{"in", "a in (2,3)", apistorage.ListOptions{}, fromStore},
		{"not older than", "a=2,b=x", apistorage.ListOptions{ResourceVersion: fmt.Sprint(current), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, fromStore},
		{"legacy not older than", "a=2", apistorage.ListOptions{ResourceVersion: fmt.Sprint(current)}, fromStore},
		// More matches than maxRows (5 with the phantoms): the cache, which lacks them.
		{"over the cap", "a=1", apistorage.ListOptions{}, []string{"p0", "p2", "p4"}},
		// No required value: nothing for the GIN index, the cache.
		{"exists", "b", apistorage.ListOptions{}, []string{"p1", "p3", "p5"}},
		{"not equals", "a!=1", apistorage.ListOptions{}, []string{"p1", "p3", "p5"}},
		{"everything", "", apistorage.ListOptions{}, []string{"p0", "p1", "p2", "p3", "p4", "p5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rv, _ := list(t, tc.sel, tc.opts)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if rv != fmt.Sprint(current) {
				t.Errorf("list RV %s, want the current %d", rv, current)
			}
		})
	}

	t.Run("pages at one snapshot", func(t *testing.T) {
		got, rv, cont := list(t, "a=2", apistorage.ListOptions{Predicate: apistorage.SelectionPredicate{Limit: 2}})
		if fmt.Sprint(got) != "[p1 p3]" || cont == "" {
			t.Fatalf("first page %v (continue %q), want [p1 p3] and a continue token", got, cont)
		}
		// A write after the first page is not in the second: it reads the first page's RV.
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "p9", Labels: map[string]string{"a": "2"}}}
		if err := c.store.Create(ctx, "/pods/n/p9", pod, nil, 0); err != nil {
			t.Fatal(err)
		}
		rest, rv2, cont2 := list(t, "a=2", apistorage.ListOptions{Predicate: apistorage.SelectionPredicate{Limit: 2, Continue: cont}})
		if fmt.Sprint(rest) != "[p5 phantom]" || cont2 != "" || rv2 != rv {
			t.Fatalf("second page %v at RV %s (continue %q), want [p5 phantom] at RV %s and no continue token", rest, rv2, cont2, rv)
		}
	})
}

// writePhantom stores obj in objects and object_labels without a change row, at the current RV, so that the
// store lists it and no watch, hence no watch cache, ever sees it.
func writePhantom(ctx context.Context, t *testing.T, s *Store, obj *example.Pod) {
	t.Helper()
	data, err := runtime.Encode(codec, obj)
	if err != nil {
		t.Fatal(err)
	}
	key := "/pods/" + obj.Namespace + "/" + obj.Name
	r, err := s.newRecord(ctx, key, obj, data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.b.pool.Exec(ctx, `WITH i AS (INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv)
		SELECT $1, $2, $3, $4, $5, $6, rv, rv FROM state)
		INSERT INTO object_labels (lkey, lvalue, key) SELECT l.key, l.value, $1 FROM jsonb_each_text($5) l`,
		key, "/pods", r.namespace, r.name, r.labels, r.value); err != nil {
		t.Fatal(err)
	}
}

// createPods creates pods p0 to p<n-1> in namespace ns.
func createPods(ctx context.Context, t *testing.T, s *Store, ns string, n int) {
	t.Helper()
	for i := range n {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", i)}}
		if err := s.Create(ctx, "/pods/"+ns+"/"+pod.Name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCountIsNotCapped checks that Count is exact beyond the cap of remainingItemCount: it is
// the object count of apiserver_storage_objects and of API Priority and Fairness' list cost.
func TestCountIsNotCapped(t *testing.T) {
	ctx, s := testSetup(t)
	defer func(m int64) { maxCount = m }(maxCount)
	maxCount = 4
	createPods(ctx, t, s, "n", 7)
	for key, want := range map[string]int64{"/pods": 7, "/pods/n": 7, "/pods/m": 0} {
		if n, err := s.Count(key); err != nil || n != want {
			t.Errorf("Count(%s) = %d, %v; want %d", key, n, err, want)
		}
	}
}

// TestContinueTokenKeyNotText checks that a continue token whose key PostgreSQL text cannot
// hold (a NUL byte before its end, which PostgreSQL reports as invalid UTF-8) is the client's
// error (400), not the database's (500).
func TestContinueTokenKeyNotText(t *testing.T) {
	ctx, s := testSetup(t)
	if err := s.Create(ctx, "/pods/n/a", &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "a"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	rv, err := s.currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{"a\\u0000b", "\\u0000\\u0000"} {
		// Made by hand, as a client could: EncodeContinue would not make such a token.
		token := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"v":"meta.k8s.io/v1","rv":%d,"start":"%s"}`, rv, start))
		opts := apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
			Label: labels.Everything(), Field: fields.Everything(), GetAttrs: podAttrsForTest, Limit: 2, Continue: token}}
		err = s.GetList(ctx, "/pods/n", opts, &example.PodList{})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("GetList with continue key %q: %v, want 400 Bad Request", start, err)
		}
	}
}

// TestRemainingItemCountCap checks remainingItemCount around maxCount, at the latest RV and on
// continue pages at an older one with writes after it: exact while at most maxCount keys are
// left to count from the page's start, unset beyond.
func TestRemainingItemCountCap(t *testing.T) {
	ctx, s := testSetup(t)
	defer func(m int64) { maxCount = m }(maxCount)
	maxCount = 4
	createPods(ctx, t, s, "n", 7)
	page := func(cont string) *example.PodList {
		t.Helper()
		out := &example.PodList{}
		opts := apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
			Label: labels.Everything(), Field: fields.Everything(), GetAttrs: podAttrsForTest, Limit: 2, Continue: cont}}
		if err := s.GetList(ctx, "/pods/n", opts, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	remaining := func(l *example.PodList) string {
		if l.RemainingItemCount == nil {
			return "unset"
		}
		return fmt.Sprint(*l.RemainingItemCount)
	}
	first := page("") // 7 keys from its start: more than maxCount
	if got := remaining(first); got != "unset" {
		t.Errorf("first page: remainingItemCount %s, want unset", got)
	}
	// Writes after the first page: a delete of a key ahead, a create ahead, an update.
	if err := s.Delete(ctx, "/pods/n/p6", &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "/pods/n/p7", &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "p7"}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	second := page(first.Continue) // p2..p6 as of the first page: 5 keys from its start
	if got := remaining(second); got != "unset" {
		t.Errorf("second page: remainingItemCount %s, want unset", got)
	}
	third := page(second.Continue) // p4, p5, p6 as of the first page: 3 keys, 1 after this page
	if got := remaining(third); got != "1" {
		t.Errorf("third page: remainingItemCount %s, want 1", got)
	}
	if third.Items[0].Name+" "+third.Items[1].Name != "p4 p5" {
		t.Errorf("third page %s %s, want p4 p5", third.Items[0].Name, third.Items[1].Name)
	}
}

// TestSelectiveLabelListsByKey checks where a selective unpaged label list takes its parts:
// the matching keys from object_labels, the objects from the watch cache, and everything from
// the store when the cache holds a version of a match newer than the keys' snapshot. Rows are
// changed behind the change log's back, which no watch and so no cache ever sees.
func TestSelectiveLabelListsByKey(t *testing.T) {
	ctx, c := newCacher(t, cacherSetup{})
	for _, p := range []struct {
		name   string
		labels map[string]string
	}{{"cached", map[string]string{"c": "z"}}, {"cached2", map[string]string{"c": "z"}}, {"cached3", map[string]string{"c": "z"}},
		{"unlabelled", map[string]string{"e": "q"}}, {"changed", map[string]string{"f": "y"}}} {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: p.name, Labels: p.labels}}
		if err := c.store.Create(ctx, "/pods/n/"+p.name, pod, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := c.store.b.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The row's value says "store".
	rewrite := func(name string, l map[string]string) {
		t.Helper()
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name, Labels: l,
			Annotations: map[string]string{"from": "store"}}}
		data, err := runtime.Encode(codec, pod)
		if err != nil {
			t.Fatal(err)
		}
		key := "/pods/n/" + name
		r, err := c.store.newRecord(ctx, key, pod, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		exec(`UPDATE objects SET value = $2 WHERE key = $1`, key, r.value)
	}
	rewrite("cached", map[string]string{"c": "z"})
	rewrite("changed", map[string]string{"f": "y"})
	exec(`UPDATE objects SET labels = '{}' WHERE key = '/pods/n/unlabelled'`)
	exec(`DELETE FROM object_labels WHERE key = '/pods/n/unlabelled'`)

	list := func(sel string, limit int64, cont string) (string, string) {
		t.Helper()
		out := &example.PodList{}
		selector, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		opts := apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
			Label: selector, Field: fields.Everything(), GetAttrs: podAttrs, Limit: limit, Continue: cont}}
		if err := c.GetList(ctx, "/pods/n", opts, out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range out.Items {
			got = append(got, p.Name+" from "+map[bool]string{true: "store", false: "cache"}[p.Annotations["from"] == "store"])
		}
		return fmt.Sprint(got), out.Continue
	}
	for sel, want := range map[string]string{
		"c=z": "[cached from cache cached2 from cache cached3 from cache]", // the cached object, not the row's value
		"e=q": "[]",                                                        // the cache's scan would find it; the key index does not
		"f=y": "[changed from cache]",                                      // the cache's version is the snapshot's
		// Matched in Go as well: object_labels does not answer !=.
		"c=z,x!=1": "[cached from cache cached2 from cache cached3 from cache]",
	} {
		if got, _ := list(sel, 0, ""); got != want {
			t.Errorf("%s: got %s, want %s", sel, got, want)
		}
	}
	// A snapshot older than the cache's version of "changed", the last write: the list cannot
	// tell the cached version from the snapshot's, and leaves everything to the store. (Moving
	// state.rv back for such a snapshot would be a rewind of the database: rewind_test.go.)
	older := apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
		Label: labels.SelectorFromSet(labels.Set{"f": "y"}), Field: fields.Everything(), GetAttrs: podAttrs}}
	keys, rv, err := c.store.matchingKeys(ctx, "/pods/n", older, c.maxRows)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.listByKeys(ctx, keys, rv-1, "/pods/n/", older, &example.PodList{}); ok || err != nil {
		t.Errorf("f=y at an older snapshot: answered from the cache (error %v), want it left to the store", err)
	}

	// A first page by key, the rest from the store at the first page's RV.
	first, cont := list("c=z", 2, "")
	if first != "[cached from cache cached2 from cache]" || cont == "" {
		t.Fatalf("first page %s (continue %q), want [cached from cache cached2 from cache] and a continue token", first, cont)
	}
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "cached4", Labels: map[string]string{"c": "z"}}}
	if err := c.store.Create(ctx, "/pods/n/cached4", pod, nil, 0); err != nil {
		t.Fatal(err)
	}
	if rest, cont := list("c=z", 2, cont); rest != "[cached3 from cache]" || cont != "" {
		t.Errorf("second page %s (continue %q), want [cached3 from cache] and no continue token", rest, cont)
	}
}

func TestPushdownIsExact(t *testing.T) {
	for sel, want := range map[string]bool{
		"a=1":                       true,
		"a==1,b in (2,3),c":         true,
		"a=1,b!=2":                  false,
		"a=1,b notin (2)":           false,
		"a=1,!b":                    false,
		"a=1,b>2":                   false,
		"a=1;metadata.namespace=n":  false,
		"a=1;metadata.namespace!=n": false,
		"a=1;metadata.name=x":       false,
		"a=1;metadata.namespace=n,metadata.name=x": false,
	} {
		l, f, _ := strings.Cut(sel, ";")
		ls, err := labels.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := fields.ParseSelector(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := pushdownIsExact(apistorage.SelectionPredicate{Label: ls, Field: fs}); got != want {
			t.Errorf("%s: %v, want %v", sel, got, want)
		}
	}
}
