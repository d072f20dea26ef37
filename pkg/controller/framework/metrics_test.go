package framework

import (
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
)

func TestPendingSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var p PendingSince
	if _, ok := p.Oldest(); ok {
		t.Fatal("nothing pending, yet an oldest change")
	}
	p.Add("a", at(0))
	p.Add("a", at(2)) // a second change of a waits as long as the first
	p.Add("b", at(1))
	if got, _ := p.Oldest(); !got.Equal(at(0)) {
		t.Errorf("oldest = %v, want the first change of a", got)
	}
	p.Done("a", at(3))
	if got, _ := p.Oldest(); !got.Equal(at(1)) {
		t.Errorf("after a is reconciled, oldest = %v, want b's change", got)
	}
	// A change that arrives while b is being reconciled still waits afterwards.
	p.Add("b", at(5))
	p.Done("b", at(4))
	if got, ok := p.Oldest(); !ok || !got.Equal(at(5)) {
		t.Errorf("oldest = %v, %v; want the change that came during the reconcile", got, ok)
	}
	p.Done("b", at(6))
	if _, ok := p.Oldest(); ok {
		t.Error("everything is reconciled, yet a change is pending")
	}
}

// TestOldestOnlyWhileRunning: a controller waiting for its Lease queues changes without
// reconciling them; it reports no age until it runs.
func TestOldestOnlyWhileRunning(t *testing.T) {
	standby, running := NewController("standby", nil), NewController("running", nil)
	standby.Add("ns/a")
	running.running.Store(true)
	collector := &oldestCollector{controllers: func() []*Controller { return []*Controller{standby, running} }}
	want := `# HELP gitops_agent_oldest_unreconciled_seconds [ALPHA] Age of the oldest change a running controller has been told of and not yet reconciled successfully (none for a controller waiting for its Lease).
# TYPE gitops_agent_oldest_unreconciled_seconds gauge
gitops_agent_oldest_unreconciled_seconds{controller="running"} 0
`
	if err := testutil.CustomCollectAndCompare(collector, strings.NewReader(want), "gitops_agent_oldest_unreconciled_seconds"); err != nil {
		t.Error(err)
	}
	// Which controllers run here is reported for each, so that queue metrics (which a standby
	// has too) can be told apart.
	want = `# HELP gitops_agent_controller_running [ALPHA] 1 for a controller this process runs (it holds the controller's Lease), 0 for one it waits to run (a standby).
# TYPE gitops_agent_controller_running gauge
gitops_agent_controller_running{controller="running"} 1
gitops_agent_controller_running{controller="standby"} 0
`
	collector = &oldestCollector{controllers: collector.controllers}
	if err := testutil.CustomCollectAndCompare(collector, strings.NewReader(want), "gitops_agent_controller_running"); err != nil {
		t.Error(err)
	}
}
