package apiserver

import (
	"context"
	"math"
	"runtime/debug"
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
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
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	runSoftMemoryLimit(ctx, floor)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: limit %d, want it left alone", got)
	}
}
