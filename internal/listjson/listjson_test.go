package listjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// writes records the size of every Write.
type writes struct {
	bytes.Buffer
	sizes []int
}

func (w *writes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

func jsonSerializer(t testing.TB) runtime.Serializer {
	for _, info := range Codecs.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			return info.Serializer
		}
	}
	t.Fatal("no JSON serializer")
	return nil
}

// TestStreamingListsWriteTheSameBytes checks that lists written item by item are byte for
// byte what the JSON serializer writes, and that a large list goes out in chunks whose first
// is above the apiserver's gzip threshold (so compression is decided as before).
func TestStreamingListsWriteTheSameBytes(t *testing.T) {
	plain := jsonSerializer(t)
	streaming := StreamingLists{plain}
	list := func(n int) *gitopsv1alpha1.GitOpsDeploymentList {
		l := &gitopsv1alpha1.GitOpsDeploymentList{
			TypeMeta: metav1.TypeMeta{Kind: "GitOpsDeploymentList", APIVersion: "managed-gitops.redhat.com/v1alpha1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "a<b>&c"},
			Items:    []gitopsv1alpha1.GitOpsDeployment{},
		}
		for i := range n {
			l.Items = append(l.Items, gitopsv1alpha1.GitOpsDeployment{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d%d", i), Namespace: "ns",
					Labels:      map[string]string{"b": "2", "a": "1"},
					Annotations: map[string]string{"note": "<script>&\u2028é"}},
				Spec: gitopsv1alpha1.GitOpsDeploymentSpec{Source: gitopsv1alpha1.ApplicationSource{
					RepoURL: "https://example.com/r?x=1&y=2", Path: fmt.Sprintf("environments/overlays/app-%d", i)}},
			})
		}
		return l
	}
	for _, tc := range []struct {
		name string
		obj  runtime.Object
	}{
		{"empty", list(0)},
		{"one", list(1)},
		{"three", list(3)},
		{"large", list(3000)},
		{"nil items", &gitopsv1alpha1.GitOpsDeploymentList{}},
		{"not a list", &list(1).Items[0]},
		{"metadata list", &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := plain.Encode(tc.obj, &want); err != nil {
				t.Fatal(err)
			}
			var got writes
			if err := streaming.Encode(tc.obj, &got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("streamed:\n%.300s\nwant:\n%.300s", got.Bytes(), want.Bytes())
			}
			if want.Len() > ChunkSize {
				if len(got.sizes) < 2 || got.sizes[0] <= 128<<10 {
					t.Errorf("%d bytes written as %v, want chunks, the first above 128 KiB", want.Len(), got.sizes)
				}
			}
		})
	}
}

// failingItem fails to encode when it is item failAt, standing for any value encoding/json
// rejects half-way through a list.
type failingItem struct{ N int }

const failAt = 700

func (f failingItem) MarshalJSON() ([]byte, error) {
	if f.N == failAt {
		return nil, errors.New("item cannot be encoded")
	}
	return []byte(fmt.Sprint(f.N)), nil
}

type failingList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []failingItem `json:"items"`
}

func (l *failingList) DeepCopyObject() runtime.Object { return l }

// TestStreamingListsStopAtAnItemThatCannotBeEncoded checks that an item encoding/json rejects,
// in the middle of a list encoded by several goroutines, ends the list with its error, that
// the items before it went out in order, and that no encoding goroutine is left behind.
func TestStreamingListsStopAtAnItemThatCannotBeEncoded(t *testing.T) {
	l := &failingList{}
	for i := range 3000 {
		l.Items = append(l.Items, failingItem{i})
	}
	var got bytes.Buffer
	err := StreamingLists{jsonSerializer(t)}.Encode(l, &got)
	if err == nil || !strings.Contains(err.Error(), "item cannot be encoded") {
		t.Fatalf("got error %v, want the item's", err)
	}
	// Batches before the failing one were written whole; the bufio.Writer may hold some back.
	var want strings.Builder
	want.WriteString(`{"items":[`)
	for i := range failAt - failAt%itemBatch {
		if i > 0 {
			want.WriteByte(',')
		}
		fmt.Fprint(&want, i)
	}
	if !strings.HasPrefix(want.String(), got.String()) {
		t.Errorf("written before the error:\n%.200s\nnot a prefix of the items before it", got.String())
	}
	// Only the encoder's own goroutines: other tests of the package leave servers behind. A
	// goroutine is still on its way out for a moment after its wg.Done, so the count must
	// reach zero soon, not at once.
	encoders := func() int {
		stacks := make([]byte, 1<<20)
		stacks = stacks[:goruntime.Stack(stacks, true)]
		return bytes.Count(stacks, []byte("apiserver.encodeItems.func"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for n := encoders(); n > 0; n = encoders() {
		if time.Now().After(deadline) {
			t.Fatalf("%d encoding goroutines left 5s after the error", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bigItem is a failingItem of about 1 KB, so that the items before failAt fill more than the
// first chunk and reach the response before the failing one.
type bigItem struct{ N int }

func (b bigItem) MarshalJSON() ([]byte, error) {
	if b.N == failAt {
		return nil, errors.New("item cannot be encoded")
	}
	return json.Marshal(strings.Repeat("x", 1000))
}

type bigList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []bigItem `json:"items"`
}

func (l *bigList) DeepCopyObject() runtime.Object { return l }

// TestStreamingListsCutTheResponseAfterTheFirstChunk checks that an item that cannot be encoded
// after part of the list was sent cuts the HTTP response, so that the client reads an error and
// not a 200 that ends half-way, and that before anything was sent the error is returned for the
// apiserver to answer with a status.
func TestStreamingListsCutTheResponseAfterTheFirstChunk(t *testing.T) {
	serializer := StreamingLists{jsonSerializer(t)}
	big := &bigList{}
	for i := range 1000 {
		big.Items = append(big.Items, bigItem{i})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := serializer.Encode(big, w); err != nil {
			// What the apiserver does with an encoding error: a Status after what was written.
			fmt.Fprintf(w, `{"kind":"Status","code":500,"message":%q}`, err.Error())
		}
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("read a whole %d response of %d bytes, want it cut: %.100s…%s", resp.StatusCode, len(body), body, body[max(0, len(body)-100):])
	}
	if len(body) < ChunkSize {
		t.Errorf("cut after %d bytes, before the first chunk (%d) was even sent", len(body), ChunkSize)
	}

	small := &failingList{Items: []failingItem{{failAt}}}
	if err := serializer.Encode(small, io.Discard); err == nil || !strings.Contains(err.Error(), "item cannot be encoded") {
		t.Errorf("nothing sent yet: got %v, want the item's error", err)
	}
}

// BenchmarkListEncoding writes a list of 10,000 GitOpsDeployments through gzip at the level and
// with the encoder withFastGzip uses, as a list response of that size is written, on one core
// and on all. Compare with: benchstat -col /enc
func BenchmarkListEncoding(b *testing.B) {
	var obj gitopsv1alpha1.GitOpsDeployment
	// A GitOpsDeployment as make bench leaves it: created, then given a status, by client-go,
	// so with the two managed fields entries such a write records.
	benchObject, err := os.ReadFile("testdata/gitopsdeployment.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(benchObject, &obj); err != nil {
		b.Fatal(err)
	}
	l := &gitopsv1alpha1.GitOpsDeploymentList{TypeMeta: metav1.TypeMeta{Kind: "GitOpsDeploymentList", APIVersion: "managed-gitops.redhat.com/v1alpha1"}}
	for i := range 10000 {
		item := *obj.DeepCopy()
		item.Name = fmt.Sprintf("bench-%06d", i)
		item.Labels["bench.gitops-service.io/bucket"] = fmt.Sprint(i % 100)
		item.Spec.Source.Path = fmt.Sprintf("environments/overlays/app-%d", i)
		l.Items = append(l.Items, item)
	}
	plain := jsonSerializer(b)
	for _, enc := range []struct {
		name string
		s    runtime.Serializer
	}{{"plain", plain}, {"streaming", StreamingLists{plain}}} {
		for _, procs := range []int{1, goruntime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("enc=%s/procs=%d", enc.name, procs), func(b *testing.B) {
				defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
				gz, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
				for range b.N {
					gz.Reset(io.Discard)
					if err := enc.s.Encode(l, gz); err != nil {
						b.Fatal(err)
					}
					gz.Close()
				}
			})
		}
	}
}
