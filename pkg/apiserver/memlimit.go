package apiserver

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// Most of gitops-apiserver's heap is the watch cache: every stored object, decoded, plus the
// previous versions of those changed in the cache's last 75 s. With Go's default (GOGC=100)
// the heap grows to twice the live heap before a collection, so the process's RSS is about
// twice the cache. A soft memory limit collects earlier instead; a fixed one would make the
// collector run without pause once the cache alone outgrows it, so the limit follows the
// live heap: max(floor, 1.25 × live), which never costs more collections than GOGC=25. The
// ratio was 1.5 until a status update of all of 100,000 GitOpsDeployments (whose previous
// versions the cache then holds too: about 340 MB live) put RSS at 533 MiB; collecting more
// often is the price of staying under 512 MiB there.
const liveHeapRatio = 1.25

// GOGC stays Go's 100 below the limit. 400 was tried (issue 37): garbage collection went from
// 14.6% to 4.1% of this server's CPU while it served make bench's gets, but the get rate
// against the CRD did not move beyond the machine's noise (1.00× in a profile; 1.03× with
// APF off too), and the fleet benchmark's server at 1,000 tenants grew from 228 to 392 MiB.

// memoryLimitPeriod is how often the limit follows the live heap.
const memoryLimitPeriod = 10 * time.Second

// runSoftMemoryLimit keeps the Go runtime's soft memory limit at max(floor, 1.25 × live heap)
// until ctx ends. It does nothing when floor is not positive or GOMEMLIMIT is set: the
// operator's own limit wins.
func runSoftMemoryLimit(ctx context.Context, floor int64) {
	if floor <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() {
		metrics.Read(sample)
		limit := floor
		if sample[0].Value.Kind() == metrics.KindUint64 {
			limit = max(floor, int64(float64(sample[0].Value.Uint64())*liveHeapRatio))
		}
		debug.SetMemoryLimit(limit)
	}
	set()
	klog.InfoS("Soft memory limit follows the live heap", "floor", floor)
	// Not immediately: wait.Until would set the limit again at once, from a goroutine that
	// could overwrite a limit set in between.
	go wait.PollUntilContextCancel(ctx, memoryLimitPeriod, false, func(context.Context) (bool, error) {
		set()
		return false, nil
	})
}
