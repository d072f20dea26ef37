package agentbench

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

func TestLinearFit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		a, b   float64
		ok     bool
	}{
		{"a line", []float64{1, 2, 3}, []float64{5, 7, 9}, 3, 2, true},
		{"noisy", []float64{0, 10, 20}, []float64{1, 9, 21}, 1.0 / 3, 1, true},
		{"one point", []float64{4}, []float64{8}, 8, 0, false},
		{"the same x twice", []float64{4, 4}, []float64{8, 10}, 9, 0, false},
		{"none", nil, nil, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ok := LinearFit(tc.xs, tc.ys)
			if ok != tc.ok || math.Abs(a-tc.a) > 1e-9 || math.Abs(b-tc.b) > 1e-9 {
				t.Errorf("LinearFit = %v, %v, %v; want %v, %v, %v", a, b, ok, tc.a, tc.b, tc.ok)
			}
		})
	}
}

// The model separates a deployment's cost from a tenant's by the step that adds deployments to
// the same tenants.
func TestFitCostModel(t *testing.T) {
	truth := CostModel{Fixed: 100, PerTenant: 3, PerDeployment: 2}
	for _, tc := range []struct {
		name           string
		tenants, depls []float64
		want           CostModel
		ok             bool
	}{
		{"steps of T at D=2, then D=3", []float64{50, 100, 200, 200}, []float64{100, 200, 400, 600},
			CostModel{Fixed: 100, PerTenant: 3, PerDeployment: 2, Separated: true}, true},
		{"a baseline at T = 0, steps of T at D=2, then D=3", []float64{0, 50, 100, 100}, []float64{0, 100, 200, 300},
			CostModel{Fixed: 100, PerTenant: 3, PerDeployment: 2, Separated: true}, true},
		{"steps of T only: per-tenant holds D's deployments", []float64{50, 100}, []float64{100, 200},
			CostModel{Fixed: 100, PerTenant: 7}, true},
		{"one step", []float64{50}, []float64{100}, CostModel{Fixed: truth.At(50, 2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cost []float64
			for i := range tc.tenants {
				cost = append(cost, truth.At(tc.tenants[i], tc.depls[i]/nonZero(tc.tenants[i])))
			}
			got, ok := FitCostModel(tc.tenants, tc.depls, cost)
			if ok != tc.ok || got.Separated != tc.want.Separated || math.Abs(got.Fixed-tc.want.Fixed) > 1e-6 ||
				math.Abs(got.PerTenant-tc.want.PerTenant) > 1e-6 || math.Abs(got.PerDeployment-tc.want.PerDeployment) > 1e-6 {
				t.Errorf("FitCostModel = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestProcessGroup(t *testing.T) {
	for name, want := range map[string]string{
		"gitops-apiserver": "shared", "postgres": "shared",
		"kube-apiserver": "kube", "etcd": "kube", "kube-controller-manager": "kube",
		"remote-kube-apiserver": "remote", "remote-etcd": "remote", "remote-kube-controller-manager": "remote",
		"agent": "main", "argocd-application-controller": "main", "argocd-repo-server": "main", "redis": "main",
		"agent-engine": "engine", "argocd-application-controller-2": "engine", "argocd-repo-server-2": "engine", "redis-2": "engine",
		"something": "other",
	} {
		if got := ProcessGroup(name); got != want {
			t.Errorf("ProcessGroup(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestFleetDeploymentName(t *testing.T) {
	if FleetDeploymentName(0) != FleetDeployment || FleetDeploymentName(2) != "fleet-2" || fleetConfigMap(2) != "bench-0002" {
		t.Errorf("names: %s %s %s", FleetDeploymentName(0), FleetDeploymentName(2), fleetConfigMap(2))
	}
}

// With D deployments, a tenant is ready once all of them are Synced, and moved once the
// target's Argo CD shows all of its Applications Synced.
func TestFleetObserverDeployments(t *testing.T) {
	o := &fleetObserver{target: "engine", tenants: map[string]*fleetTenant{}, others: map[string]string{}, perTenant: 2}
	a := FleetTenantNamespace(1)
	o.placement(placement(a, "main", "main"), false)
	d0 := fleetDeployment(a, true)
	o.deployment(d0)
	if ready, _, _, _, _ := o.progress(); ready != 0 {
		t.Fatalf("ready %d with one of two deployments, want 0", ready)
	}
	d1 := fleetDeployment(a, true)
	d1.Name = FleetDeploymentName(1)
	o.deployment(d1)
	if ready, _, _, _, _ := o.progress(); ready != 1 {
		t.Fatalf("ready %d with both, want 1", ready)
	}
	o.setPerTenant(3)
	if ready, _, _, _, _ := o.progress(); ready != 0 {
		t.Fatalf("ready %d with two of three, want 0", ready)
	}
	o.setPerTenant(2)

	o.startDrain("main", time.Now())
	o.placement(placement(a, "engine", "engine"), false)
	o.application(fleetApplication(a, true), false) // the first deployment's
	if _, _, _, held, synced := o.progress(); held != 1 || synced != 0 {
		t.Fatalf("held %d, synced %d with one of two Applications; want 1, 0", held, synced)
	}
	app := fleetApplication(a, true)
	app.Name += "-1"
	app.Annotations = map[string]string{argocd.AnnotationDeploymentName: FleetDeploymentName(1)}
	o.application(app, false)
	if _, _, _, _, synced := o.progress(); synced != 1 {
		t.Fatalf("synced %d with both Applications, want 1", synced)
	}
}

func TestSpliceFleetScaleSection(t *testing.T) {
	doc := SpliceFleetSection("# Scale\n\nbody\n", "fleet text")
	doc = SpliceFleetScaleSection(doc, "scale v1")
	doc = SpliceFleetScaleSection(doc, "scale v2")
	if s, ok := FleetScaleSection(doc); !ok || s != "scale v2" {
		t.Errorf("fleet-scale section %q, %v; want scale v2", s, ok)
	}
	if s, ok := FleetSection(doc); !ok || s != "fleet text" {
		t.Errorf("fleet section %q, %v; want it kept", s, ok)
	}
	if strings.Count(doc, FleetScaleHeading) != 1 || !strings.HasPrefix(doc, "# Scale\n\nbody\n") {
		t.Errorf("doc:\n%s", doc)
	}
}

func costs(at time.Time, cpu time.Duration, rss int64, watches float64) FleetCosts {
	c := FleetCosts{At: at, Processes: map[string]ProcessCost{}, KubeWatches: watches, GitOpsWatches: watches / 2}
	for _, n := range []string{"gitops-apiserver", "postgres", "kube-apiserver", "agent", "argocd-application-controller", "agent-engine"} {
		c.Processes[n] = ProcessCost{CPU: cpu, RSS: rss, HWM: rss, Procs: 1}
	}
	return c
}

func TestRenderFleetScale(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	step := func(T, D, newT, newD int, at time.Duration, rss int64) FleetScaleStep {
		return FleetScaleStep{Tenants: T, PerTenant: D, NewTenants: newT, NewDeployments: newD, Created: time.Second, Ready: 20 * time.Second,
			Ours:   Balance{Counts: map[string]int{"main": T / 2, "engine": T / 2}, Max: T / 2, Min: T / 2},
			Before: costs(t0.Add(at), at, rss, 10), AtReady: costs(t0.Add(at+20*time.Second), at+10*time.Second, rss, 10),
			Settled: costs(t0.Add(at+50*time.Second), at+13*time.Second, rss, float64(10+T))}
	}
	res := &FleetScaleResult{Instances: []string{"engine", "main"}, Capacity: map[string]int{"main": 1000, "engine": 1000},
		Baseline: costs(t0, 0, 100<<20, 10),
		Steps: []FleetScaleStep{step(50, 2, 50, 100, time.Minute, 200<<20), step(100, 2, 50, 100, 2*time.Minute, 300<<20),
			step(100, 3, 0, 100, 3*time.Minute, 350<<20)},
		Drain:   &DrainResult{From: "main", To: "engine", Moving: 50, Synced: []time.Duration{time.Second}},
		Cleanup: &FleetCleanup{Took: 95 * time.Second, After: costs(t0.Add(5*time.Minute), 4*time.Minute, 300<<20, 12)}}
	out := RenderFleetScale(res, FleetScaleReportInfo{InstancesSupported: "x", Note: "A small validation run.", Started: t0, Wall: time.Hour, MemTotal: 23 << 30,
		CPUs: 2, Workers: 8, Settle: 30 * time.Second, Timeout: time.Minute})
	for _, want := range []string{"**A small validation run.**", "| 100 | 3 | 300 | 0 / 100 |", "K = ⌈10000 / 1000⌉ = 10 instances",
		"cost(T, D) = fixed + per-tenant × T + per-deployment × T×D", "### Draining `main`", "This machine", "| gitops-apiserver | shared |",
		"### After the cleanup\n\nEvery tenant namespace and its TenantPlacement were gone 1m35s after",
		"gitops-apiserver 6 (5), kube-apiserver of the stack's cluster 12 (10)."} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	t.Log(out) // shown with -v

	var b strings.Builder
	renderCleanup(func(f string, a ...interface{}) { fmt.Fprintf(&b, f, a...) }, res.Baseline,
		&FleetCleanup{Took: time.Minute, NamespacesLeft: 1, PlacementsLeft: 2})
	if want := "**Still there 1m0s after the run began deleting them: 1 tenant namespace, 2 TenantPlacements.** The run ended before it read the watches again."; !strings.Contains(b.String(), want) {
		t.Errorf("cleanup %q, want %q", b.String(), want)
	}
}

func TestParsePSS(t *testing.T) {
	text := "55d0a000-7ffd [rollup]\nRss:               18432 kB\nPss:                4321 kB\nPss_Anon:           1000 kB\n"
	if got, err := parsePSS(text); err != nil || got != 4321*1024 {
		t.Errorf("parsePSS = %d, %v; want %d", got, err, 4321*1024)
	}
	if _, err := parsePSS("Rss: 1 kB\n"); err == nil {
		t.Error("parsePSS without a Pss line: no error")
	}
}
