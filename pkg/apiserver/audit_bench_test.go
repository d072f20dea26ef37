package apiserver

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// BenchmarkWritePathAudit measures the write path through the server (HTTP, admission,
// validation, storage) with and without the audit trail, each on a fresh database, in one
// invocation: 32 clients patch the labels of 1,000 GitOpsDeployments. The trail's cost is the
// ratio of the two; each op records its latency for the percentiles.
func BenchmarkWritePathAudit(b *testing.B) {
	for _, audited := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", audited), func(b *testing.B) {
			cfg := startServerWithOptions(b, pgtest.NewDatabase(b), func(o *Options) { o.Postgres.AuditTrail = audited }, nil)
			cfg.QPS, cfg.Burst = -1, 0
			client := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().GitOpsDeployments("bench")
			ctx := context.Background()
			const objects = 1000
			for i := 0; i < objects; i++ {
				d := &gitopsv1alpha1.GitOpsDeployment{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d-%d", i), Namespace: "bench"},
					Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
						Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
						Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
					},
				}
				if _, err := client.Create(ctx, d, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var n atomic.Int64
			var mu sync.Mutex
			latencies := make([]time.Duration, 0, b.N)
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					i := n.Add(1)
					patch := fmt.Sprintf(`{"metadata":{"labels":{"n":"%d"}}}`, i)
					started := time.Now()
					_, err := client.Patch(ctx, fmt.Sprintf("d-%d", i%objects), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
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
