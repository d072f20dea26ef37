package storage

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
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

// FuzzContinueToken lists /pods/n with whatever continue token a client could send. A token
// is the client's input: a bad one must be answered with 400 or, if its RV was compacted,
// 410, never with the database's error (500) or a panic, and no token may reach past the
// prefix listed. raw is the token as sent; with encode set it is the token's JSON, which the
// store sees only once base64 lets it through, so that the fuzzer reaches the decoded fields.
func FuzzContinueToken(f *testing.F) {
	ctx := context.Background()
	s := newPodStore(newTestBackend(f, testOptions))
	// Neighbours of the listed namespace on both sides of its key range ("/pods/n/"), a
	// non-ASCII name, and writes after the first RV so that old tokens read the change log.
	for _, key := range []string{"/pods/m/a", "/pods/n/a", "/pods/n/b", "/pods/n/é", "/pods/na/a", "/pods/n0/a", "/pods/o/a"} {
		createPodAt(ctx, f, s, key, nil)
	}
	first, err := s.currentRV(ctx)
	if err != nil {
		f.Fatal(err)
	}
	createPodAt(ctx, f, s, "/pods/n/c", nil)
	if err := s.Delete(ctx, "/pods/n/b", &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
		f.Fatal(err)
	}

	// start is the token's key as a JSON string literal, escapes and invalid bytes as given.
	token := func(rv int64, start string) string {
		return fmt.Sprintf(`{"v":"meta.k8s.io/v1","rv":%d,"start":%s}`, rv, start)
	}
	for _, seed := range []struct {
		raw    string
		encode bool
		limit  uint8
	}{
		{"", false, 0},
		{"", false, 1},
		{encodeContinue(f, "/pods/n/a\x00", first), false, 1},
		{encodeContinue(f, "/pods/n/a\x00", first+2), false, 2},
		{token(first, `"a\u0000"`), true, 1},
		{token(first, `"b"`), true, 0},
		{token(-1, `"a\u0000"`), true, 1},         // what a compacted page's token holds: the latest RV
		{token(0, `"a"`), true, 1},                // no RV
		{token(first, `""`), true, 1},             // no key
		{token(first+1000, `"a\u0000"`), true, 1}, // an RV the log has not reached
		{token(1<<62, `"a"`), true, 1},            // far beyond
		{token(first, `"../m/a"`), true, 1},       // path traversal, refused by path.Clean
		{token(first, `"/../na/a"`), true, 1},
		{token(first, `"a/../../m"`), true, 1},
		{token(first, `"/"`), true, 1},          // the prefix itself
		{token(first, `"\u007f"`), true, 1},     // past every key of the range
		{token(first, "\"\xff\xfe\""), true, 1}, // invalid UTF-8, replaced by the JSON decoder
		{token(first, `"a\u0000b"`), true, 1},   // NUL inside the key: not text
		{token(first, `"a\u0000\u0000"`), true, 1},
		{token(first, `"\ud800"`), true, 1}, // a lone surrogate
		{token(first, `"é/\u2028"`), true, 1},
		{`{"v":"meta.k8s.io/v2","rv":1,"start":"a"}`, true, 1},
		{`{"v":"meta.k8s.io/v1","rv":"1","start":"a"}`, true, 1},
		{`{"v":"meta.k8s.io/v1","rv":1e3,"start":"a"}`, true, 1},
		{`{"v":"meta.k8s.io/v1","rv":99999999999999999999,"start":"a"}`, true, 1},
		{`null`, true, 1},
		{`[]`, true, 1},
		{"not base64!", false, 1},
		{"eyJ2IjoibWV0YS5rOHMuaW8vdjEi", false, 1}, // truncated JSON
	} {
		f.Add(seed.raw, seed.encode, seed.limit)
	}

	f.Fuzz(func(t *testing.T, raw string, encode bool, limit uint8) {
		cont := raw
		if encode {
			cont = base64.RawURLEncoding.EncodeToString([]byte(raw))
		}
		opts := apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
			Label: labels.Everything(), Field: fields.Everything(), GetAttrs: podAttrsForTest,
			Limit: int64(limit % 8), Continue: cont}}
		list := &example.PodList{}
		err := s.GetList(ctx, "/pods/n", opts, list)
		if err != nil && !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) {
			t.Fatalf("continue %q: %v (%T), want success, 400 or 410", cont, err, err)
		}
		for _, p := range list.Items {
			if p.Namespace != "n" {
				t.Errorf("continue %q: listing /pods/n returned %s/%s", cont, p.Namespace, p.Name)
			}
		}
	})
}

// encodeContinue is the token the store hands out for a next page of /pods/n starting at key.
func encodeContinue(tb testing.TB, key string, rv int64) string {
	token, err := apistorage.EncodeContinue(key, "/pods/n/", rv)
	if err != nil {
		tb.Fatal(err)
	}
	return token
}

func createPodAt(ctx context.Context, tb testing.TB, s *Store, key string, l map[string]string) *example.Pod {
	tb.Helper()
	ns, name, _ := strings.Cut(strings.TrimPrefix(key, "/pods/"), "/")
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	if err := s.Create(ctx, key, pod, nil, 0); err != nil {
		tb.Fatalf("creating %s: %v", key, err)
	}
	return pod
}

// fuzzLabelSets are the labels of the pods FuzzSelectorPushdown lists: absent, empty, empty
// values, numbers for > and <, prefixed keys, keys differing only in case, several labels.
var fuzzLabelSets = []map[string]string{
	nil,
	{},
	{"a": "1"},
	{"a": "2"},
	{"a": "10", "b": "x"},
	{"a": ""},
	{"b": "y"},
	{"a": "-3", "c": "z"},
	{"example.com/a": "1"},
	{"a": "1", "b": "x", "c": "z"},
	{"A": "1"},
	{"a": "1.5", "b": ""},
}

// selectorFixture is what FuzzSelectorPushdown lists: the pods as of an older RV, whose
// labels the change log holds, and as they are now.
type selectorFixture struct {
	s         *Store
	older     int64
	then, now []*example.Pod
}

func newSelectorFixture(ctx context.Context, tb testing.TB) *selectorFixture {
	fx := &selectorFixture{s: newPodStore(newTestBackend(tb, testOptions))}
	for i, l := range fuzzLabelSets {
		for _, ns := range []string{"n1", "n2", "n10"} {
			fx.then = append(fx.then, createPodAt(ctx, tb, fx.s, fmt.Sprintf("/pods/%s/p%d", ns, i), l))
		}
	}
	var err error
	if fx.older, err = fx.s.currentRV(ctx); err != nil {
		tb.Fatal(err)
	}
	// Afterwards every fourth pod is relabelled, every fourth deleted, and new ones created, so
	// that the latest and the older RV differ in every way a row can, in every namespace.
	for i, pod := range fx.then {
		key := "/pods/" + pod.Namespace + "/" + pod.Name
		switch i % 4 {
		case 0:
			relabelled := relabelPod(ctx, tb, fx.s, key, fuzzLabelSets[(i+5)%len(fuzzLabelSets)])
			fx.now = append(fx.now, relabelled)
		case 1:
			if err := fx.s.Delete(ctx, key, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil); err != nil {
				tb.Fatal(err)
			}
		default:
			fx.now = append(fx.now, pod)
		}
	}
	for i, l := range fuzzLabelSets[:4] {
		fx.now = append(fx.now, createPodAt(ctx, tb, fx.s, fmt.Sprintf("/pods/n1/q%d", i), l))
	}
	return fx
}

func relabelPod(ctx context.Context, tb testing.TB, s *Store, key string, l map[string]string) *example.Pod {
	out := &example.Pod{}
	err := s.GuaranteedUpdate(ctx, key, out, false, nil,
		apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			p := obj.(*example.Pod)
			p.Labels = l
			return p, nil
		}), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// FuzzSelectorPushdown checks that label and field selectors pushed down to SQL select what
// the Go matcher selects from the same objects, at the latest RV and at an older one (the
// change log's previous labels and namespace), whole and page by page. The store matches
// every row in Go again, so this finds rows the SQL wrongly drops, and SQL errors.
func FuzzSelectorPushdown(f *testing.F) {
	ctx := context.Background()
	fx := newSelectorFixture(ctx, f)
	for _, seed := range []struct {
		label, field string
		limit        uint8
		older        bool
	}{
		{"", "", 0, false},
		{"a=1", "", 0, true},
		{"a==2", "metadata.namespace=n1", 0, false},
		{"a!=1", "", 2, true},
		{"a in (1,10)", "", 0, true},
		{"a notin (1,10)", "metadata.namespace=n2", 0, true},
		{"a", "", 1, false},
		{"!a", "", 0, true},
		{"a>1", "", 0, true},
		{"a<2", "", 3, false},
		{"a,b", "", 0, true},
		{"b=x,a in (10)", "", 0, false},
		{"a=", "", 0, true},
		{"b in (,x)", "", 0, true},
		{"a=1,a=2", "", 0, false},
		{"a=1,a!=1", "", 0, true},
		{"example.com/a=1", "", 0, true},
		{"A=1", "", 0, false},
		{"a=nope", "", 0, true},
		{"", "metadata.namespace=n1", 2, true},
		{"", "metadata.namespace==n10", 0, false},
		{"", "metadata.namespace!=n1", 0, true},
		{"", "metadata.namespace=", 0, true},
		{"", "metadata.namespace=n1,metadata.namespace=n2", 0, false},
		{"", "metadata.namespace=n\x00", 0, false}, // not text: no namespace is
		{"a", "metadata.namespace=\xff", 1, true},
		{"", "metadata.name=p1", 0, true},
		{"c", "metadata.namespace=n1,metadata.name!=p7", 1, true},
		{"!b,a", "metadata.namespace=n1", 0, true},
	} {
		f.Add(seed.label, seed.field, seed.limit, seed.older)
	}

	f.Fuzz(func(t *testing.T, labelSel, fieldSel string, limit uint8, older bool) {
		ls, err := labels.Parse(labelSel)
		if err != nil {
			return // not a selector
		}
		fs, err := fields.ParseSelector(fieldSel)
		if err != nil {
			return
		}
		pred := apistorage.SelectionPredicate{Label: ls, Field: fs, GetAttrs: podAttrsForTest, Limit: int64(limit % 5)}
		objects, rv := fx.now, ""
		if older {
			objects, rv = fx.then, fmt.Sprint(fx.older)
		}
		var want []string
		for _, pod := range objects {
			if ok, err := pred.Matches(pod); err == nil && ok {
				want = append(want, pod.Namespace+"/"+pod.Name)
			}
		}
		slices.Sort(want)
		got, err := fx.listAll(ctx, pred, rv)
		if err != nil {
			t.Fatalf("labels %q fields %q (RV %q, limit %d): %v", ls, fs, rv, pred.Limit, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("labels %q fields %q (RV %q, limit %d): store listed %v, the Go matcher selects %v", ls, fs, rv, pred.Limit, got, want)
		}
	})
}

// listAll lists /pods with pred, at rv exactly (or the latest when ""), following continue
// tokens when pred has a limit.
func (fx *selectorFixture) listAll(ctx context.Context, pred apistorage.SelectionPredicate, rv string) ([]string, error) {
	opts := apistorage.ListOptions{Recursive: true, Predicate: pred, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchExact
	}
	var names []string
	for range len(fx.then) + len(fx.now) + 1 {
		list := &example.PodList{}
		if err := fx.s.GetList(ctx, "/pods", opts, list); err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		if list.Continue == "" {
			return names, nil
		}
		// The token carries the RV; a continue page must not name one.
		opts.Predicate.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = list.Continue, "", ""
	}
	return nil, fmt.Errorf("more pages than objects: continue tokens never end")
}
