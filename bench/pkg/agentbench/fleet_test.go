package agentbench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

func TestComputeBalance(t *testing.T) {
	for _, tc := range []struct {
		name       string
		instances  []string
		placements map[string]string
		want       Balance
	}{
		{"empty fleet", nil, nil, Balance{Counts: map[string]int{}}},
		{"no tenants", []string{"engine", "main"}, nil, Balance{Counts: map[string]int{"engine": 0, "main": 0}}},
		{"even", []string{"engine", "main"}, map[string]string{"a": "main", "b": "engine", "c": "main", "d": "engine"},
			Balance{Counts: map[string]int{"engine": 2, "main": 2}, Max: 2, Min: 2}},
		{"uneven, an idle instance counts as 0", []string{"engine", "main", "spare"},
			map[string]string{"a": "main", "b": "main", "c": "engine"},
			Balance{Counts: map[string]int{"engine": 1, "main": 2, "spare": 0}, Max: 2, Min: 0, Spread: 2}},
		{"unplaced and unknown instance", []string{"main"}, map[string]string{"a": "", "b": "main", "c": "gone", "d": "gone"},
			Balance{Counts: map[string]int{"main": 1, "gone": 2}, Unplaced: 1, Max: 2, Min: 1, Spread: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComputeBalance(tc.instances, tc.placements); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestComputeStats(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    Stats
	}{
		{"none", nil, Stats{}},
		{"one", []time.Duration{3 * s}, Stats{N: 1, P50: 3 * s, P90: 3 * s, Max: 3 * s}},
		{"two, interpolated", []time.Duration{4 * s, 2 * s}, Stats{N: 2, P50: 3 * s, P90: 3800 * time.Millisecond, Max: 4 * s}},
		{"eleven, unordered", []time.Duration{10 * s, 0, 9 * s, 1 * s, 8 * s, 2 * s, 7 * s, 3 * s, 6 * s, 4 * s, 5 * s},
			Stats{N: 11, P50: 5 * s, P90: 9 * s, Max: 10 * s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComputeStats(tc.samples); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func placement(name, spec, status string) *managedv1alpha1.TenantPlacement {
	return &managedv1alpha1.TenantPlacement{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       managedv1alpha1.TenantPlacementSpec{Instance: spec},
		Status:     managedv1alpha1.TenantPlacementStatus{Instance: status},
	}
}

func fleetDeployment(ns string, synced bool) *managedv1alpha1.GitOpsDeployment {
	d := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: FleetDeployment}}
	if synced {
		d.Status.Sync.Status = managedv1alpha1.SyncStatusCodeSynced
		d.Status.Health.Status = managedv1alpha1.HealthStatusCodeHealthy
		d.Status.OperationState = &managedv1alpha1.OperationState{Phase: managedv1alpha1.OperationPhaseSucceeded}
	}
	return d
}

func fleetApplication(ns string, synced bool) *argov1alpha1.Application {
	a := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app-" + ns, Labels: map[string]string{argocd.LabelDeploymentNamespace: ns},
		Annotations: map[string]string{argocd.AnnotationDeploymentName: FleetDeployment}}}
	if synced {
		a.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		a.Status.Health.Status = "Healthy"
	}
	return a
}

// The observer turns watch events into the steps of each tenant's move.
func TestFleetObserver(t *testing.T) {
	o := &fleetObserver{target: "engine", tenants: map[string]*fleetTenant{}, others: map[string]string{}}
	a, b, c := FleetTenantNamespace(1), FleetTenantNamespace(2), FleetTenantNamespace(3)

	// Initial placement: a and c on main, b on engine; c is moved once by the service, which
	// the benchmark reports as an unstable placement. Another tenant is pinned on main.
	o.placement(placement("other", "main", "main"), false)
	for _, p := range []*managedv1alpha1.TenantPlacement{placement(a, "main", ""), placement(a, "main", "main"),
		placement(b, "engine", "engine"), placement(c, "engine", ""), placement(c, "main", ""), placement(c, "main", "main")} {
		o.placement(p, false)
	}
	for _, ns := range []string{a, b, c} {
		o.deployment(fleetDeployment(ns, true))
	}
	o.deployment(fleetDeployment("someone-else", true)) // not a benchmark tenant: ignored
	if ready, moving, _, _, _ := o.progress(); ready != 3 || moving != 0 {
		t.Fatalf("before the drain: ready %d, moving %d; want 3, 0", ready, moving)
	}
	if o.tenants[c].moves != 1 || o.tenants[a].moves != 0 {
		t.Errorf("moves: a %d, c %d; want 0, 1", o.tenants[a].moves, o.tenants[c].moves)
	}

	at := time.Now()
	if moving := o.startDrain("main", at); !reflect.DeepEqual(moving, []string{a, c}) {
		t.Fatalf("moving %v, want [%s %s]", moving, a, c)
	}
	// a goes through every step; its status blinks; c is only placed.
	o.placement(placement(a, "engine", "main"), false)
	o.placement(placement(c, "engine", "main"), false)
	o.placement(placement(a, "engine", ""), false)
	o.placement(placement(a, "engine", "engine"), false)
	o.deployment(fleetDeployment(a, false))
	o.application(fleetApplication(a, true), false)
	if _, _, placed, held, synced := o.progress(); placed != 2 || held != 1 || synced != 0 {
		t.Fatalf("placed %d, held %d, synced %d; want 2, 1, 0 (a's deployment is not Synced)", placed, held, synced)
	}
	o.deployment(fleetDeployment(a, true))
	o.placement(placement("other", "main", "main"), false) // pinned: unchanged
	if _, _, _, _, synced := o.progress(); synced != 1 {
		t.Fatalf("synced %d, want 1", synced)
	}
	// c's release was not seen as an event of its own: held implies released.
	o.placement(placement(c, "engine", "engine"), false)
	cSynced := fleetDeployment(c, true)
	cSynced.Status.OperationState = nil // the new instance's status has no operation of its own
	o.deployment(cSynced)
	o.application(fleetApplication(c, false), false)
	o.application(fleetApplication(c, true), true) // deleted: not Synced from engine
	if _, _, _, _, synced := o.progress(); synced != 1 {
		t.Fatalf("synced %d, want 1 (c's Application is gone)", synced)
	}
	o.application(fleetApplication(c, true), false)
	o.placement(placement("other", "engine", ""), false) // a pinned tenant moving would be a bug

	var res DrainResult
	o.drainResult(&res)
	if res.Moving != 2 || len(res.Placed) != 2 || len(res.Released) != 2 || len(res.Held) != 2 || len(res.Synced) != 2 {
		t.Errorf("result %+v: want 2 moving, each with every step", res)
	}
	if res.StatusLeftSynced != 1 || res.OthersMoved != 1 || res.Elsewhere != 0 {
		t.Errorf("left Synced %d, others moved %d, elsewhere %d; want 1, 1, 0", res.StatusLeftSynced, res.OthersMoved, res.Elsewhere)
	}
	if !reflect.DeepEqual(res.LeftStatuses, map[string]int{"(none)/(none)": 1}) || len(res.NotSyncedFor) != 1 {
		t.Errorf("left statuses %v, not synced for %v", res.LeftStatuses, res.NotSyncedFor)
	}
	if res.OperationStates != 2 || res.OperationStatesLost != 1 {
		t.Errorf("operation states %d, lost %d; want 2, 1", res.OperationStates, res.OperationStatesLost)
	}
	for _, d := range append(append(res.Placed, res.Held...), res.Synced...) {
		if d < 0 || d > time.Minute {
			t.Errorf("duration %s out of range", d)
		}
	}
}

func TestSpliceFleetSection(t *testing.T) {
	block := FleetHeading + "\n\n" + FleetBegin + "\nnew\n" + FleetEnd + "\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"empty file", "", block},
		{"appended with a heading", "# Agent scale\n\ntext\n", "# Agent scale\n\ntext\n\n" + block},
		{"trailing blank lines", "# Agent scale\n\n\n", "# Agent scale\n\n" + block},
		{"replaced between the markers only", "# A\n\n## Mine\n\n" + FleetBegin + "\nold\nlines\n" + FleetEnd + "\n\n## After\n",
			"# A\n\n## Mine\n\n" + FleetBegin + "\nnew\n" + FleetEnd + "\n\n## After\n"},
		{"an end marker alone is no section", "# A\n" + FleetEnd + "\n", "# A\n" + FleetEnd + "\n\n" + block},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SpliceFleetSection(tc.doc, "\nnew\n")
			if got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			if s, ok := FleetSection(got); !ok || s != "new" {
				t.Errorf("FleetSection = %q, %v", s, ok)
			}
			if again := SpliceFleetSection(got, "new"); again != got {
				t.Errorf("not idempotent:\n%q\n%q", got, again)
			}
		})
	}
	if _, ok := FleetSection("# A\n" + FleetBegin + "\nno end\n"); ok {
		t.Error("a begin marker without an end is no section")
	}
}

// The scale benchmark's report, which replaces the whole file, takes the fleet section along
// (bench/cmd/agent-bench/scale.go splices it in).
func TestSpliceKeepsTheFleetSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent-scale.md")
	if err := WriteFleetSection(path, "fleet figures"); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	section, ok := FleetSection(string(old))
	if !ok {
		t.Fatal("no fleet section written")
	}
	got := SpliceFleetSection("# Agent scale\n\nnew figures\n", section)
	want := "# Agent scale\n\nnew figures\n\n" + FleetHeading + "\n\n" + FleetBegin + "\nfleet figures\n" + FleetEnd + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRenderFleet(t *testing.T) {
	s := time.Second
	res := &FleetResult{
		Tenants: 4, Instances: []string{"engine", "main"}, Created: 2 * s, Ready: 20 * s,
		Ours: ComputeBalance([]string{"engine", "main"}, map[string]string{"a": "engine", "b": "main", "c": "engine", "d": "main"}),
		All:  ComputeBalance([]string{"engine", "main"}, map[string]string{"a": "engine", "b": "main", "c": "engine", "d": "main", "x": "main"}),
		Drain: &DrainResult{From: "main", To: "engine", Moving: 2, Pinned: 1,
			Placed: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, Released: []time.Duration{2 * s, 3 * s},
			Held: []time.Duration{2 * s, 4 * s}, Synced: []time.Duration{5 * s, 7 * s}, ConfigMaps: 2},
	}
	info := FleetReportInfo{InvokedAs: "make bench-agent-fleet", Started: time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC),
		Wall: 3 * time.Minute, Machine: "2 CPUs", GoVersion: "go1.x", Workers: 4, Timeout: 10 * time.Minute}
	out := RenderFleet(res, info)
	for _, want := range []string{
		"| engine | 2 | 2 |", "| main | 2 | 3 |", "| max / min | 2 / 2 | 3 / 2 |", "| spread (max − min) | 0 | 1 |",
		"Placement is stable: no tenant moved",
		"| held by `engine` (`status.instance`, the hand-over) | 2 of 2 | 3.0 | 3.8 | 4.0 |",
		"| Synced and Healthy from `engine` (its Application and the GitOpsDeployment) | 2 of 2 | 6.0 | 6.8 | 7.0 |",
		"**All 2 moved** (held by `engine` and Synced from it) 7.0 s after the drain",
		"ConfigMaps re-created by the move: 0 of 2 (UIDs read before the drain and after the moves): ok.",
		"in `main`'s Argo CD namespace after the moves: 0: ok.",
		"the 1 other tenants were pinned first",
		"| command | `make bench-agent-fleet` |", "| date | 2026-11-26 05:00 UTC (the whole run took 3m0s; tenants deleted at the end) |",
		"| machine | 2 CPUs |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, FleetBegin) || strings.Contains(out, FleetHeading) {
		t.Error("the section's markers and heading are SpliceFleetSection's, not in the rendered section")
	}

	// What went wrong is said.
	res.InitialMoves = 1
	res.Drain.ConfigMapsChanged, res.Drain.ChangedConfigMaps = 1, []string{"tenant-fleet-0002"}
	res.Drain.LeftOnFrom = 1
	res.Drain.Synced = res.Drain.Synced[:1]
	res.Drain.StatusLeftSynced, res.Drain.LeftStatuses = 2, map[string]int{"Unknown/Missing": 1, "OutOfSync/Healthy": 1}
	res.Drain.NotSyncedFor = []time.Duration{s, 3 * s}
	res.Drain.OperationStates, res.Drain.OperationStatesLost = 2, 2
	out = RenderFleet(res, info)
	for _, want := range []string{"**Placement was not stable**: 1 tenants moved", "**re-created or gone: tenant-fleet-0002**",
		"**left behind**", "show none once moved: 2 of 2 (the new instance's", "**1 of 2 did not move** within the timeout (10m0s)",
		"status showed anything but Synced and Healthy during the move: 2 of 2 (first shown: `OutOfSync/Healthy` × 1, `Unknown/Missing` × 1), for p50 2.0 s, max 3.0 s until Synced and Healthy from `engine`."} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	res.Drain = nil
	if out := RenderFleet(res, info); !strings.Contains(out, "The run ended before the drain.") {
		t.Errorf("no drain: %s", out)
	}
}
