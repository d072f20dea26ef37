package listjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	goruntime "runtime"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// StreamingLists is the JSON serializer, except that it writes a list item by item, in
// chunks of ChunkSize bytes, instead of marshalling the whole list into one buffer first. The
// bytes are the same. A list of 10,000 GitOpsDeployments is about 20 MB of JSON: in one piece,
// encoding/json grows (and zeroes) its buffer to that size, nothing reaches kube-apiserver's
// aggregation proxy or the client until the last item is encoded, and the process holds the
// whole response at once. In chunks, gzip, the proxy and the client work on the first items
// while the later ones are encoded, and the process holds one chunk. (Kubernetes 1.33 added the
// same to k8s.io/apiserver as StreamingCollectionEncodingToJSON.)
type StreamingLists struct {
	runtime.Serializer
}

// ChunkSize is larger than the apiserver's gzip threshold (128 KiB, decided on the first
// write), so that a list is compressed exactly when it was before.
const ChunkSize = 256 << 10

func (s StreamingLists) Encode(obj runtime.Object, w io.Writer) error {
	if _, ok := obj.(runtime.CacheableObject); ok {
		return s.Serializer.Encode(obj, w)
	}
	items, ok := listItems(obj)
	if !ok {
		return s.encodeObject(obj, w)
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
	bw := chunkWriters.Get().(*bufio.Writer)
	sent := &countingWriter{w: w}
	bw.Reset(sent)
	defer func() {
		bw.Reset(nil)
		chunkWriters.Put(bw)
	}()
	bw.Write(prefix)
	bw.WriteByte('[')
	if err := encodeItems(bw, items); err != nil {
		if sent.n > 0 {
			// The status line (200) and part of the list are out: an error status written after
			// them would make a 200 whose body is half a list and half a Status. Cutting the
			// response (net/http closes the connection or resets the HTTP/2 stream) lets the
			// client, and kube-apiserver's proxy before it, see that it failed.
			klog.ErrorS(err, "Cutting a list response short: an item could not be encoded after the first bytes were sent")
			panic(http.ErrAbortHandler)
		}
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// encodeObject writes a single object with the item encoder of its kind, when it has one,
// in one write, as the JSON serializer does: a get's object costs the same to encode as a
// list's item, and the metadata was most of it (see itemEncoder).
func (s StreamingLists) encodeObject(obj runtime.Object, w io.Writer) error {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return s.Serializer.Encode(obj, w)
	}
	item := itemEncoderFor(v.Elem().Type())
	if item == nil {
		return s.Serializer.Encode(obj, w)
	}
	buf := batchBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer batchBuffers.Put(buf)
	if err := item.encode(buf, json.NewEncoder(buf), v.Elem()); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// countingWriter counts what reached the response, to tell whether an error can still be
// answered with an error status.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// chunkWriters are reused: a buffer of ChunkSize bytes per list was a tenth of the garbage of
// a label-selected list of a thousand objects.
var chunkWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, ChunkSize) }}

// itemBatch is how many items one goroutine encodes at a time: large enough that starting a
// goroutine costs little next to encoding the batch (about 2 KB and 10 µs per
// GitOpsDeployment), small enough that a list of a thousand keeps every core busy.
const itemBatch = 32

// batch is a run of items encoded, comma-separated, into buf; done is closed once it is.
type batch struct {
	lo, hi int
	buf    *bytes.Buffer
	err    error
	done   chan struct{}
}

var batchBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeItems writes the items, comma-separated and in order. encoding/json is most of a
// list's CPU time (a label-selected list of 1000 objects spends more time encoding than
// finding them), so batches of items are encoded on goroutines of their own while this one
// writes the finished batches in order. At most 2×GOMAXPROCS batches are in flight, so memory
// stays bounded whatever the list's size.
func encodeItems(w io.Writer, items reflect.Value) error {
	n, window := items.Len(), 2*goruntime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	// The goroutines read items: they must be done before the caller gets its list back, also
	// when a write fails half-way.
	defer wg.Wait()
	var inFlight []*batch // in item order
	for next := 0; next < n || len(inFlight) > 0; {
		for ; next < n && len(inFlight) < window; next += itemBatch {
			b := &batch{lo: next, hi: min(next+itemBatch, n), buf: batchBuffers.Get().(*bytes.Buffer), done: make(chan struct{})}
			inFlight = append(inFlight, b)
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.encode(items)
				close(b.done)
			}()
		}
		b := inFlight[0]
		inFlight = inFlight[1:]
		<-b.done
		err := b.err
		if err == nil && b.lo > 0 {
			_, err = w.Write([]byte{','})
		}
		if err == nil {
			_, err = w.Write(b.buf.Bytes())
		}
		batchBuffers.Put(b.buf)
		if err != nil {
			return err
		}
	}
	return nil
}

// encode writes items lo to hi-1 into b.buf, comma-separated, each exactly as the JSON
// serializer's encoder writes it (with HTML escaping) minus its newline.
func (b *batch) encode(items reflect.Value) {
	b.buf.Reset()
	enc := json.NewEncoder(b.buf)
	item := itemEncoderFor(items.Type().Elem())
	for i := b.lo; i < b.hi; i++ {
		if i > b.lo {
			b.buf.WriteByte(',')
		}
		if item != nil {
			if b.err = item.encode(b.buf, enc, items.Index(i)); b.err != nil {
				return
			}
			continue
		}
		if b.err = enc.Encode(items.Index(i).Addr().Interface()); b.err != nil {
			return
		}
		b.buf.Truncate(b.buf.Len() - 1) // the newline Encode ends every value with
	}
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
