package apiserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/internal/listjson"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// TestLargeResponsesAreGzipped checks withFastGzip against the apiserver's own rule: a GET
// that accepts gzip is compressed when its first write is over 128 KiB, and decompresses to
// the bytes an uncompressed GET gets; small responses and watches are not compressed.
func TestLargeResponsesAreGzipped(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().GitOpsDeployments("jane")
	for i := range 200 { // about 1 KB of JSON each
		d := &gitopsv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%03d", i), Namespace: "jane"},
			Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
				Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: fmt.Sprintf("deploy/%d", i)},
				Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		if _, err := client.Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, acceptEncoding string) (body []byte, contentEncoding string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json")
		if acceptEncoding != "" {
			// Set by hand, so the transport hands the body over as it came.
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r io.Reader = resp.Body
		if path == listPath+"?watch=true" {
			r = io.LimitReader(resp.Body, 100) // the first event is enough
		}
		body, err = io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return body, resp.Header.Get("Content-Encoding")
	}

	plain, enc := get(listPath, "")
	if enc != "" || len(plain) <= gzipThreshold {
		t.Fatalf("uncompressed list: Content-Encoding %q, %d bytes; want none and over %d", enc, len(plain), gzipThreshold)
	}
	compressed, enc := get(listPath, "deflate, gzip")
	if enc != "gzip" {
		t.Fatalf("list accepting gzip: Content-Encoding %q, want gzip", enc)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain) {
		t.Errorf("decompressed list (%d bytes) differs from the uncompressed one (%d bytes)", len(unzipped), len(plain))
	}
	if len(compressed) >= len(plain)/4 {
		t.Errorf("compressed list is %d bytes of %d", len(compressed), len(plain))
	}

	if body, enc := get(listPath+"/app-007", "gzip"); enc != "" || !strings.Contains(string(body), `"name":"app-007"`) {
		t.Errorf("small object: Content-Encoding %q, body %.100s", enc, body)
	}
	if body, enc := get(listPath+"?watch=true", "gzip"); enc != "" || !strings.HasPrefix(string(body), `{"type":"ADDED"`) {
		t.Errorf("watch: Content-Encoding %q, body %.100s", enc, body)
	}
}

const listPath = "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/jane/gitopsdeployments"

// TestFastGzipTakesOverFromTheAPIServer checks that the handlers behind withFastGzip never
// see the client's gzip (so k8s.io/apiserver's slower compress/gzip never runs) and that the
// status and headers they set survive the deferred decision.
func TestFastGzipTakesOverFromTheAPIServer(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), (gzipThreshold/16)+1)
	handler := withFastGzip(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ae := req.Header.Get("Accept-Encoding"); strings.Contains(ae, "gzip") && req.URL.Query().Get("watch") == "" {
			t.Errorf("the apiserver saw Accept-Encoding %q", ae)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		w.Write(big)
		w.Write(big)
	}))
	for _, tc := range []struct {
		query, acceptEncoding, wantEncoding string
	}{
		{"", "gzip", "gzip"},
		{"", "br", ""},
		{"?watch=1", "gzip", ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/apis/x"+tc.query, nil)
		req.Header.Set("Accept-Encoding", tc.acceptEncoding)
		handler.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding"); got != tc.wantEncoding || rec.Code != http.StatusAccepted ||
			rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Encoding %q status %d Content-Type %q, want %q 202 application/json",
				tc.query, tc.acceptEncoding, got, rec.Code, rec.Header().Get("Content-Type"), tc.wantEncoding)
			continue
		}
		body := rec.Body.Bytes()
		if tc.wantEncoding == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(body, append(append([]byte{}, big...), big...)) {
			t.Errorf("%s %s: body of %d bytes differs", tc.query, tc.acceptEncoding, len(body))
		}
	}
}

// writeSizes records the size of every write a handler's compressed body makes.
type writeSizes struct {
	*httptest.ResponseRecorder
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.ResponseRecorder.Write(p)
}

// TestCompressedBodyGoesOutInLargeWrites checks that the compressor's small writes reach the
// connection gathered into writes of gzipOutputBuffer bytes, and that what they gather is the
// whole body.
func TestCompressedBodyGoesOutInLargeWrites(t *testing.T) {
	var body bytes.Buffer
	for i := range 60000 { // hex compresses to about half: a body of many output buffers
		fmt.Fprintf(&body, "%016x", uint64(i)*0x9e3779b97f4a7c15)
	}
	handler := withFastGzip(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for chunk := range slices.Chunk(body.Bytes(), listjson.ChunkSize) {
			if _, err := w.Write(chunk); err != nil {
				t.Error(err)
			}
		}
	}))
	req := httptest.NewRequest(http.MethodGet, listPath, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := &writeSizes{ResponseRecorder: httptest.NewRecorder()}
	handler.ServeHTTP(rec, req)
	if enc := rec.Header().Get("Content-Encoding"); enc != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", enc)
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body.Bytes()) {
		t.Fatalf("decompressed %d bytes, not the %d written", len(got), body.Len())
	}
	if len(rec.sizes) < 4 {
		t.Fatalf("writes %v, want several", rec.sizes)
	}
	for i, n := range rec.sizes[:len(rec.sizes)-1] {
		if n < gzipOutputBuffer {
			t.Fatalf("write %d of %d is %d bytes, want at least %d (writes %v)", i, len(rec.sizes), n, gzipOutputBuffer, rec.sizes)
		}
	}
}
