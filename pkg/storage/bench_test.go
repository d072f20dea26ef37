package storage

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	apistorage "k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
)

// benchParallelism times GOMAXPROCS is the number of concurrent clients in the parallel
// benchmarks, the raw INSERT ceiling included.
const benchParallelism = 8

var benchOptions = Options{DisableCompaction: true}

func benchStore(b *testing.B) *Store {
	return newPodStore(newTestBackend(b, benchOptions))
}

func benchPod(name string) *example.Pod {
	return &example.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: name, Labels: map[string]string{"app": "bench"}},
		Spec:       example.PodSpec{NodeName: "node-1", ServiceAccountName: "default"},
	}
}

func BenchmarkCreate(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			name := fmt.Sprintf("pod-%d", n.Add(1))
			if err := s.Create(ctx, "/pods/bench/"+name, benchPod(name), nil, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRawInsert is the ceiling for Create: one autocommit single-row INSERT of a
// comparable row through pgx, at the same concurrency, with no RV serialisation.
func BenchmarkRawInsert(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, err := s.b.pool.Exec(ctx, `CREATE TABLE raw_insert (id bigserial PRIMARY KEY, key text COLLATE "C" UNIQUE, value bytea)`); err != nil {
		b.Fatal(err)
	}
	value, err := runtime.Encode(codec, benchPod("pod"))
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.b.pool.Exec(ctx, `INSERT INTO raw_insert (key, value) VALUES ($1, $2)`,
				fmt.Sprintf("/pods/bench/pod-%d", n.Add(1)), value); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	seed(b, s, 1000)
	var n atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		out := &example.Pod{}
		for pb.Next() {
			key := fmt.Sprintf("/pods/bench/pod-%d", n.Add(1)%1000)
			if err := s.Get(ctx, key, apistorage.GetOptions{}, out); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGuaranteedUpdate(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	seed(b, s, 1000)
	var n, gen atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		out := &example.Pod{}
		for pb.Next() {
			key := fmt.Sprintf("/pods/bench/pod-%d", n.Add(1)%1000)
			err := s.GuaranteedUpdate(ctx, key, out, false, nil, apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				pod := obj.(*example.Pod)
				pod.Spec.NodeName = fmt.Sprintf("node-%d", gen.Add(1))
				return pod, nil
			}), nil)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGuaranteedUpdateLabels is BenchmarkGuaranteedUpdate with a label change in every
// update: one pair of object_labels deleted and one inserted.
func BenchmarkGuaranteedUpdateLabels(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	seed(b, s, 1000)
	var n, gen atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		out := &example.Pod{}
		for pb.Next() {
			key := fmt.Sprintf("/pods/bench/pod-%d", n.Add(1)%1000)
			err := s.GuaranteedUpdate(ctx, key, out, false, nil, apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
				pod := obj.(*example.Pod)
				pod.Labels = map[string]string{"app": "bench", "group": fmt.Sprintf("g%d", gen.Add(1)%100)}
				return pod, nil
			}), nil)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetList10k(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	seed(b, s, 10000)
	for _, bc := range []struct {
		name  string
		pred  apistorage.SelectionPredicate
		items int
	}{
		{"all", apistorage.Everything, 10000},
		{"label-1pct", apistorage.SelectionPredicate{Label: labels.SelectorFromSet(labels.Set{"group": "g7"}), GetAttrs: podLabels}, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				list := &example.PodList{}
				if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: bc.pred}, list); err != nil {
					b.Fatal(err)
				}
				if len(list.Items) != bc.items {
					b.Fatalf("listed %d, want %d", len(list.Items), bc.items)
				}
			}
		})
	}
}

// BenchmarkConsistentList is a resourceVersion="" list of n pods as gitops-apiserver serves
// it, behind the watch cache: src=storage is what the cacher did before
// ClaimRequestWatchProgress (delegate to the store: read and decode every row), src=cache is
// what it does now (read the current RV, wait for the cache to have it, list from memory).
// Compare with: benchstat -col /src
func BenchmarkConsistentList(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkConsistentList(b, n) })
	}
}

func benchmarkConsistentList(b *testing.B, n int) {
	s := benchStore(b)
	ctx := context.Background()
	seed(b, s, n)
	ClaimRequestWatchProgress()
	c, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:        s,
		Versioner:      apistorage.APIObjectVersioner{},
		GroupResource:  schema.GroupResource{Resource: "pods"},
		ResourcePrefix: "/pods",
		KeyFunc:        func(obj runtime.Object) (string, error) { return apistorage.NamespaceKeyFunc("/pods", obj) },
		GetAttrsFunc:   podAttrs,
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		Codec:          codecs.LegacyCodec(examplev1.SchemeGroupVersion),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Stop)
	if err := c.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	for _, src := range []struct {
		name  string
		store apistorage.Interface
	}{{"storage", s}, {"cache", c}, {"served", &labelIndexedCache{Cacher: c, store: s, maxRows: selectiveListRows}}} {
		for _, bc := range []struct {
			name  string
			pred  apistorage.SelectionPredicate
			items int
		}{
			{"all", apistorage.Everything, n},
			{"label-1pct", apistorage.SelectionPredicate{Label: labels.SelectorFromSet(labels.Set{"group": "g7"}), Field: fields.Everything(), GetAttrs: podAttrs}, n / 100},
		} {
			b.Run("src="+src.name+"/sel="+bc.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					list := &example.PodList{}
					if err := src.store.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: bc.pred}, list); err != nil {
						b.Fatal(err)
					}
					if len(list.Items) != bc.items {
						b.Fatalf("listed %d, want %d", len(list.Items), bc.items)
					}
				}
			})
		}
	}
}

func podLabels(obj runtime.Object) (labels.Set, fields.Set, error) {
	return labels.Set(obj.(*example.Pod).Labels), nil, nil
}

// BenchmarkWriteToWatch measures, for one writer and one watcher on the same process, the
// time from the start of a Create to the arrival of its event.
func BenchmarkWriteToWatch(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	w, err := s.Watch(ctx, "/pods", apistorage.ListOptions{ResourceVersion: "1", Recursive: true, Predicate: apistorage.Everything})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("pod-%d", i)
		started := time.Now()
		if err := s.Create(ctx, "/pods/bench/"+name, benchPod(name), nil, 0); err != nil {
			b.Fatal(err)
		}
		ev := <-w.ResultChan()
		latencies = append(latencies, time.Since(started))
		if ev.Object.(*example.Pod).Name != name {
			b.Fatalf("unexpected event %+v", ev)
		}
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
}

// seed bulk-loads n pods (labelled group=g<i%100>) with COPY, bypassing the per-write
// transaction so that large fixtures are quick to build.
func seed(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	rows := make([][]any, n)
	for i := 0; i < n; i++ {
		pod := benchPod(fmt.Sprintf("pod-%d", i))
		pod.Labels = map[string]string{"app": "bench", "group": fmt.Sprintf("g%d", i%100)}
		data, err := runtime.Encode(codec, pod)
		if err != nil {
			b.Fatal(err)
		}
		key := "/pods/bench/" + pod.Name
		r, err := s.newRecord(ctx, key, pod, data, 0)
		if err != nil {
			b.Fatal(err)
		}
		rows[i] = []any{key, "/pods", r.namespace, r.name, r.labels, r.value, int64(i + 2), int64(i + 2)}
	}
	if _, err := s.b.pool.CopyFrom(ctx, pgx.Identifier{"objects"},
		[]string{"key", "resource", "namespace", "name", "labels", "value", "create_rv", "mod_rv"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	if _, err := s.b.pool.Exec(ctx, `UPDATE state SET rv = $1`, int64(n+1)); err != nil {
		b.Fatal(err)
	}
	// The COPY's triggers filled object_labels. Then what autovacuum would do a moment later:
	// set the visibility map that index-only scans rely on.
	for _, stmt := range []string{`ANALYZE objects`, `VACUUM ANALYZE object_labels`} {
		if _, err := s.b.pool.Exec(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPagedList reads continue pages of 500 of 100,000 pods from the store, as a
// limit=500 list does after its first page (which the watch cache serves): each page reads at
// the first page's RV, after writes that followed it, and counts the items that remain
// (remainingItemCount). One op is one page.
func BenchmarkPagedList(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	const n, pageSize, pages = 100000, 500, 20
	seed(b, s, n)
	pred := func(cont string) apistorage.SelectionPredicate {
		return apistorage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything(), GetAttrs: podAttrs, Limit: pageSize, Continue: cont}
	}
	first := &example.PodList{}
	if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: pred("")}, first); err != nil {
		b.Fatal(err)
	}
	// Writes after the first page: the pages must see through them to the first page's RV.
	for i := 0; i < 200; i++ {
		key := fmt.Sprintf("/pods/bench/pod-%d", i*397)
		if err := s.GuaranteedUpdate(ctx, key, &example.Pod{}, false, nil, apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			obj.(*example.Pod).Labels["touched"] = "yes"
			return obj, nil
		}), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cont := first.Continue
	for i := 0; i < b.N; i++ {
		if i%pages == 0 {
			cont = first.Continue
		}
		list := &example.PodList{}
		if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: pred(cont)}, list); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) != pageSize {
			b.Fatalf("page of %d items", len(list.Items))
		}
		if want := int64(n - pageSize*(i%pages+2)); list.RemainingItemCount != nil && *list.RemainingItemCount != want {
			b.Fatalf("remainingItemCount %d, want %d", *list.RemainingItemCount, want)
		}
		cont = list.Continue
	}
}

// BenchmarkAuditTrail is BenchmarkGuaranteedUpdate with and without the audit trail, each on
// a fresh database, in one invocation: the trail's cost is the ratio of the two. Each op
// records its latency for the percentiles.
func BenchmarkAuditTrail(b *testing.B) {
	for _, audited := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", audited), func(b *testing.B) {
			backend := newTestBackend(b, benchOptions)
			if audited {
				trail := testAudit
				trail.Retention = time.Hour
				backend.SetAuditTrail(trail)
			}
			s := newPodStore(backend)
			ctx := request.WithUser(context.Background(), &user.DefaultInfo{Name: "system:serviceaccount:team-a:deployer",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}})
			ctx = request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: "update", Resource: "pods"})
			seed(b, s, 1000)
			var n, gen atomic.Int64
			var mu sync.Mutex
			latencies := make([]time.Duration, 0, b.N)
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				out := &example.Pod{}
				var mine []time.Duration
				for pb.Next() {
					key := fmt.Sprintf("/pods/bench/pod-%d", n.Add(1)%1000)
					started := time.Now()
					err := s.GuaranteedUpdate(ctx, key, out, false, nil, apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
						pod := obj.(*example.Pod)
						pod.Spec.NodeName = fmt.Sprintf("node-%d", gen.Add(1))
						return pod, nil
					}), nil)
					mine = append(mine, time.Since(started))
					if err != nil {
						b.Error(err)
						return
					}
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds()), "p99-µs")
		})
	}
}
