package storage

import (
	"fmt"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

func podAttrsForTest(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod := obj.(*example.Pod)
	return labels.Set(pod.Labels), fields.Set{"metadata.name": pod.Name, "metadata.namespace": pod.Namespace}, nil
}

// TestSelectorPushdown checks that every label operator and the namespace field, pushed down
// to SQL, select exactly what the Go matcher selects, at the latest RV and at an older one
// (where the pushdown runs against the change log's previous labels).
func TestSelectorPushdown(t *testing.T) {
	ctx, s := testSetup(t)
	labelSets := []map[string]string{nil, {"a": "1"}, {"a": "2"}, {"a": "3", "b": "x"}, {"b": "y"}, {"a": "10"}}
	var pods []*example.Pod
	for i, l := range labelSets {
		for _, ns := range []string{"n1", "n2"} {
			pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", i), Labels: l}}
			if err := s.Create(ctx, "/pods/"+ns+"/"+pod.Name, pod, nil, 0); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, pod)
		}
	}
	older, err := s.currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Relabel everything afterwards so that the older read must use the log's labels.
	for _, pod := range pods {
		err := s.GuaranteedUpdate(ctx, "/pods/"+pod.Namespace+"/"+pod.Name, &example.Pod{}, false, nil,
			apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				p := obj.(*example.Pod)
				p.Labels = map[string]string{"moved": "yes"}
				return p, nil
			}), nil)
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, sel := range []string{"a=1", "a==2", "a!=1", "a in (1,3)", "a notin (1,3)", "a", "!a", "a>2", "a,b", "b=x,a in (3)", "a=nope"} {
		selector, err := labels.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, fieldSel := range []fields.Selector{fields.Everything(), fields.OneTermEqualSelector("metadata.namespace", "n2")} {
			var want []string
			for _, pod := range pods {
				if selector.Matches(labels.Set(pod.Labels)) && fieldSel.Matches(fields.Set{"metadata.namespace": pod.Namespace}) {
					want = append(want, pod.Namespace+"/"+pod.Name)
				}
			}
			sort.Strings(want)
			list := &example.PodList{}
			err := s.GetList(ctx, "/pods", apistorage.ListOptions{
				Recursive:            true,
				ResourceVersion:      fmt.Sprint(older),
				ResourceVersionMatch: metav1.ResourceVersionMatchExact,
				Predicate:            apistorage.SelectionPredicate{Label: selector, Field: fieldSel, GetAttrs: podAttrsForTest},
			}, list)
			if err != nil {
				t.Fatalf("%q %v: %v", sel, fieldSel, err)
			}
			var got []string
			for _, p := range list.Items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q %v at RV %d: got %v, want %v", sel, fieldSel, older, got, want)
			}
		}
		list := &example.PodList{}
		if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true,
			Predicate: apistorage.SelectionPredicate{Label: selector, Field: fields.Everything(), GetAttrs: podAttrsForTest}}, list); err != nil {
			t.Fatalf("%q latest: %v", sel, err)
		}
		wantLatest := 0
		if selector.Matches(labels.Set{"moved": "yes"}) {
			wantLatest = len(pods)
		}
		if len(list.Items) != wantLatest {
			t.Errorf("%q latest: got %d items, want %d", sel, len(list.Items), wantLatest)
		}
	}
}
