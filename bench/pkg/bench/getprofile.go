package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// ProcCPU is the CPU time (user + system) a process and, for PostgreSQL, its children have used
// so far, from /proc/<pid>/stat.
func ProcCPU(pid int, withChildren bool) (time.Duration, error) {
	total, err := procStatCPU(pid)
	if err != nil || !withChildren {
		return total, err
	}
	children, err := ChildPIDs(pid)
	if err != nil {
		return total, err
	}
	for _, child := range children {
		if c, err := procStatCPU(child); err == nil {
			total += c
		}
	}
	return total, nil
}

// ChildPIDs is the PIDs of the processes whose parent is pid (field 4 of /proc/<pid>/stat): a
// PostgreSQL postmaster's backends and auxiliary processes, found by PID and not by name.
func ChildPIDs(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if ppid, ok := statField(string(raw), 4); ok && ppid == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out, nil
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100

func procStatCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, field := range []int{14, 15} { // utime, stime
		v, ok := statField(string(raw), field)
		if !ok {
			return 0, fmt.Errorf("/proc/%d/stat: no field %d", pid, field)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// statField returns the n-th (1-based, as in proc(5)) field of a /proc/<pid>/stat line; the
// command (field 2) may hold spaces and is in parentheses.
func statField(stat string, n int) (string, bool) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return "", false
	}
	if n <= 2 {
		return "", false
	}
	f := strings.Fields(stat[end+1:])
	if n-3 >= len(f) {
		return "", false
	}
	return f[n-3], true
}

// ProfiledProcess is a process whose CPU time the get profile measures, and optionally a
// pprof endpoint to take a CPU profile from while the gets run.
type ProfiledProcess struct {
	Name         string
	PID          int
	WithChildren bool // PostgreSQL: the postmaster's backends do the work
	// Profile, if set, fetches a CPU profile of the given length.
	Profile func(ctx context.Context, seconds int) ([]byte, error)
}

// GetProfile is what one target's gets cost: throughput, latencies and CPU time per get of
// every process, over every round.
type GetProfile struct {
	Target  string
	Summary Summary
	// CPUPerGet is each process's CPU time divided by the gets completed, in microseconds.
	CPUPerGet map[string]float64
	Profiles  []string

	samples Samples
	cpu     map[string]time.Duration
}

// FillForGets stores n objects in t and gets each once (connections, caches).
func FillForGets(ctx context.Context, t *Target, n, c int) error {
	if s, err := parallel(ctx, n, c, func(ctx context.Context, i int) error {
		_, err := t.objects.create(ctx, t.newObject(i))
		return err
	}); err != nil {
		return tolerate(StepCreate, s, err, n)
	}
	_, err := parallel(ctx, n, c, func(ctx context.Context, i int) error {
		return t.objects.get(ctx, ObjectName(i))
	})
	return err
}

// ProfileGets runs gets of the n objects FillForGets stored in t with c clients for d while it
// measures every process's CPU time, and adds the round to into (nil: a new profile). When dir
// is set, it takes the processes' CPU profiles too and writes them to dir as
// cpu-<target>-<process>.pb.gz.
func ProfileGets(ctx context.Context, t *Target, n, c int, d time.Duration, procs []ProfiledProcess, dir string, into *GetProfile) (*GetProfile, error) {
	out := into
	if out == nil {
		out = &GetProfile{Target: t.Name, CPUPerGet: map[string]float64{}, cpu: map[string]time.Duration{}}
	}
	var wg sync.WaitGroup
	var profErr error
	var mu sync.Mutex
	seconds := int(d / time.Second)
	for _, p := range procs {
		if p.Profile == nil || dir == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := p.Profile(ctx, seconds)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				profErr = fmt.Errorf("profile of %s: %w", p.Name, err)
				return
			}
			file := filepath.Join(dir, fmt.Sprintf("cpu-%s-%s.pb.gz", t.Name, p.Name))
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				profErr = err
				return
			}
			out.Profiles = append(out.Profiles, file)
		}()
	}
	before := map[string]time.Duration{}
	for _, p := range procs {
		cpu, err := ProcCPU(p.PID, p.WithChildren)
		if err != nil {
			return nil, fmt.Errorf("CPU time of %s: %w", p.Name, err)
		}
		before[p.Name] = cpu
	}
	const client = "client (gitops-bench)"
	before[client], _ = ProcCPU(os.Getpid(), false)

	var (
		next   atomic.Int64
		lmu    sync.Mutex
		lat    []time.Duration
		errs   int
		first  error
		start  = time.Now()
		stopAt = start.Add(d)
		gwg    sync.WaitGroup
	)
	for range c {
		gwg.Add(1)
		go func() {
			defer gwg.Done()
			var mine []time.Duration
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				i := int(next.Add(1)-1) % n
				t0 := time.Now()
				err := t.objects.get(ctx, ObjectName(i))
				took := time.Since(t0)
				if err != nil {
					lmu.Lock()
					errs++
					if first == nil {
						first = err
					}
					lmu.Unlock()
					continue
				}
				mine = append(mine, took)
			}
			lmu.Lock()
			lat = append(lat, mine...)
			lmu.Unlock()
		}()
	}
	gwg.Wait()
	wall := time.Since(start)
	after := map[string]time.Duration{}
	after[client], _ = ProcCPU(os.Getpid(), false)
	for _, p := range procs {
		cpu, err := ProcCPU(p.PID, p.WithChildren)
		if err != nil {
			return nil, fmt.Errorf("CPU time of %s: %w", p.Name, err)
		}
		after[p.Name] = cpu
	}
	wg.Wait()
	if first != nil && errs*100 > len(lat) {
		return nil, fmt.Errorf("gets: %d failed, first: %w", errs, first)
	}
	out.samples.Merge(Samples{Latencies: lat, Errors: errs, Wall: wall})
	out.Summary = out.samples.Summarize()
	for name, cpu := range after {
		out.cpu[name] += cpu - before[name]
		if out.Summary.Ops > 0 {
			out.CPUPerGet[name] = float64(out.cpu[name].Microseconds()) / float64(out.Summary.Ops)
		}
	}
	return out, profErr
}

// PprofCPU returns a function that fetches a CPU profile from base's /debug/pprof/profile with
// the client configuration cfg.
func PprofCPU(cfg *rest.Config, base string) (func(ctx context.Context, seconds int) ([]byte, error), error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, seconds int) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(base, "/"), seconds), nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", resp.Status, body)
		}
		return body, nil
	}, nil
}

// GetProfileTable renders the profiles as a Markdown table: one row per target, one column
// per process, CPU microseconds per get.
func GetProfileTable(profiles []*GetProfile) string {
	names := map[string]bool{}
	for _, p := range profiles {
		for k := range p.CPUPerGet {
			names[k] = true
		}
	}
	var cols []string
	for k := range names {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	var b strings.Builder
	b.WriteString("| target | gets/s | p50 / p99 ms | " + strings.Join(cols, " | ") + " | total |\n")
	b.WriteString("|---|---|---|" + strings.Repeat("---|", len(cols)+1) + "\n")
	for _, p := range profiles {
		var total float64
		fmt.Fprintf(&b, "| %s | %.0f | %s / %s |", p.Target, p.Summary.Throughput, msText(p.Summary.P50), msText(p.Summary.P99))
		for _, c := range cols {
			v, ok := p.CPUPerGet[c]
			if !ok {
				b.WriteString(" – |")
				continue
			}
			total += v
			fmt.Fprintf(&b, " %.0f µs |", v)
		}
		fmt.Fprintf(&b, " %.0f µs |\n", total)
	}
	return b.String()
}

func msText(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}
