package agentbench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/bench/pkg/bench"
)

// The fleet benchmark's scale mode (issue 37): the fleet's tenants grown in steps of T, each
// tenant with D automated GitOpsDeployments, placed by the service over every instance of the
// fleet; at each step the time until all are Synced and Healthy, the balance, and what every
// process of the stack costs (CPU seconds, resident memory, from /proc by the PIDs the stack
// recorded) and the watches open on kube-apiserver(s) and gitops-apiserver. Optionally a last
// step adds deployments to the tenants (T fixed, T×D grows), which separates the per-deployment
// cost from the per-tenant one. Then one instance is drained (the fleet mode's drain). The
// report fits cost = fixed + per-tenant × T + per-deployment × T×D to the steps and
// extrapolates (fleet_scale_report.go).

// FleetScaleConfig is one scale run. FleetConfig.Tenants and Deployments are unused: Steps and
// PerTenant say what to create.
type FleetScaleConfig struct {
	FleetConfig
	// Steps are the tenant counts, ascending; the tenants of a step stay for the next.
	Steps []int
	// PerTenant is D, the deployments of each tenant; ExtraPerTenant, when positive, the
	// deployments added to each tenant of the last step in a step of their own.
	PerTenant, ExtraPerTenant int
	// Settle is waited after each step's Synced before the costs are read, and its CPU is the
	// steady-state CPU of that step.
	Settle time.Duration
	// Sample reads the stack's costs.
	Sample func(context.Context) (FleetCosts, error)
}

// ProcessCost is what one process of the stack (PostgreSQL: the postmaster and its children)
// has used so far.
type ProcessCost struct {
	CPU time.Duration // user + system, since it started
	// RSS and HWM are VmRSS and VmHWM (peak), bytes. For PostgreSQL, RSS sums its processes'
	// PSS (each shared page divided among the processes that map it: the shared buffers count
	// once), HWM their VmHWM (an upper bound).
	RSS, HWM int64
	Procs    int // processes summed
}

// FleetCosts is one sample of the stack's costs.
type FleetCosts struct {
	At        time.Time
	Processes map[string]ProcessCost // by the name of its PID file
	// Watches in flight (apiserver_longrunning_requests{verb="WATCH"}) on the stack's
	// kube-apiserver, the remote cluster's and gitops-apiserver.
	KubeWatches, RemoteWatches, GitOpsWatches float64
	GitOpsWatchesByResource                   map[string]float64
}

// FleetSampler reads a local stack's costs: the processes by the PIDs of LocalDir/pids, the
// watches from the /metrics of the stack's kube-apiserver (Kube), the remote one (Remote, may
// be nil) and gitops-apiserver (GitOpsMetrics).
type FleetSampler struct {
	LocalDir      string
	Kube, Remote  kubernetes.Interface
	GitOpsMetrics func(context.Context) (string, error)
}

// withChildren names the processes whose children are theirs to count: PostgreSQL does its
// work in one backend per connection.
var withChildren = map[string]bool{"postgres": true}

// Sample reads every recorded process and the watches.
func (s FleetSampler) Sample(ctx context.Context) (FleetCosts, error) {
	c := FleetCosts{At: time.Now(), Processes: map[string]ProcessCost{}}
	files, err := filepath.Glob(filepath.Join(s.LocalDir, "pids", "*.pid"))
	if err != nil {
		return c, err
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		raw, err := os.ReadFile(f)
		if err != nil {
			return c, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			return c, fmt.Errorf("%s: %w", f, err)
		}
		cost, err := processCost(pid, withChildren[name])
		if err != nil {
			return c, fmt.Errorf("%s (PID %d): %w", name, pid, err)
		}
		c.Processes[name] = cost
	}
	if c.KubeWatches, _, err = APIServerWatches(ctx, s.Kube); err != nil {
		return c, err
	}
	if s.Remote != nil {
		if c.RemoteWatches, _, err = APIServerWatches(ctx, s.Remote); err != nil {
			return c, fmt.Errorf("remote: %w", err)
		}
	}
	if s.GitOpsMetrics != nil {
		text, err := s.GitOpsMetrics(ctx)
		if err != nil {
			return c, fmt.Errorf("gitops-apiserver /metrics: %w", err)
		}
		samples, err := ParseMetricSamples(text, WatchMetric)
		if err != nil {
			return c, fmt.Errorf("gitops-apiserver /metrics: %w", err)
		}
		c.GitOpsWatches, c.GitOpsWatchesByResource = Watches(samples)
	}
	return c, nil
}

func processCost(pid int, children bool) (ProcessCost, error) {
	cpu, err := bench.ProcCPU(pid, children)
	if err != nil {
		return ProcessCost{}, err
	}
	pids := []int{pid}
	if children {
		kids, err := bench.ChildPIDs(pid)
		if err != nil {
			return ProcessCost{}, err
		}
		pids = append(pids, kids...)
	}
	c := ProcessCost{CPU: cpu}
	for i, p := range pids {
		m, err := bench.ReadPIDMemory(p)
		if err == nil && children {
			m.RSS, err = readPSS(p)
		}
		if err != nil {
			if i == 0 {
				return c, err
			}
			continue // a backend that ended meanwhile
		}
		c.RSS += m.RSS
		c.HWM += m.HWM
		c.Procs++
	}
	return c, nil
}

// readPSS reads the proportional set size of process pid (bytes) from its smaps_rollup.
func readPSS(pid int) (int64, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, err
	}
	return parsePSS(string(raw))
}

// parsePSS finds the "Pss:" line of a smaps_rollup.
func parsePSS(text string) (int64, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "Pss:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("Pss: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no Pss in smaps_rollup")
}

// FleetScaleStep is what one step measured.
type FleetScaleStep struct {
	Tenants, PerTenant int // T and D after the step
	// NewTenants and NewDeployments are what the step created.
	NewTenants, NewDeployments int
	// Created is how long the creates took; Ready from the first create until every tenant was
	// held where placed with its D deployments Synced and Healthy; NotReady counts those that
	// were not within the timeout.
	Created, Ready time.Duration
	NotReady       int
	Ours, All      Balance
	// Before is sampled just before the step's creates, AtReady when all were Synced, Settled
	// after Settle more.
	Before, AtReady, Settled FleetCosts
}

// Deployments is T×D.
func (s FleetScaleStep) Deployments() int { return s.Tenants * s.PerTenant }

// FleetScaleResult is a whole scale run.
type FleetScaleResult struct {
	Instances []string
	Capacity  map[string]int // spec.capacity by instance
	Baseline  FleetCosts
	Steps     []FleetScaleStep
	// InitialMoves counts the tenants whose spec.instance changed before the drain.
	InitialMoves int
	Drain        *DrainResult
	// DrainBefore and DrainAfter are sampled around the drain.
	DrainBefore, DrainAfter FleetCosts
	// Cleanup is what the tenants left once deleted; nil when they were kept, or the run ended
	// before its cleanup.
	Cleanup *FleetCleanup
}

// FleetCleanup is what is left once the run deleted its tenants: after their namespaces went
// (or the timeout), the objects still there and the watches open, to hold against the
// baseline's (a watch kept per tenant that outlives the tenant would show here).
type FleetCleanup struct {
	// Took is from the first delete until every namespace and placement was gone, or the timeout.
	Took time.Duration
	// NamespacesLeft and PlacementsLeft are the tenant namespaces and their TenantPlacements
	// still there at the end of Took.
	NamespacesLeft, PlacementsLeft int
	// After is sampled a settle after Took; zero when the run ended before.
	After FleetCosts
}

// RunFleetScale runs the steps, then the drain. It refuses to start while tenant namespaces of
// an earlier run exist.
func RunFleetScale(ctx context.Context, cfg FleetScaleConfig) (*FleetScaleResult, error) {
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	if len(cfg.Steps) == 0 {
		return nil, fmt.Errorf("no steps")
	}
	if cfg.PerTenant <= 0 {
		return nil, fmt.Errorf("no deployments per tenant")
	}
	if cfg.ExtraPerTenant < 0 {
		return nil, fmt.Errorf("negative extra deployments per tenant")
	}
	if cfg.Sample == nil {
		return nil, fmt.Errorf("no sampler")
	}
	totalD := cfg.PerTenant + cfg.ExtraPerTenant
	r, err := openFleet(ctx, cfg.FleetConfig, totalD, logf)
	if err != nil {
		return nil, err
	}
	defer r.close()

	res := &FleetScaleResult{Instances: r.instances, Capacity: r.capacityOf}
	var namespaces []string
	perTenant := cfg.PerTenant // what the tenants have now, for the cleanup
	cleaned := false
	if !cfg.Keep {
		// A run that ends early still deletes what it made.
		defer func() {
			if !cleaned {
				cleanupFleet(cfg.FleetConfig, r.argoOf, r.argoNamespaceOf, namespaces, perTenant, logf)
			}
		}()
	}
	settle := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.Settle):
			return nil
		}
	}
	logf("T=0: settling %s, then sampling the baseline", cfg.Settle)
	if err := settle(); err != nil {
		return res, err
	}
	if res.Baseline, err = cfg.Sample(ctx); err != nil {
		return res, err
	}

	// step creates tenants first..last with deployments fromD..toD-1 (fromD > 0: in existing
	// namespaces), waits until all T tenants have toD deployments Synced and measures.
	step := func(T, first, fromD, toD int) (FleetScaleStep, error) {
		s := FleetScaleStep{Tenants: T, PerTenant: toD, NewDeployments: (T - first + 1) * (toD - fromD)}
		if fromD == 0 {
			s.NewTenants = T - first + 1
		}
		var err error
		if s.Before, err = cfg.Sample(ctx); err != nil {
			return s, err
		}
		r.obs.setPerTenant(toD)
		logf("T=%d D=%d: creating %d tenants and %d GitOpsDeployments, %d tenants at a time", T, toD, s.NewTenants, s.NewDeployments, cfg.Workers)
		start := time.Now()
		made, err := createFleetTenants(ctx, cfg.FleetConfig, r.repoURL, first, T, fromD, toD)
		namespaces = append(namespaces, made...)
		perTenant = toD
		if err != nil {
			return s, err
		}
		s.Created = time.Since(start)
		s.NotReady = waitFleetReady(ctx, r.obs, T, start, cfg.Timeout, logf)
		s.Ready = time.Since(start)
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
		if s.AtReady, err = cfg.Sample(ctx); err != nil {
			return s, err
		}
		if s.Ours, s.All, res.InitialMoves, err = fleetBalance(r); err != nil {
			return s, err
		}
		logf("T=%d D=%d: all Synced in %s; ours %v; settling %s", T, toD, s.Ready.Round(100*time.Millisecond), s.Ours.Counts, cfg.Settle)
		if err := settle(); err != nil {
			return s, err
		}
		if s.Settled, err = cfg.Sample(ctx); err != nil {
			return s, err
		}
		logf("T=%d D=%d: %s", T, toD, describeCosts(s.Settled))
		if s.NotReady > 0 {
			return s, fmt.Errorf("T=%d: %d tenants not held where placed and Synced after %s", T, s.NotReady, cfg.Timeout)
		}
		return s, nil
	}

	prev := 0
	for _, T := range cfg.Steps {
		s, err := step(T, prev+1, 0, cfg.PerTenant)
		res.Steps = append(res.Steps, s)
		if err != nil {
			return res, err
		}
		prev = T
	}
	if cfg.ExtraPerTenant > 0 {
		s, err := step(prev, 1, cfg.PerTenant, totalD)
		res.Steps = append(res.Steps, s)
		if err != nil {
			return res, err
		}
	}

	// The drain, with the costs around it. The target must have room for the moving tenants.
	last := res.Steps[len(res.Steps)-1]
	if c := r.capacityOf[cfg.Target]; c > 0 && last.All.Counts[cfg.Target]+last.All.Counts[cfg.Drain] > c {
		logf("warning: %s holds %d tenants and %s %d: more than %s's capacity %d; the drain cannot move them all",
			cfg.Target, last.All.Counts[cfg.Target], cfg.Drain, last.All.Counts[cfg.Drain], cfg.Target, c)
	}
	if res.DrainBefore, err = cfg.Sample(ctx); err != nil {
		return res, err
	}
	res.Drain, err = drain(ctx, cfg.FleetConfig, r.obs, r.argoOf[cfg.Drain], r.argoNamespaceOf[cfg.Drain], logf)
	if res.Drain != nil {
		if after, serr := cfg.Sample(ctx); serr == nil {
			res.DrainAfter = after
		} else if err == nil {
			err = serr
		}
	}
	if err != nil || cfg.Keep {
		return res, err
	}
	cleaned = true
	start := time.Now()
	cleanupFleet(cfg.FleetConfig, r.argoOf, r.argoNamespaceOf, namespaces, perTenant, logf)
	c := &FleetCleanup{}
	c.NamespacesLeft, c.PlacementsLeft = waitTenantsGone(ctx, cfg.FleetConfig, namespaces, logf)
	c.Took = time.Since(start)
	logf("cleanup: %d namespaces and %d TenantPlacements left after %s; settling %s", c.NamespacesLeft, c.PlacementsLeft,
		c.Took.Round(time.Second), cfg.Settle)
	res.Cleanup = c
	if err := settle(); err != nil {
		return res, err
	}
	if c.After, err = cfg.Sample(ctx); err != nil {
		return res, err
	}
	logf("after the cleanup: %s", describeCosts(c.After))
	return res, nil
}

// waitTenantsGone waits, up to cfg.Timeout, until none of namespaces and no TenantPlacement of
// them is left, and returns how many of each are.
func waitTenantsGone(ctx context.Context, cfg FleetConfig, namespaces []string, logf func(string, ...interface{})) (nsLeft, placementsLeft int) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	mine := map[string]bool{}
	for _, ns := range namespaces {
		mine[ns] = true
	}
	count := func(ctx context.Context) (int, int, error) {
		nss, err := cfg.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, err
		}
		ps, err := cfg.GitOps.ManagedGitopsV1alpha1().TenantPlacements().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, err
		}
		n, p := 0, 0
		for _, o := range nss.Items {
			if mine[o.Name] {
				n++
			}
		}
		for _, o := range ps.Items {
			if mine[o.Name] {
				p++
			}
		}
		return n, p, nil
	}
	nsLeft, placementsLeft = len(namespaces), len(namespaces)
	_ = wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		n, p, err := count(ctx)
		if err != nil {
			logf("counting what the tenants left: %v", err)
			return false, nil
		}
		nsLeft, placementsLeft = n, p
		return n == 0 && p == 0, nil
	})
	return nsLeft, placementsLeft
}

func describeCosts(c FleetCosts) string {
	var parts []string
	for _, name := range []string{"gitops-apiserver", "postgres", "kube-apiserver", "agent", "argocd-application-controller"} {
		if p, ok := c.Processes[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f MiB", name, mib(p.RSS)))
		}
	}
	return fmt.Sprintf("RSS %s; watches: kube-apiserver %.0f, gitops-apiserver %.0f, remote %.0f",
		strings.Join(parts, ", "), c.KubeWatches, c.GitOpsWatches, c.RemoteWatches)
}

// ProcessGroup is where a process of the local stack belongs in the cost model: "shared"
// (gitops-apiserver and PostgreSQL, one for the whole fleet), "kube" (the stack's cluster,
// which also stores instance main's Applications), "remote" (the remote cluster, which stores
// instance engine's), or the instance whose Argo CD or agent it is.
func ProcessGroup(name string) string {
	switch {
	case name == "gitops-apiserver" || name == "postgres":
		return "shared"
	case strings.HasPrefix(name, "remote-"):
		return "remote"
	case name == "etcd" || name == "kube-apiserver" || name == "kube-controller-manager":
		return "kube"
	case name == "agent-engine" || strings.HasSuffix(name, "-2"):
		return "engine"
	case name == "agent" || strings.HasPrefix(name, "argocd-") || name == "redis":
		return "main"
	}
	return "other"
}

// groupCost sums the processes of group in c.
func groupCost(c FleetCosts, group string) ProcessCost {
	var sum ProcessCost
	for name, p := range c.Processes {
		if ProcessGroup(name) == group {
			sum.CPU += p.CPU
			sum.RSS += p.RSS
			sum.HWM += p.HWM
			sum.Procs += p.Procs
		}
	}
	return sum
}

// LinearFit is the least-squares line y = a + b·x through the points; with fewer than two
// distinct x it returns the mean and no slope (ok false).
func LinearFit(xs, ys []float64) (a, b float64, ok bool) {
	n := float64(len(xs))
	if len(xs) == 0 || len(xs) != len(ys) {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if len(xs) < 2 || den == 0 {
		return sy / n, 0, false
	}
	b = (n*sxy - sx*sy) / den
	return (sy - b*sx) / n, b, true
}

// CostModel is cost = Fixed + PerTenant × T + PerDeployment × T×D for one group.
type CostModel struct {
	Fixed, PerTenant, PerDeployment float64
	// Separated: PerDeployment was measured (a step with more deployments at the same T);
	// otherwise it is 0 and PerTenant holds the cost of a tenant with the run's D.
	Separated bool
}

// At is the model's cost at T tenants with D deployments each. A negative coefficient, which
// only the noise of a small run produces (a Go process's RSS moves with its garbage collector,
// a short window's CPU with whatever else ran), counts as 0: costs do not fall as tenants come.
func (m CostModel) At(T, D float64) float64 {
	return m.Fixed + math.Max(0, m.PerTenant)*T + math.Max(0, m.PerDeployment)*T*D
}

// FitCostModel fits the model to points (tenants, deployments, cost): the steps of the same D
// give the slope over T, the step whose T repeats with more deployments the per-deployment
// cost, which the per-tenant slope then excludes.
func FitCostModel(tenants, deployments, cost []float64) (CostModel, bool) {
	if len(tenants) == 0 {
		return CostModel{}, false
	}
	// The growth steps (and a baseline at T = 0) share one D, the last growth step's.
	var xs, ys []float64
	extra := -1
	for i := range tenants {
		if i > 0 && tenants[i] == tenants[i-1] && deployments[i] != deployments[i-1] {
			extra = i
			continue
		}
		xs, ys = append(xs, tenants[i]), append(ys, cost[i])
	}
	a, slope, ok := LinearFit(xs, ys)
	if !ok {
		return CostModel{Fixed: a}, false
	}
	m := CostModel{Fixed: a, PerTenant: slope}
	if extra > 0 {
		d0 := deployments[extra-1] / nonZero(tenants[extra-1])
		dd := deployments[extra] - deployments[extra-1]
		m.PerDeployment = (cost[extra] - cost[extra-1]) / dd
		m.PerTenant = slope - m.PerDeployment*d0
		m.Separated = true
	}
	return m, true
}

func nonZero(x float64) float64 {
	if x == 0 {
		return 1
	}
	return x
}

// sortedProcessNames is the processes of c by group, then name.
func sortedProcessNames(c FleetCosts) []string {
	names := make([]string, 0, len(c.Processes))
	for n := range c.Processes {
		names = append(names, n)
	}
	order := map[string]int{"shared": 0, "kube": 1, "main": 2, "engine": 3, "remote": 4, "other": 5}
	sort.Slice(names, func(i, j int) bool {
		gi, gj := order[ProcessGroup(names[i])], order[ProcessGroup(names[j])]
		if gi != gj {
			return gi < gj
		}
		return names[i] < names[j]
	})
	return names
}
