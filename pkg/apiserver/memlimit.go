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

// gcPercentUnderLimit is GOGC while the soft limit is in force. The limit is what bounds memory
// (the heap never grows past it, whatever GOGC says); below it, GOGC only decides how often a
// small heap is collected. With Go's 100 a server holding a few thousand objects (tens of MB
// live) is marked every time its heap doubles: at 2,000 gets/s that was 15% of its CPU
// (runtime.gcBgMarkWorker in a 60 s profile of make bench's gets). 400 lets the heap grow to
// five times the live heap, never past the limit, and collects a quarter as often.
const gcPercentUnderLimit = 400

// memoryLimitPeriod is how often the limit follows the live heap.
const memoryLimitPeriod = 10 * time.Second

// runSoftMemoryLimit keeps the Go runtime's soft memory limit at max(floor, 1.25 × live heap)
// until ctx ends, and GOGC at gcPercentUnderLimit unless GOGC is set. It does nothing when
// floor is not positive or GOMEMLIMIT is set: the operator's own limit wins, and without a
// limit a higher GOGC would be an unbounded heap.
func runSoftMemoryLimit(ctx context.Context, floor int64) {
	if floor <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercentUnderLimit)
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
