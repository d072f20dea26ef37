package storage

import (
	"fmt"
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
	ctx, s := testSetup(t)
	fieldsV1 := &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:nodeName":{}}}`)}
	pod := func(i int) *example.Pod {
		return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i),
			Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: fieldsV1.DeepCopy()}}},
			Spec: example.PodSpec{NodeName: "node-1"}}
	}
	w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: "1", Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
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
	}
}
