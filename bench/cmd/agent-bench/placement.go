package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/bench/pkg/agentbench"
	"github.com/gitops-service/gitops-service/pkg/agent"
)

// agentFlag is -agent label=path, repeated.
type agentFlag []agentBinary

type agentBinary struct{ label, path string }

func (a *agentFlag) String() string { return fmt.Sprint(*a) }

func (a *agentFlag) Set(v string) error {
	label, path, ok := strings.Cut(v, "=")
	if !ok || label == "" || path == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz") != "" || len(label) > 20 {
		return fmt.Errorf("want label=path, the label of at most 20 lower-case letters, got %q", v)
	}
	*a = append(*a, agentBinary{label, path})
	return nil
}

// placementRun is one run of one agent binary.
type placementRun struct {
	agent string
	n     int
	res   *agentbench.PlacementResult
	// syncs and syncSeconds are the placement controller's reconciles (all results) and the
	// time they took, from the agent's /metrics at the end of the run.
	syncs, syncErrors, syncSeconds float64
}

// placementMain runs "agent-bench placement": for each run and each -agent binary in turn (so
// that a drift of the machine's load spreads over all of them), it starts the binary as an
// agent running only the placement controller, creates -tenants new tenants at once and times
// them until all are placed (agentbench.RunPlacement), stops the agent and deletes the tenants.
// The stack is a running hack/local-up.sh stack; GITOPS_LOCAL_API_ONLY=1 is enough, since
// the benchmark reports the instances Ready itself.
func placementMain(args []string) error {
	fs := flag.NewFlagSet("agent-bench placement", flag.ExitOnError)
	var agents agentFlag
	var (
		kubeconfig = fs.String("kubeconfig", "", "admin kubeconfig of the stack's kube-apiserver (default: <local-dir>/kubeconfig)")
		localDir   = fs.String("local-dir", "", "state folder of the hack/local-up.sh stack; the agents' logs go to its logs/ (required)")
		tenants    = fs.Int("tenants", 1000, "new tenant namespaces to create in each run, each with one GitOpsDeployment")
		workers    = fs.Int("workers", 32, "tenants created at once")
		instances  = fs.Int("instances", 2, "ArgoCDInstances of the fleet (placement-bench-1, ...), kept Ready by the benchmark")
		capacity   = fs.Int("capacity", 1000, "spec.capacity of each instance")
		runs       = fs.Int("runs", 3, "runs of each -agent")
		backlog    = fs.Bool("backlog", false, "create the tenants first and only then start the agent: time the placement of a backlog "+
			"of tenants that all exist, from the agent's start (its caches synced), without their creation")
		timeout   = fs.Duration("timeout", 5*time.Minute, "bound of each run's wait for the placements, and of each cleanup")
		agentArgs = fs.String("agent-args", "", "more flags for the agents, space-separated (e.g. '--kube-api-qps 400')")
		out       = fs.String("out", "", "Markdown report to write (default: stdout only)")
		invokedAs = fs.String("invoked-as", "", "the command to show in the report")
	)
	fs.Var(&agents, "agent", "label=path of an agent binary to measure (repeat it to compare builds, e.g. -agent before=... -agent after=...); "+
		"the label, lower-case letters, names the run's tenant namespaces")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *localDir == "" || len(agents) == 0 {
		return fmt.Errorf("-local-dir and -agent are required")
	}
	if *tenants <= 0 || *workers <= 0 || *instances <= 0 || *runs <= 0 {
		return fmt.Errorf("-tenants, -workers, -instances and -runs must be positive")
	}
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(*localDir, "kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	// The creates must not be held back by the client: 32 workers need more than 200 a second.
	cfg.QPS, cfg.Burst = 1000, 2000
	clients, err := agent.NewClients(cfg)
	if err != nil {
		return err
	}
	logf := func(format string, args ...interface{}) {
		fmt.Fprintf(os.Stderr, "agent-bench placement: "+format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	names := agentbench.PlacementInstanceNames(*instances)
	if err := agentbench.PlacementHeartbeats(ctx, clients, names, int32(*capacity), logf); err != nil {
		return err
	}
	// An earlier invocation's namespaces are deleted, and awaited, before the first run; each
	// run's after it only stop being tenants, and are deleted at the end (not awaited: that
	// takes minutes for thousands).
	if err := agentbench.CleanupPlacement(ctx, clients, agentbench.AwaitNamespaces, *timeout, logf); err != nil {
		return fmt.Errorf("cleaning up an earlier run: %w", err)
	}
	defer func() {
		if err := agentbench.CleanupPlacement(context.WithoutCancel(ctx), clients, agentbench.DeleteNamespaces, *timeout, logf); err != nil {
			logf("cleanup: %v", err)
		}
	}()
	started := time.Now().UTC()
	var results []placementRun
	for n := 1; n <= *runs; n++ {
		for _, a := range agents {
			r, err := placementOnce(ctx, a, n, *kubeconfig, *localDir, strings.Fields(*agentArgs), *backlog, agentbench.PlacementConfig{
				Clients: clients, ID: fmt.Sprintf("%s%d-%s", a.label, n, started.Format("150405")), Tenants: *tenants, Workers: *workers,
				Instances: names, Timeout: *timeout, Log: logf,
			})
			if cerr := agentbench.CleanupPlacement(context.WithoutCancel(ctx), clients, agentbench.KeepNamespaces, *timeout, logf); cerr != nil {
				logf("cleanup: %v", cerr)
			}
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", a.label, n, err)
			}
			results = append(results, r)
		}
	}
	report := renderPlacement(results, agents, *tenants, *workers, len(names), *capacity, *agentArgs, *backlog, started, *invokedAs)
	fmt.Print(report)
	if *out != "" {
		return os.WriteFile(*out, []byte(report), 0o644)
	}
	return nil
}

// placementOnce runs once with the agent binary a running only the placement controller:
// started before the creates, or with backlog once they are done. It stops the agent (by the
// PID it started) at the end.
func placementOnce(ctx context.Context, a agentBinary, n int, kubeconfig, localDir string, extra []string, backlog bool,
	cfg agentbench.PlacementConfig) (placementRun, error) {
	r := placementRun{agent: a.label, n: n}
	var addr string
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	start := func(ctx context.Context) (time.Time, error) {
		var err error
		addr, stop, err = startAgent(ctx, a, n, kubeconfig, localDir, extra, cfg.Log)
		return time.Now(), err
	}
	if backlog {
		cfg.Backlog = start
	} else {
		if _, err := start(ctx); err != nil {
			return r, err
		}
		time.Sleep(time.Second) // its first sync has nothing to do: no tenant of the run exists
	}
	res, err := agentbench.RunPlacement(ctx, cfg)
	if err != nil {
		return r, err
	}
	r.res = res
	cfg.Log("%s, run %d: %d tenants placed %s after the first create (creates took %s; per tenant p50 %s, max %s)",
		a.label, n, res.Tenants, res.Placed.Round(time.Millisecond), res.Creates.Round(time.Millisecond),
		res.Latency.P50.Round(time.Millisecond), res.Latency.Max.Round(time.Millisecond))
	// The controller may still be at its last syncs: give it a moment, then read its metrics.
	time.Sleep(time.Second)
	text, err := scrape("http://" + addr + "/metrics")
	if err != nil {
		cfg.Log("reading the agent's metrics: %v", err)
		return r, nil
	}
	for _, m := range []struct {
		name   string
		labels map[string]string
		into   *float64
	}{
		{"gitops_agent_reconcile_duration_seconds_count", map[string]string{"controller": "placement"}, &r.syncs},
		{"gitops_agent_reconcile_duration_seconds_sum", map[string]string{"controller": "placement"}, &r.syncSeconds},
		{"gitops_agent_reconciles_total", map[string]string{"controller": "placement", "result": "error"}, &r.syncErrors},
	} {
		samples, err := agentbench.ParseMetricSamples(text, m.name)
		if err != nil {
			return r, err
		}
		for _, s := range samples {
			match := true
			for k, v := range m.labels {
				match = match && s.Labels[k] == v
			}
			if match {
				*m.into += s.Value
			}
		}
	}
	return r, nil
}

// startAgent starts the agent binary a with only the placement controller and returns once
// its caches are synced (it logs "agent started", which hack/local/agent.sh waits for too),
// with the address of its /metrics and what stops it.
func startAgent(ctx context.Context, a agentBinary, n int, kubeconfig, localDir string, extra []string,
	logf func(string, ...interface{})) (string, func(), error) {
	addr, err := freeAddress()
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(filepath.Join(localDir, "logs"), 0o755); err != nil {
		return "", nil, err
	}
	logPath := filepath.Join(localDir, "logs", fmt.Sprintf("placement-bench-%s-%d.log", a.label, n))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--controllers", "placement", "--leader-elect=false",
		"--metrics-bind-address", addr, "-v", "1"}, extra...)
	cmd := exec.Command(a.path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	began := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("starting %s: %w", a.path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
	}
	logf("%s, run %d: agent %s started (PID %d, log %s)", a.label, n, a.path, cmd.Process.Pid, logPath)
	for {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("agent started")) {
			return addr, stop, nil
		}
		var err error
		select {
		case werr := <-exited:
			exited <- werr
			err = fmt.Errorf("the agent exited before it started (%v); see %s", werr, logPath)
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(20 * time.Millisecond):
			if time.Since(began) > time.Minute {
				err = fmt.Errorf("the agent did not start within a minute; see %s", logPath)
			}
		}
		if err != nil {
			stop()
			return "", nil, err
		}
	}
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func scrape(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func renderPlacement(results []placementRun, agents agentFlag, tenants, workers, instances, capacity int, agentArgs string, backlog bool,
	started time.Time, invokedAs string) string {
	var b bytes.Buffer
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	if backlog {
		fmt.Fprintf(&b, "%d tenant namespaces, each made a tenant by one GitOpsDeployment, created %d at a time while no placement "+
			"controller runs, on a fleet of %d Ready ArgoCDInstances of capacity %d; then the agent starts, running only the placement "+
			"controller. **placed** and **per tenant**: from the agent's start (its caches synced) to the first watch event of "+
			"the last (each) tenant's TenantPlacement with `spec.instance`. **creates**: the creates beforehand, not timed in **placed**. "+
			"**syncs**: the controller's reconciles in the run, and the time they took in all.\n\n", tenants, workers, instances, capacity)
	} else {
		fmt.Fprintf(&b, "%d new tenant namespaces, each made a tenant by one GitOpsDeployment, created %d at a time (namespace, then "+
			"deployment) on a fleet of %d Ready ArgoCDInstances of capacity %d; the agent runs only the placement controller. "+
			"**placed**: from just before the first create to the first watch event of the last tenant's TenantPlacement with "+
			"`spec.instance`. **creates**: until the response to the last create. **per tenant**: from its deployment's create to its "+
			"placement. **syncs**: the controller's reconciles in the run, and the time they took in all.\n\n",
			tenants, workers, instances, capacity)
	}
	fmt.Fprintf(&b, "| agent | run | placed s | creates s | per tenant p50 s | p90 s | max s | syncs | in syncs s | sync errors | balance (max/min) | moved |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %.0f | %.2f | %.0f | %d/%d | %d |\n", r.agent, r.n, s(r.res.Placed), s(r.res.Creates),
			s(r.res.Latency.P50), s(r.res.Latency.P90), s(r.res.Latency.Max), r.syncs, r.syncSeconds, r.syncErrors,
			r.res.Balance.Max, r.res.Balance.Min, r.res.Moved)
	}
	fmt.Fprintf(&b, "\n| agent | placed s: mean | min | max |\n|---|---|---|---|\n")
	for _, a := range agents {
		var sum, lo, hi time.Duration
		k := 0
		for _, r := range results {
			if r.agent != a.label {
				continue
			}
			if k == 0 || r.res.Placed < lo {
				lo = r.res.Placed
			}
			if r.res.Placed > hi {
				hi = r.res.Placed
			}
			sum += r.res.Placed
			k++
		}
		if k > 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", a.label, s(sum/time.Duration(k)), s(lo), s(hi))
		}
	}
	fmt.Fprintf(&b, "\n| | |\n|---|---|\n")
	if invokedAs != "" {
		fmt.Fprintf(&b, "| command | `%s` |\n", invokedAs)
	}
	if agentArgs != "" {
		fmt.Fprintf(&b, "| agent flags added | `%s` |\n", agentArgs)
	}
	fmt.Fprintf(&b, "| date | %s |\n", started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "| machine | %s |\n", machine())
	fmt.Fprintf(&b, "| Go | %s |\n", runtime.Version())
	return b.String()
}
