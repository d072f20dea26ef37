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
	t.Setenv("GOGC", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	debug.SetMemoryLimit(math.MaxInt64)
	runSoftMemoryLimit(ctx, 0)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("floor 0: limit %d, want Go's default (none)", got)
	}
	const floor = 1 << 40 // far above this test's live heap
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetMemoryLimit(-1); got != floor {
		t.Errorf("limit %d, want the floor %d", got, floor)
	}
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GC percent %d, want %d", got, gcPercent)
	}
	t.Setenv("GOGC", "100")
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d, want it left alone", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want it left alone", got)
	}
}
