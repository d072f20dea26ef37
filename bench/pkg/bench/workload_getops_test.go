package bench

import "testing"

// The get step makes whole passes over the objects, at least GetMin gets, one pass when N is
// as large.
func TestGetOps(t *testing.T) {
	for _, c := range []struct{ n, min, want int }{
		{1000, 10000, 10000},
		{1000, 0, 1000},
		{3000, 10000, 12000},
		{10000, 10000, 10000},
		{100000, 10000, 100000},
		{0, 10000, 0},
	} {
		if got := (&Workload{N: c.n, GetMin: c.min}).getOps(); got != c.want {
			t.Errorf("N=%d GetMin=%d: %d gets, want %d", c.n, c.min, got, c.want)
		}
	}
}
