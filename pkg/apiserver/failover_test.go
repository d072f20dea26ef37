package apiserver

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// The failover test runs two gitops-apiserver replicas (the linearizability test's replica
// processes and workload) on a PostgreSQL primary with a synchronous streaming standby. Their
// DSN lists both servers with target_session_attrs=read-write. While the clients write through
// both replicas, the primary dies as a lost host would and the standby is promoted; the same
// replica processes must then write to the promoted server without losing any acknowledged
// write.
//
//	hack/test-postgres.sh go test -count=1 -run 'TestFailover$' -v ./pkg/apiserver/
const (
	failoverReplicas = 2
	// failoverBefore is how long the workload runs before the primary dies.
	failoverBefore = 3 * time.Second
	// failoverDetect stands for the time an operator takes to notice the dead primary before it
	// promotes the standby; writes fail meanwhile.
	failoverDetect = time.Second
	// failoverAfter is how long the workload goes on once every replica writes again.
	failoverAfter = 3 * time.Second
	// failoverResume bounds the wait for writes to succeed again after the promotion.
	failoverResume = time.Minute
	// failoverProbeNamespace holds the writes with which the test waits for each replica to
	// write again; they stay out of the checked history, which is linNamespace's.
	failoverProbeNamespace = "failover-probe"
	// failoverAsyncEnv runs TestFailoverAsynchronousStandbyLosesWrites, which is not part of the
	// suite: it shows that the check catches what an asynchronous standby loses.
	failoverAsyncEnv = "GITOPS_FAILOVER_ASYNC"
)

func TestFailover(t *testing.T) {
	run := runFailover(t, failoverScenario{replication: pgtest.Synchronous})
	for _, v := range run.violations {
		t.Errorf("violation: %s", v)
	}
	if len(run.findings.Lost) > 0 {
		t.Errorf("%d acknowledged writes lost in the failover", len(run.findings.Lost))
	}
}

// TestFailoverAsynchronousStandbyLosesWrites is TestFailover with an asynchronous standby that
// the primary stops reaching halfway before it dies (a partition between the two, or a standby
// that fell behind): the primary acknowledges writes the standby never gets, and the check must
// report them. On loopback an asynchronous standby trails by too little for a failover without
// the partition to lose writes reliably.
//
//	GITOPS_FAILOVER_ASYNC=1 hack/test-postgres.sh go test -count=1 -run 'TestFailoverAsynchronousStandbyLosesWrites' -v ./pkg/apiserver/
func TestFailoverAsynchronousStandbyLosesWrites(t *testing.T) {
	if os.Getenv(failoverAsyncEnv) == "" {
		t.Skipf("set %s=1 to run it", failoverAsyncEnv)
	}
	run := runFailover(t, failoverScenario{replication: pgtest.Asynchronous, partition: true})
	f := run.findings
	if len(f.Lost) == 0 {
		t.Fatalf("the check reported no lost write although the standby missed %d acknowledged writes' WAL", f.AckedPartitioned)
	}
	t.Logf("reported as expected: %d of %d writes acknowledged during the partition lost, %d phantom watch events, %d results at RVs below those acknowledged before the kill",
		len(f.Lost), f.AckedPartitioned, len(f.Phantoms), len(f.Backwards))
	for i, v := range run.violations {
		if i == 10 {
			t.Logf("... %d more", len(run.violations)-i)
			break
		}
		t.Logf("  %s", v)
	}
}

// failoverScenario is the topology and the faults of one run.
type failoverScenario struct {
	replication pgtest.Replication
	// partition cuts the standby off the primary halfway through failoverBefore.
	partition bool
}

// failoverRun is what one run measured and found.
type failoverRun struct {
	findings failoverFindings
	// violations are the findings and those of the linearizability checker.
	violations []string
}

func runFailover(t *testing.T, sc failoverScenario) failoverRun {
	outDir, err := os.MkdirTemp("", "gitops-failover-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica logs kept in %s", outDir)
			return
		}
		_ = os.RemoveAll(outDir)
	})
	pair := pgtest.StartPair(t, sc.replication)
	clock := newLinClock()
	cluster := &linCluster{clock: clock}
	for i := 0; i < failoverReplicas; i++ {
		cluster.replicas = append(cluster.replicas, newLinReplica(t, i, outDir, pair.DSN(), nil))
	}
	t.Cleanup(func() {
		for _, r := range cluster.replicas {
			r.kill()
		}
	})
	for _, r := range cluster.replicas {
		r.start(t)
	}
	for _, r := range cluster.replicas {
		if r.waitReady(linReplicaStartTimeout) == nil {
			t.Fatalf("replica %d did not start; its log is in %s", r.id, r.logPath)
		}
	}
	startRV := currentRV(t, cluster.replicas[0])
	t.Logf("replicas ready at %s on %s, start RV %d", clock.since(), pair.DSN(), startRV)

	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	watchCtx, stopWatches := context.WithCancel(context.Background())
	defer stopWatches()
	workers := startWorkers(workCtx, cluster)
	watchers := startWatchers(watchCtx, cluster, startRV)

	partitioned := int64(-1)
	if sc.partition {
		time.Sleep(failoverBefore / 2)
		pair.Partition()
		partitioned = clock.now()
		time.Sleep(failoverBefore / 2)
	} else {
		time.Sleep(failoverBefore)
	}
	killAt := clock.now()
	pair.KillPrimary()
	killed := clock.now()
	time.Sleep(failoverDetect)
	promoting := clock.now()
	pair.Promote()
	promoted := clock.now()
	t.Logf("primary killed at %s, standby promoted at %s (pg_ctl promote took %s)", fmtTime(killAt), fmtTime(promoted), fmtTime(promoted-promoting))
	for _, r := range cluster.replicas {
		if err := probeWrite(r, failoverResume); err != nil {
			t.Errorf("replica %d: writes did not resume within %s of the promotion: %v", r.id, failoverResume, err)
		} else {
			t.Logf("replica %d: a probe write succeeded %s after the promotion", r.id, fmtTime(clock.now()-promoted))
		}
	}
	time.Sleep(failoverAfter)
	stopWork()
	ops := collectOps(workers)
	end := clock.now()

	promotedDSN := pair.Standby.DSN()
	waitQuiescent(t, promotedDSN)
	committed, compactedRV, globalGap := readCommittedHistory(t, promotedDSN)
	lastRV := startRV
	if len(committed) > 0 {
		lastRV = committed[len(committed)-1].RV
	}
	if !waitWatchersCaughtUp(watchers, lastRV, time.Minute) {
		t.Logf("not every watcher reached RV %d within 1m; the check names those behind", lastRV)
	}
	stopWatches()
	segments := collectSegments(watchers)

	var run failoverRun
	run.findings = checkFailover(ops, segments, committed, killed, promoted)
	for _, op := range ops {
		if op.Kind.writes() && op.Outcome == linOK && partitioned >= 0 && op.Call > partitioned && op.Return < killAt {
			run.findings.AckedPartitioned++
		}
	}
	f := run.findings
	run.violations = append(run.violations, f.Lost...)
	run.violations = append(run.violations, f.Phantoms...)
	run.violations = append(run.violations, f.Backwards...)
	run.violations = append(run.violations, checkFinalState(t, cluster, promotedDSN, committed)...)
	for _, r := range cluster.replicas {
		if n := r.starts.Load(); n != 1 {
			run.violations = append(run.violations, fmt.Sprintf("replica %d was started %d times: it must ride out the failover", r.id, n))
		}
	}

	// With a synchronous standby the promoted history continues the one watches saw, so a watch
	// must ride the failover out. Losing writes to an asynchronous one makes the counter go back,
	// which ends every watch with 410 (the client relists); the other rules hold across it.
	var expired []string
	for _, seg := range segments {
		if seg.Expired != "" {
			expired = append(expired, fmt.Sprintf("watch %d on replica-%d at RV %d: %s", seg.Watcher, seg.Replica, seg.ExpiredAt, seg.Expired))
			if sc.partition {
				seg.Expired = ""
			}
		}
	}
	// A history that lost writes on purpose is not linearizable, and porcupine would spend its
	// whole time budget on proving that for every key.
	if !sc.partition {
		h := linHistory{Ops: ops, Segments: segments, Committed: committed, StartRV: startRV, End: end,
			CompactedRV: compactedRV, GlobalGap: globalGap, CheckTimeout: checkTimeout(t),
			Faults: []linFault{{Kind: "primary-killed", Target: "postgres", At: killAt, Done: promoted}}}
		report := checkLinHistory(h, outDir)
		run.violations = append(run.violations, report.Violations...)
		t.Logf("operations: %d %s, unknown outcome: %d; watch events checked: %d in %d segments",
			report.OpsChecked, formatCounts(report.OpsByKind), report.Unknown, report.WatchEvents, len(segments))
	}
	t.Logf("acknowledged writes: %d (%d before the kill, %d after the promotion), lost: %d", f.Acked, f.AckedBefore, f.AckedAfter, len(f.Lost))
	t.Logf("phantom watch events: %d, watches ended by 410: %d", len(f.Phantoms), len(expired))
	for _, e := range expired {
		t.Logf("  %s", e)
	}
	t.Logf("resourceVersions: last acknowledged before the kill %d, first after the promotion %d, committed up to %d", f.LastRVBefore, f.FirstRVAfter, lastRV)
	for _, u := range f.Unavailable {
		t.Logf("replica %d: writes unavailable for %s (last ack before the kill at %s, first ack after it at %s)",
			u.Replica, fmtTime(u.To-u.From), fmtTime(u.From), fmtTime(u.To))
	}
	cluster.failOnDataRaces(t)
	return run
}

// probeWrite creates objects through r, outside the checked namespace, until one is created.
func probeWrite(r *linReplica, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; time.Now().Before(deadline); i++ {
		ep := r.endpoint()
		obj := linDeployment(fmt.Sprintf("probe-%d-%d", r.id, i), "probe", 0)
		obj.Namespace = failoverProbeNamespace
		ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
		last = ep.rest.Post().Namespace(failoverProbeNamespace).Resource("gitopsdeployments").Body(obj).MaxRetries(0).Do(ctx).Error()
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// failoverFindings is what checkFailover reports.
type failoverFindings struct {
	Acked, AckedBefore, AckedAfter int
	// AckedPartitioned counts the writes sent after the standby was cut off and acknowledged
	// before the kill.
	AckedPartitioned int
	// Lost are acknowledged writes that the promoted history does not hold as acknowledged.
	Lost []string
	// Phantoms are watch events of changes that the promoted history does not hold.
	Phantoms []string
	// Backwards are results after the promotion at an RV below one acknowledged before the kill.
	Backwards []string
	// LastRVBefore and FirstRVAfter are the RVs of the last write acknowledged before the kill
	// and of the first one acknowledged after the promotion.
	LastRVBefore, FirstRVAfter int64
	Unavailable                []failoverGap
}

// failoverGap is a replica's time without acknowledged writes: from the last acknowledgement
// before the kill to the first acknowledgement of a write sent after it.
type failoverGap struct {
	Replica  int
	From, To int64
}

// checkFailover holds the recorded operations and watch events to the history read from the
// promoted server. killed is when the old primary was dead, promoted when the standby took
// writes.
func checkFailover(ops []linOp, segments []*linSegment, committed []linChange, killed, promoted int64) failoverFindings {
	var f failoverFindings
	type at struct {
		rv   int64
		name string
	}
	byRV := map[at]linChange{}
	for _, c := range committed {
		byRV[at{c.RV, c.Name}] = c
	}
	sorted := append([]linOp(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Return < sorted[j].Return })
	lastBefore := map[int]int64{}
	firstAfter := map[int]int64{}
	var firstAfterReturn int64
	for _, op := range sorted {
		if !op.Kind.writes() || op.Outcome != linOK {
			continue
		}
		f.Acked++
		if c, ok := byRV[at{op.RV, op.Name}]; !ok || c.Token != op.Token || c.Type == watch.Deleted {
			f.Lost = append(f.Lost, fmt.Sprintf("acknowledged write missing from the promoted history: %s", op))
		}
		switch {
		case op.Return < killed:
			f.AckedBefore++
			f.LastRVBefore = max(f.LastRVBefore, op.RV)
			lastBefore[op.Replica] = op.Return
		case op.Call > killed:
			f.AckedAfter++
			if _, ok := firstAfter[op.Replica]; !ok {
				firstAfter[op.Replica] = op.Return
			}
			if firstAfterReturn == 0 || op.Return < firstAfterReturn {
				firstAfterReturn, f.FirstRVAfter = op.Return, op.RV
			}
		}
	}
	for _, op := range sorted {
		// Lists and writes sent after the promotion must see everything acknowledged before the
		// kill: the promoted server's counter continues from the old primary's.
		if op.Outcome == linOK && op.Call > promoted && (op.Kind.writes() || op.Kind == linList) && op.RV <= f.LastRVBefore {
			f.Backwards = append(f.Backwards, fmt.Sprintf("RV %d after the promotion is not above %d, acknowledged before the kill: %s", op.RV, f.LastRVBefore, op))
		}
	}
	for replica, from := range lastBefore {
		if to, ok := firstAfter[replica]; ok {
			f.Unavailable = append(f.Unavailable, failoverGap{Replica: replica, From: from, To: to})
		}
	}
	sort.Slice(f.Unavailable, func(i, j int) bool { return f.Unavailable[i].Replica < f.Unavailable[j].Replica })
	for _, seg := range segments {
		for _, ev := range seg.Events {
			c, ok := byRV[at{ev.RV, ev.Name}]
			if !ok || c.Token != ev.Token || c.Type != ev.Type {
				f.Phantoms = append(f.Phantoms, fmt.Sprintf("watch %d on replica-%d delivered %s, which the promoted history does not hold", seg.Watcher, seg.Replica, ev))
			}
		}
	}
	return f
}

// checkFinalState compares the objects read through every replica and straight from the
// promoted database with the state the promoted history ends in.
func checkFinalState(t *testing.T, cluster *linCluster, dsn string, committed []linChange) []string {
	want := map[string]linObject{}
	for _, c := range committed {
		applyChange(want, c)
	}
	var v []string
	stored := readStoredObjects(t, dsn)
	if !sameItems(stored, want) {
		v = append(v, fmt.Sprintf("the promoted database holds %s, its history ends in %s", formatItems(stored), formatItems(want)))
	}
	for _, r := range cluster.replicas {
		ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
		page, err := listPage(ctx, r.endpoint().rest, "", 0)
		cancel()
		if err != nil {
			v = append(v, fmt.Sprintf("listing through replica %d after the failover: %v", r.id, err))
			continue
		}
		got := map[string]linObject{}
		for i := range page.Items {
			got[page.Items[i].Name] = objectOf(&page.Items[i])
		}
		if !sameItems(got, want) {
			v = append(v, fmt.Sprintf("replica %d lists %s, the promoted history ends in %s", r.id, formatItems(got), formatItems(want)))
		}
	}
	return v
}

// readStoredObjects reads the test namespace's objects from the objects table.
func readStoredObjects(t *testing.T, dsn string) map[string]linObject {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT name, value, mod_rv FROM objects WHERE key LIKE '%/gitopsdeployments/`+linNamespace+`/%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]linObject{}
	for rows.Next() {
		var (
			name  string
			value []byte
			o     linObject
		)
		if err := rows.Scan(&name, &value, &o.RV); err != nil {
			t.Fatal(err)
		}
		if o.Token, err = tokenOfStored(value); err != nil {
			t.Fatal(err)
		}
		out[name] = o
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The failover check must be able to fail: a write acknowledged by the lost primary that the
// promoted history lacks, and a watch event of it, are reported; the RV the promoted server
// reuses for another write is reported as going backwards.
func TestFailoverCheckFindsPlantedLoss(t *testing.T) {
	const killed, promoted = 100, 200
	committed := []linChange{
		{RV: 2, Name: "a", Type: watch.Added, Token: "t1"},
		{RV: 3, Name: "a", Type: watch.Modified, Token: "t2"},
		// After the promotion: the standby never got t3 (RV 4), so RV 4 is handed out again.
		{RV: 4, Name: "b", Type: watch.Added, Token: "t4"},
	}
	ops := []linOp{
		{Replica: 0, Kind: linCreate, Name: "a", Token: "t1", Call: 0, Return: 10, RV: 2},
		{Replica: 0, Kind: linUpdate, Name: "a", Token: "t2", Call: 20, Return: 30, RV: 3},
		{Replica: 1, Kind: linUpdate, Name: "a", Token: "t3", Call: 40, Return: 50, RV: 4},
		{Replica: 1, Kind: linCreate, Name: "b", Token: "t4", Call: 300, Return: 310, RV: 4},
		{Replica: 0, Kind: linUpdate, Name: "a", Token: "t5", Call: 150, Return: 400, Outcome: linUnknown},
	}
	segments := []*linSegment{{Watcher: 0, Replica: 1, From: 1, Events: []linEvent{
		{watch.Added, "a", "t1", 2}, {watch.Modified, "a", "t2", 3}, {watch.Modified, "a", "t3", 4}}}}

	f := checkFailover(ops, segments, committed, killed, promoted)
	if len(f.Lost) != 1 || !strings.Contains(f.Lost[0], "t3") {
		t.Errorf("lost writes: got %q, want the write t3", f.Lost)
	}
	if len(f.Phantoms) != 1 || !strings.Contains(f.Phantoms[0], "t3") {
		t.Errorf("phantom events: got %q, want the event of t3", f.Phantoms)
	}
	if len(f.Backwards) != 1 || !strings.Contains(f.Backwards[0], "t4") {
		t.Errorf("RVs going backwards: got %q, want the write t4", f.Backwards)
	}
	if f.Acked != 4 || f.AckedBefore != 3 || f.AckedAfter != 1 {
		t.Errorf("acknowledged writes: %d (%d before, %d after), want 4 (3, 1)", f.Acked, f.AckedBefore, f.AckedAfter)
	}
	if len(f.Unavailable) != 1 || f.Unavailable[0] != (failoverGap{Replica: 1, From: 50, To: 310}) {
		t.Errorf("unavailability: got %+v, want replica 1 from 50 to 310", f.Unavailable)
	}
	for _, s := range append(append(f.Lost, f.Phantoms...), f.Backwards...) {
		t.Logf("reported as expected: %s", s)
	}

	// The same history without the loss passes.
	committed = append(committed[:2:2], linChange{RV: 4, Name: "a", Type: watch.Modified, Token: "t3"},
		linChange{RV: 5, Name: "b", Type: watch.Added, Token: "t4"})
	ops[3].RV = 5
	if f := checkFailover(ops, segments, committed, killed, promoted); len(f.Lost)+len(f.Phantoms)+len(f.Backwards) > 0 {
		t.Errorf("a history without loss gave findings: %q %q %q", f.Lost, f.Phantoms, f.Backwards)
	}
}
