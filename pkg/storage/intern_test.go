package storage

import (
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"strconv"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// TestListAndWatchShareMetadata checks that objects decoded for lists and watches (what the
// watch cache holds) share one copy of their repeated metadata: label keys and values, the
// namespace, the managed fields' FieldsV1 bytes, and short strings of the object below its
// metadata.
func TestListAndWatchShareMetadata(t *testing.T) {
	// unique.Make keeps a canonical copy while a handle to it lives, and the objects keep only
	// the strings: a collection between two decodes gives the second its own copies. That costs
	// one copy per collection, not per object, so the cache does not mind; this test does.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx, s := testSetup(t)
	fieldsV1 := &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:nodeName":{}}}`)}
	pod := func(i int) *example.Pod {
		return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i),
			Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: fieldsV1.DeepCopy()}}},
			Spec: example.PodSpec{NodeName: "node-1"}}
	}
	for i := range 2 {
		if err := s.Create(ctx, fmt.Sprintf("/pods/ns/p%d", i), pod(i), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	list := &example.PodList{}
	if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: apistorage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	objs := []*example.Pod{&list.Items[0], &list.Items[1]}
	w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: "1", Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range 2 {
		objs = append(objs, (<-w.ResultChan()).Object.(*example.Pod))
	}
	first := objs[0]
	for i, p := range objs[1:] {
		if unsafe.StringData(p.Namespace) != unsafe.StringData(first.Namespace) {
			t.Errorf("object %d: namespace not shared", i+1)
		}
		for k, v := range p.Labels {
			for k0, v0 := range first.Labels {
				if unsafe.StringData(k) != unsafe.StringData(k0) || unsafe.StringData(v) != unsafe.StringData(v0) {
					t.Errorf("object %d: label %s=%s not shared", i+1, k, v)
				}
			}
		}
		if unsafe.SliceData(p.ManagedFields[0].FieldsV1.Raw) != unsafe.SliceData(first.ManagedFields[0].FieldsV1.Raw) {
			t.Errorf("object %d: FieldsV1 not shared", i+1)
		}
		if unsafe.StringData(p.Spec.NodeName) != unsafe.StringData(first.Spec.NodeName) {
			t.Errorf("object %d: spec.nodeName not shared", i+1)
		}
		if unsafe.StringData(p.ManagedFields[0].Manager) != unsafe.StringData(first.ManagedFields[0].Manager) {
			t.Errorf("object %d: manager not shared", i+1)
		}
		if !sameMap(p.Labels, first.Labels) {
			t.Errorf("object %d: labels map not shared", i+1)
		}
	}
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestLabelSetsAreSharedByValue checks that equal label sets get one map, that sets which
// would collide if keys and values were merely concatenated do not, and that a full cache
// starts over without changing what a map holds.
func TestLabelSetsAreSharedByValue(t *testing.T) {
	c := labelSetCache{sets: map[string]map[string]string{}}
	a := c.shared(map[string]string{"app": "web", "tier": "front"})
	if b := c.shared(map[string]string{"tier": "front", "app": "web"}); !sameMap(a, b) {
		t.Error("equal label sets got two maps")
	}
	for _, tc := range [][2]map[string]string{
		{{"a": "b:c"}, {"a:b": "c"}},
		{{"a": "1", "b": "2"}, {"a": "12"}},
		{{"a": ""}, {"a": "", "b": ""}},
	} {
		x, y := c.shared(tc[0]), c.shared(tc[1])
		if sameMap(x, y) || !maps.Equal(x, tc[0]) || !maps.Equal(y, tc[1]) {
			t.Errorf("%v and %v: got %v and %v", tc[0], tc[1], x, y)
		}
	}
	for i := range maxLabelSets + 1 {
		want := map[string]string{"i": strconv.Itoa(i)}
		if got := c.shared(want); !maps.Equal(got, want) {
			t.Fatalf("set %d: got %v", i, got)
		}
	}
	if len(c.sets) > maxLabelSets {
		t.Errorf("%d sets cached, bound is %d", len(c.sets), maxLabelSets)
	}
	if got := c.shared(map[string]string{"app": "web", "tier": "front"}); !maps.Equal(got, a) {
		t.Errorf("after starting over: %v", got)
	}
}
