package storage

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	apistorage "k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
	codec  runtime.Codec
)

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	codec = apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)
}

const testPrefix = "test!"

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

// testOptions are fast enough for the suite's timeouts; compaction only happens when a test
// asks for it, because the suite compares exact history.
var testOptions = Options{
	PollInterval:           100 * time.Millisecond,
	ProgressNotifyInterval: time.Second,
	DisableCompaction:      true,
	TTLInterval:            200 * time.Millisecond,
}

// newTestBackend returns a backend on a fresh database.
func newTestBackend(t testing.TB, opts Options) *Backend {
	t.Helper()
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 20)
	b, err := NewBackend(context.Background(), pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func newPodStore(b *Backend) *Store {
	return b.NewStore(codec, newPod, newPodList, "", "/pods", schema.GroupResource{Resource: "pods"},
		storagetesting.NewPrefixTransformer([]byte(testPrefix), false))
}

func testSetup(t *testing.T) (context.Context, *Store) {
	return context.Background(), newPodStore(newTestBackend(t, testOptions))
}

// withPrefix lets the suite swap the transformer of reads, writes and watches at once.
type withPrefix struct{ *Store }

// The modifier gets a fresh copy of the store's default transformer: copying the one in use
// would race with watchers counting their reads in it.
func (s withPrefix) UpdatePrefixTransformer(modifier storagetesting.PrefixTransformerModifier) func() {
	orig := s.Transformer()
	s.SetTransformer(modifier(storagetesting.NewPrefixTransformer([]byte(testPrefix), false)))
	return func() { s.SetTransformer(orig) }
}

// keyValidation checks what is really stored: no resourceVersion and no selfLink.
func keyValidation(s *Store) storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		var raw []byte
		if err := s.b.pool.QueryRow(ctx, `SELECT value FROM objects WHERE key = $1`, key).Scan(&raw); err != nil {
			t.Fatalf("reading %s: %v", key, err)
		}
		decoded, err := runtime.Decode(codec, raw[len(testPrefix):])
		if err != nil {
			t.Fatalf("decoding stored %s: %v", key, err)
		}
		obj := decoded.(*example.Pod)
		if obj.ResourceVersion != "" {
			t.Errorf("stored object should have empty resource version")
		}
		if obj.SelfLink != "" {
			t.Errorf("stored output should have empty selfLink")
		}
	}
}

// readsValidation checks how many values a list decoded. The page size argument is about
// etcd round trips and has no equivalent here.
func readsValidation(s *Store) storagetesting.CallsValidation {
	return func(t *testing.T, _, estimatedProcessedObjects uint64) {
		if reads := s.Transformer().(*storagetesting.PrefixTransformer).GetReadsAndReset(); reads != estimatedProcessedObjects {
			t.Errorf("unexpected reads: %d, expected: %d", reads, estimatedProcessedObjects)
		}
	}
}

// compaction does what etcd3's test compaction does: one write (RV+1) and history before
// the given RV dropped. It first lets the feed catch up, as a real compaction window would.
func compaction(s *Store) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := apistorage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := compactForTest(ctx, s.b, int64(rv)); err != nil {
			t.Fatalf("compacting: %v", err)
		}
	}
}

func compactForTest(ctx context.Context, b *Backend, rv int64) error {
	if err := waitFeed(ctx, b); err != nil {
		return err
	}
	if _, err := b.pool.Exec(ctx, `UPDATE state SET rv = rv + 1`); err != nil {
		return err
	}
	b.feed.wake()
	return b.compact(ctx, rv)
}

// waitFeed waits until the feed has dispatched everything committed so far.
func waitFeed(ctx context.Context, b *Backend) error {
	var current int64
	if err := b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
		return err
	}
	for {
		b.feed.mu.Lock()
		rv := b.feed.rv
		b.feed.mu.Unlock()
		if rv >= current {
			return nil
		}
		b.feed.wake()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
