package apiserver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"

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
	streaming := streamingLists{plain}
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
			if want.Len() > listChunk {
				if len(got.sizes) < 2 || got.sizes[0] <= 128<<10 {
					t.Errorf("%d bytes written as %v, want chunks, the first above 128 KiB", want.Len(), got.sizes)
				}
			}
		})
	}
}

// BenchmarkListEncoding writes a list of 10,000 GitOpsDeployments through gzip, as a list
// response of that size is written. Compare with: benchstat -col /enc
func BenchmarkListEncoding(b *testing.B) {
	l := &gitopsv1alpha1.GitOpsDeploymentList{TypeMeta: metav1.TypeMeta{Kind: "GitOpsDeploymentList", APIVersion: "managed-gitops.redhat.com/v1alpha1"}}
	for i := range 10000 {
		l.Items = append(l.Items, gitopsv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%06d", i), Namespace: "gitops-bench-a",
				Labels: map[string]string{"bench.gitops-service.io/bucket": fmt.Sprint(i % 100), "app.kubernetes.io/name": "bench"}},
			Spec: gitopsv1alpha1.GitOpsDeploymentSpec{Source: gitopsv1alpha1.ApplicationSource{
				RepoURL: "https://github.com/example/gitops-1", Path: fmt.Sprintf("environments/overlays/app-%d", i), TargetRevision: "main"}},
		})
	}
	plain := jsonSerializer(b)
	for _, enc := range []struct {
		name string
		s    runtime.Serializer
	}{{"plain", plain}, {"streaming", streamingLists{plain}}} {
		b.Run("enc="+enc.name, func(b *testing.B) {
			gz := gzip.NewWriter(io.Discard)
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
