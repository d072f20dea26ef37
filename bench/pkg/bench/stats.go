// Package bench drives one API workload through client-go against several targets (the
// aggregated GitOps API, the same kind as a CRD, gitops-apiserver directly) and reports
// throughput and latency percentiles for each step.
package bench

import (
	"math"
	"os"
	"sort"
	"strings"
	"time"
)

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted, by linear interpolation
// between the closest ranks (the method of NumPy's default and of most load tools). It returns
// 0 for an empty slice. sorted must be in ascending order.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case p <= 0:
		return sorted[0]
	case p >= 100:
		return sorted[n-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := lo + 1
	if hi >= n {
		return sorted[n-1]
	}
	frac := rank - float64(lo)
	return sorted[lo] + time.Duration(math.Round(frac*float64(sorted[hi]-sorted[lo])))
}

// Summary is the result of one workload step against one target.
type Summary struct {
	Ops        int           `json:"ops"`
	Errors     int           `json:"errors"`
	Wall       time.Duration `json:"wall"`
	Throughput float64       `json:"throughput"` // ops per second of wall time
	P50        time.Duration `json:"p50"`
	P90        time.Duration `json:"p90"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
}

// Samples collects the latencies of one step; Wall is the sum of the wall times of the runs
// merged into it, so that throughput over several rounds is total ops over total time.
type Samples struct {
	Latencies []time.Duration
	Errors    int
	Wall      time.Duration
}

// Merge appends other's samples and wall time.
func (s *Samples) Merge(other Samples) {
	s.Latencies = append(s.Latencies, other.Latencies...)
	s.Errors += other.Errors
	s.Wall += other.Wall
}

// Summarize computes throughput and percentiles. It does not modify s.
func (s Samples) Summarize() Summary {
	sorted := append([]time.Duration(nil), s.Latencies...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	sum := Summary{
		Ops:    len(sorted),
		Errors: s.Errors,
		Wall:   s.Wall,
		P50:    Percentile(sorted, 50),
		P90:    Percentile(sorted, 90),
		P99:    Percentile(sorted, 99),
	}
	if len(sorted) > 0 {
		sum.Max = sorted[len(sorted)-1]
	}
	if s.Wall > 0 {
		sum.Throughput = float64(len(sorted)) / s.Wall.Seconds()
	}
	return sum
}

// Ratio returns a/b, or NaN when b is zero.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages, for reports: figures taken on a
// busy shared machine are read differently.
func LoadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
