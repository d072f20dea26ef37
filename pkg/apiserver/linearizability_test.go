package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// The linearizability test runs three gitops-apiserver replicas as processes of their own on
// one PostgreSQL of the test's own, drives them through the HTTP API from many clients while it
// kills, freezes and disconnects them and restarts PostgreSQL, and then checks the recorded
// history: single-key operations with porcupine, watches and lists against the committed
// history read from the `changes` table.
//
//	hack/test-postgres.sh go test -count=1 -run 'TestLinearizability$' -v ./pkg/apiserver/
//	GITOPS_LINEARIZABILITY_DURATION=10m ... (make linearizability)
const (
	// linReplicaEnv carries a replica's linReplicaSpec (JSON) into the re-executed test binary.
	linReplicaEnv = "GITOPS_LINEARIZABILITY_REPLICA"
	// linDurationEnv sets how long the workload and the faults run (default linDefaultDuration).
	linDurationEnv     = "GITOPS_LINEARIZABILITY_DURATION"
	linDefaultDuration = 45 * time.Second
	linReplicas        = 3
	linNamespace       = "lin"
	// linReplicaStartTimeout bounds a replica's start, which under -race on a shared 2-core
	// machine takes tens of seconds.
	linReplicaStartTimeout = 3 * time.Minute
)

// linReplicaSpec is what a replica process needs: where PostgreSQL is (through its proxy) and
// where to write its linReplicaInfo.
type linReplicaSpec struct {
	DSN  string `json:"dsn"`
	File string `json:"file"`
}

// linReplicaInfo is what a running replica tells the test. The test client skips TLS
// verification (the serving certificate is self-signed per start); the bearer token is the
// loopback client's, which the server authenticates on every port as system:masters.
type linReplicaInfo struct {
	Port  int    `json:"port"`
	Token string `json:"token"`
}

// TestLinearizabilityReplica is one replica of TestLinearizability, run in a process of its own;
// without linReplicaEnv (every ordinary run) it returns at once.
func TestLinearizabilityReplica(t *testing.T) {
	raw := os.Getenv(linReplicaEnv)
	if raw == "" {
		return
	}
	var spec linReplicaSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("%s: %v", linReplicaEnv, err)
	}
	o := testOptions(t, spec.DSN)
	// Longer than any run, so that nothing is compacted and every 410 is a violation.
	o.Postgres.Storage.CompactionWindow = 24 * time.Hour
	// A replica restarted while PostgreSQL is down waits for it instead of exiting.
	o.Postgres.ConnectionTimeout = linReplicaStartTimeout
	ctx := context.Background()
	config, cleanup, err := o.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	server, err := config.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- server.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()

	loopback := config.GenericConfig.LoopbackClientConfig
	waitReady(t, versioned.NewForConfigOrDie(loopback), done)
	info := linReplicaInfo{
		Port:  o.RecommendedOptions.SecureServing.Listener.Addr().(*net.TCPAddr).Port,
		Token: loopback.BearerToken,
	}
	if err := writeFileAtomically(spec.File, info); err != nil {
		t.Fatal(err)
	}
	// Serves until the test kills this process, or until the test process is gone: a test that
	// times out panics without running its cleanups.
	parent := os.Getppid()
	for {
		select {
		case err := <-done:
			t.Fatalf("server stopped: %v", err)
		case <-time.After(500 * time.Millisecond):
			if os.Getppid() != parent {
				os.Exit(1)
			}
		}
	}
}

func waitReady(t *testing.T, client versioned.Interface, done <-chan error) {
	deadline := time.Now().Add(linReplicaStartTimeout)
	for {
		result := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background())
		if result.Error() == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("server stopped before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v", result.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeFileAtomically makes the file appear complete or not at all to the polling test.
func writeFileAtomically(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func linearizabilityDuration(t *testing.T) time.Duration {
	s := os.Getenv(linDurationEnv)
	if s == "" {
		return linDefaultDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 10m", linDurationEnv, s)
	}
	return d
}

func TestLinearizability(t *testing.T) {
	duration := linearizabilityDuration(t)
	outDir, err := os.MkdirTemp("", "gitops-linearizability-")
	if err != nil {
		t.Fatal(err)
	}
	// Replica logs and visualizations stay when the test fails, for the report.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica logs and visualizations kept in %s", outDir)
			return
		}
		_ = os.RemoveAll(outDir)
	})

	pg := pgtest.StartServer(t)
	pgAddr := fmt.Sprintf("127.0.0.1:%d", pg.Port)
	clock := newLinClock()
	cluster := &linCluster{clock: clock, pg: pg}
	for i := 0; i < linReplicas; i++ {
		proxy := startPGProxy(t, pgAddr)
		r := newLinReplica(t, i, outDir, proxiedDSN(t, pg.DSN(), proxy.addr()), proxy)
		cluster.replicas = append(cluster.replicas, r)
	}
	t.Cleanup(cluster.stopAll)
	for _, r := range cluster.replicas {
		r.start(t)
	}
	for _, r := range cluster.replicas {
		if r.waitReady(linReplicaStartTimeout) == nil {
			t.Fatalf("replica %d did not start; its log is in %s", r.id, r.logPath)
		}
	}

	startRV := currentRV(t, cluster.replicas[0])
	t.Logf("replicas ready at %s, start RV %d, workload for %s", clock.since(), startRV, duration)

	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	watchCtx, stopWatches := context.WithCancel(context.Background())
	defer stopWatches()
	workers := startWorkers(workCtx, cluster)
	watchers := startWatchers(watchCtx, cluster, startRV)

	faults := cluster.injectFaults(t, time.Now().Add(duration))
	stopWork()
	ops := collectOps(workers)
	end := clock.now()

	cluster.heal(t)
	waitQuiescent(t, pg.DSN())
	committed, compactedRV, globalGap := readCommittedHistory(t, pg.DSN())
	lastRV := startRV
	if len(committed) > 0 {
		lastRV = committed[len(committed)-1].RV
	}
	if !waitWatchersCaughtUp(watchers, lastRV, 2*time.Minute) {
		t.Logf("not every watcher reached RV %d within 2m; the check names those behind", lastRV)
	}
	stopWatches()
	segments := collectSegments(watchers)

	h := linHistory{Ops: ops, Segments: segments, Committed: committed, StartRV: startRV, End: end,
		CompactedRV: compactedRV, GlobalGap: globalGap, Faults: faults, CheckTimeout: checkTimeout(t)}
	t.Logf("checking %d operations and %d watch segments against %d committed changes", len(ops), len(segments), len(committed))
	report := checkLinHistory(h, outDir)

	t.Logf("operations checked: %d %s", report.OpsChecked, formatCounts(report.OpsByKind))
	t.Logf("operations with unknown outcome (recorded as possibly applied): %d; refused connections (never sent, not recorded): %d",
		report.Unknown, countRefused(workers))
	t.Logf("faults injected: %d %s", len(faults), formatCounts(countFaults(faults)))
	t.Logf("watch events compared: %d in %d watch segments; committed changes: %d (RV %d to %d)",
		report.WatchEvents, len(segments), len(committed), startRV, lastRV)
	t.Logf("lists checked: %d", report.ListsChecked)
	t.Logf("violations: %d", len(report.Violations))
	for _, v := range report.Violations {
		t.Errorf("violation: %s", v)
	}
	if len(report.Violations) > 0 {
		t.Logf("faults, for comparison with the violations:\n%s", formatFaults(faults))
	}
	cluster.failOnDataRaces(t)
}

// failOnDataRaces fails the test for every data race a replica reported. The replicas are
// this test binary, built with -race when the test is, but their output goes to their logs,
// where a race report would otherwise go unread.
func (c *linCluster) failOnDataRaces(t *testing.T) {
	for _, r := range c.replicas {
		log, err := os.ReadFile(r.logPath)
		if err != nil {
			t.Errorf("reading replica %d's log: %v", r.id, err)
			continue
		}
		if n := strings.Count(string(log), "WARNING: DATA RACE"); n > 0 {
			t.Errorf("replica %d reported %d data races; its log is in %s", r.id, n, r.logPath)
		}
	}
}

// checkTimeout shares what is left of the test's deadline, less a minute for the cleanups,
// among the keys: a test that times out panics without stopping its processes.
func checkTimeout(t *testing.T) time.Duration {
	deadline, ok := t.Deadline()
	if !ok {
		return linCheckTimeout
	}
	return min(linCheckTimeout, max(time.Second, (time.Until(deadline)-time.Minute)/time.Duration(len(linNames))))
}

// linClock timestamps calls, returns and faults on one monotonic clock.
type linClock struct{ start time.Time }

func newLinClock() *linClock      { return &linClock{start: time.Now()} }
func (c *linClock) now() int64    { return int64(time.Since(c.start)) }
func (c *linClock) since() string { return time.Duration(c.now()).Round(time.Millisecond).String() }
func fmtTime(ns int64) string     { return time.Duration(ns).Round(time.Millisecond).String() }
func proxiedDSN(t *testing.T, dsn, addr string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}

// linCluster is the replicas, their proxies and PostgreSQL.
type linCluster struct {
	clock    *linClock
	pg       *pgtest.Server
	replicas []*linReplica
}

// linReplica is one replica process; it gets a new port and token on every start, which
// clients pick up through endpoint.
type linReplica struct {
	id      int
	dir     string
	logPath string
	dsn     string
	proxy   *pgProxy

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	current  atomic.Pointer[linEndpoint]
	starts   atomic.Int64
	infoPath string
}

// linEndpoint is how to reach one start of a replica.
type linEndpoint struct {
	start int64
	rest  rest.Interface
	typed versioned.Interface
}

func newLinReplica(t *testing.T, id int, outDir, dsn string, proxy *pgProxy) *linReplica {
	dir := filepath.Join(outDir, fmt.Sprintf("replica-%d", id))
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &linReplica{id: id, dir: dir, logPath: filepath.Join(dir, "log"), dsn: dsn, proxy: proxy,
		infoPath: filepath.Join(dir, "info.json")}
}

func (r *linReplica) endpoint() *linEndpoint { return r.current.Load() }

// start re-executes the test binary as the replica and publishes its endpoint once it is ready.
func (r *linReplica) start(t *testing.T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = os.Remove(r.infoPath)
	spec, _ := json.Marshal(linReplicaSpec{DSN: r.dsn, File: r.infoPath})
	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLinearizabilityReplica$", "-test.v")
	// TMPDIR puts the replica's certificates under the test's folder, which a killed process
	// cannot clean up itself.
	cmd.Env = append(os.Environ(), linReplicaEnv+"="+string(spec), "TMPDIR="+filepath.Join(r.dir, "tmp"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	n := r.starts.Add(1)
	go r.publishWhenReady(n, exited)
}

func (r *linReplica) publishWhenReady(start int64, exited <-chan struct{}) {
	for {
		select {
		case <-exited:
			return
		case <-time.After(100 * time.Millisecond):
		}
		b, err := os.ReadFile(r.infoPath)
		if err != nil {
			continue
		}
		var info linReplicaInfo
		if json.Unmarshal(b, &info) != nil {
			continue
		}
		cfg := &rest.Config{
			Host:            fmt.Sprintf("https://127.0.0.1:%d", info.Port),
			BearerToken:     info.Token,
			TLSClientConfig: rest.TLSClientConfig{Insecure: true},
			QPS:             -1,
		}
		typed, err := versioned.NewForConfig(cfg)
		if err != nil {
			panic(err)
		}
		r.current.Store(&linEndpoint{start: start, rest: typed.ManagedGitopsV1alpha1().RESTClient(), typed: typed})
		return
	}
}

// waitReady waits until the replica's latest start is served and returns its endpoint, or nil.
func (r *linReplica) waitReady(timeout time.Duration) *linEndpoint {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ep := r.endpoint(); ep != nil && ep.start == r.starts.Load() {
			return ep
		}
		select {
		case <-r.exitedChan():
			return nil // it failed to start: its log says why
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func (r *linReplica) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && r.cmd.Process != nil {
		_ = syscall.Kill(r.cmd.Process.Pid, sig)
	}
}

// kill stops the replica by its PID and waits until it is gone.
func (r *linReplica) kill() {
	r.signal(syscall.SIGCONT) // a SIGSTOPped process dies on SIGKILL too, but say it plainly
	r.signal(syscall.SIGKILL)
	r.mu.Lock()
	exited := r.exited
	r.mu.Unlock()
	if exited != nil {
		<-exited
	}
}

func (c *linCluster) stopAll() {
	for _, r := range c.replicas {
		r.kill()
		r.proxy.close()
	}
}

// heal ends every fault: PostgreSQL up, proxies open, every replica running and ready.
func (c *linCluster) heal(t *testing.T) {
	for _, r := range c.replicas {
		r.signal(syscall.SIGCONT)
		r.proxy.reopen()
		select {
		case <-r.exitedChan():
			r.start(t)
		default:
		}
	}
	for _, r := range c.replicas {
		if r.waitReady(linReplicaStartTimeout) == nil {
			t.Fatalf("replica %d did not come back; its log is in %s", r.id, r.logPath)
		}
	}
}

func (r *linReplica) exitedChan() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exited
}

// currentRV is the RV of a list of the test namespace, read through the replica.
func currentRV(t *testing.T, r *linReplica) int64 {
	var lastErr error
	for i := 0; i < 100; i++ {
		ep := r.waitReady(linReplicaStartTimeout)
		if ep == nil {
			t.Fatalf("replica %d not ready", r.id)
		}
		out, err := listPage(context.Background(), ep.rest, "", 0)
		if err == nil {
			rv, err := strconv.ParseInt(out.ResourceVersion, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return rv
		}
		lastErr = err
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("listing through replica %d: %v", r.id, lastErr)
	return 0
}

// linFault is one injected fault.
type linFault struct {
	Kind     string
	Target   string
	At, Done int64
}

var linFaultKinds = []string{"sigkill", "sigstop", "pg-restart-fast", "pg-cut", "pg-restart-immediate"}

// injectFaults runs on the test goroutine (pgtest.Server fails the test from there) and injects
// one fault after another, with a quiet moment between them, until deadline.
func (c *linCluster) injectFaults(t *testing.T, deadline time.Time) []linFault {
	var faults []linFault
	perKind := map[string]int{}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; ; i++ {
		quiet := time.Duration(2000+rng.Intn(3000)) * time.Millisecond
		if time.Until(deadline) < quiet+8*time.Second {
			time.Sleep(time.Until(deadline))
			return faults
		}
		time.Sleep(quiet)
		kind := linFaultKinds[i%len(linFaultKinds)]
		// Each kind of fault visits the replicas in turn.
		r := c.replicas[perKind[kind]%len(c.replicas)]
		perKind[kind]++
		f := c.inject(t, kind, r, rng)
		faults = append(faults, f)
		t.Logf("fault %-20s %-9s at %s, over at %s", f.Kind, f.Target, fmtTime(f.At), fmtTime(f.Done))
	}
}

func (c *linCluster) inject(t *testing.T, kind string, r *linReplica, rng *rand.Rand) linFault {
	f := linFault{Kind: kind, Target: fmt.Sprintf("replica-%d", r.id), At: c.clock.now()}
	pause := time.Duration(1000+rng.Intn(3000)) * time.Millisecond
	switch kind {
	case "sigkill":
		r.kill()
		time.Sleep(pause / 2)
		r.start(t)
		// The next fault waits for this one's recovery, or faults would pile up into an outage.
		if r.waitReady(linReplicaStartTimeout) == nil {
			t.Fatalf("replica %d did not restart; its log is in %s", r.id, r.logPath)
		}
	case "sigstop":
		r.signal(syscall.SIGSTOP)
		time.Sleep(pause)
		r.signal(syscall.SIGCONT)
	case "pg-restart-fast", "pg-restart-immediate":
		f.Target = "postgres"
		c.pg.Stop(strings.TrimPrefix(kind, "pg-restart-"))
		time.Sleep(pause / 2)
		c.pg.Start()
	case "pg-cut":
		r.proxy.cut()
		time.Sleep(pause)
		r.proxy.reopen()
	}
	f.Done = c.clock.now()
	return f
}

func countFaults(faults []linFault) map[string]int {
	n := map[string]int{}
	for _, f := range faults {
		n[f.Kind]++
	}
	return n
}

func formatFaults(faults []linFault) string {
	var b strings.Builder
	for _, f := range faults {
		fmt.Fprintf(&b, "  %s-%s %s %s\n", fmtTime(f.At), fmtTime(f.Done), f.Kind, f.Target)
	}
	return b.String()
}

// pgProxy forwards TCP connections to PostgreSQL for one replica, so that the test can cut that
// replica alone off: cut closes every proxied connection and refuses new ones until reopen.
type pgProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	refuse  bool
	conns   map[net.Conn]struct{}
	closing bool
}

func startPGProxy(t *testing.T, target string) *pgProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.serve()
	return p
}

func (p *pgProxy) addr() string { return p.ln.Addr().String() }

func (p *pgProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		go p.forward(c)
	}
}

// track registers c unless connections are refused.
func (p *pgProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse || p.closing {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *pgProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *pgProxy) forward(client net.Conn) {
	defer p.untrack(client)
	defer client.Close()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = copyConn(server, client); done <- struct{}{} }()
	go func() { _, _ = copyConn(client, server); done <- struct{}{} }()
	// Either direction ending ends the session, as a real disconnect would.
	<-done
}

func copyConn(dst, src net.Conn) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err != nil {
			return n, err
		}
	}
}

func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *pgProxy) reopen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = false
}

func (p *pgProxy) close() {
	p.mu.Lock()
	p.closing = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
}
