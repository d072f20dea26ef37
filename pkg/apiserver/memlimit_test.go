package apiserver

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	debug.SetMemoryLimit(math.MaxInt64)
	runSoftMemoryLimit(ctx, 0)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("floor 0: limit %d, want Go's default (none)", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("floor 0: GOGC %d, want it left at 100: without a limit a higher GOGC has no bound", got)
	}
	const floor = 1 << 40 // far above this test's live heap
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetMemoryLimit(-1); got != floor {
		t.Errorf("limit %d, want the floor %d", got, floor)
	}
	if got := debug.SetGCPercent(100); got != gcPercentUnderLimit {
		t.Errorf("under the limit: GOGC %d, want %d", got, gcPercentUnderLimit)
	}
	t.Setenv("GOGC", "50")
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GOGC %d, want the runtime's (from the environment) left alone", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want it left alone", got)
	}
}
