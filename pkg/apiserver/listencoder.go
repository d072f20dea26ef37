package apiserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// streamingLists is the JSON serializer, except that it writes a list item by item, in
// chunks of listChunk bytes, instead of marshalling the whole list into one buffer first. The
// bytes are the same. A list of 10,000 GitOpsDeployments is about 20 MB of JSON: in one piece,
// encoding/json grows (and zeroes) its buffer to that size, nothing reaches kube-apiserver's
// aggregation proxy or the client until the last item is encoded, and the process holds the
// whole response at once. In chunks, gzip, the proxy and the client work on the first items
// while the later ones are encoded, and the process holds one chunk. (Kubernetes 1.33 added the
// same to k8s.io/apiserver as StreamingCollectionEncodingToJSON.)
type streamingLists struct {
	runtime.Serializer
}

// listChunk is larger than the apiserver's gzip threshold (128 KiB, decided on the first
// write), so that a list is compressed exactly when it was before.
const listChunk = 256 << 10

func (s streamingLists) Encode(obj runtime.Object, w io.Writer) error {
	if _, ok := obj.(runtime.CacheableObject); ok {
		return s.Serializer.Encode(obj, w)
	}
	items, ok := listItems(obj)
	if !ok {
		return s.Serializer.Encode(obj, w)
	}
	// The list without its items: {"kind":…,"metadata":{…},"items":null}. Items is the last
	// field, so the items go where null is.
	head := reflect.New(reflect.TypeOf(obj).Elem())
	head.Elem().Set(reflect.ValueOf(obj).Elem())
	head.Elem().FieldByName("Items").SetZero()
	prefix, err := json.Marshal(head.Interface())
	if err != nil {
		return err
	}
	prefix, ok = bytes.CutSuffix(prefix, []byte("null}"))
	if !ok {
		return s.Serializer.Encode(obj, w)
	}
	bw := bufio.NewWriterSize(w, listChunk)
	bw.Write(prefix)
	bw.WriteByte('[')
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // escapes HTML as the JSON serializer's encoder does
	for i := range items.Len() {
		if i > 0 {
			bw.WriteByte(',')
		}
		buf.Reset()
		if err := enc.Encode(items.Index(i).Addr().Interface()); err != nil {
			return err
		}
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// listItems returns the Items of a typed list (a struct whose last field is Items, a slice of
// structs encoded as "items"), if obj is one.
func listItems(obj runtime.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Elem().Type()
	last := t.Field(t.NumField() - 1)
	if last.Name != "Items" || last.Tag.Get("json") != "items" || last.Type.Kind() != reflect.Slice ||
		last.Type.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	items := v.Elem().Field(t.NumField() - 1)
	if items.IsNil() {
		return reflect.Value{}, false // "items":null, as encoding/json writes it
	}
	return items, true
}
