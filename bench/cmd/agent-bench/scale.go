package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/bench/pkg/agentbench"
	"github.com/gitops-service/gitops-service/bench/pkg/bench"
	"github.com/gitops-service/gitops-service/pkg/agent"
)

// scaleMain runs "agent-bench scale": T tenants with one automated deployment each, for each
// T of -tenants, growing from one to the next (agentbench.RunScale); with -environments,
// then ManagedEnvironments to the stack's remote cluster (bench/pkg/agentbench/scale_env.go).
func scaleMain(args []string) error {
	fs := flag.NewFlagSet("agent-bench scale", flag.ExitOnError)
	var (
		kubeconfig  = fs.String("kubeconfig", "", "admin kubeconfig of the stack's kube-apiserver (default: <local-dir>/kubeconfig)")
		localDir    = fs.String("local-dir", "", "state folder of the hack/local-up.sh stack, whose pids/ give the processes to measure (required)")
		argoNS      = fs.String("argocd-namespace", "gitops-service-argocd", "namespace of the Argo CD instance the agent drives")
		tenants     = fs.String("tenants", "10,100,1000", "tenant counts to measure at, ascending; the run grows from one to the next")
		probe       = fs.Int("probe", 20, "deployments created at each T, in as many existing tenants, to time both directions at that T (0: none)")
		workers     = fs.Int("workers", 8, "tenants created at once")
		settle      = fs.Duration("settle", 15*time.Second, "wait before each sample of watches and memory")
		stepTimeout = fs.Duration("step-timeout", 15*time.Minute, "bound of the wait for each step's Synced (and its probe)")
		keep        = fs.Bool("keep", false, "leave the tenant namespaces (and the environments step's objects) in place at the end")
		envs        = fs.Int("environments", 0, "after the last step, this many ManagedEnvironments to the stack's remote cluster with credentials of their own, "+
			"then as many more with one shared credential, in existing tenants (the last step needs twice as many); 0: none")
		remoteKube = fs.String("remote-kubeconfig", "", "admin kubeconfig of the stack's remote cluster, for -environments (default: <local-dir>/remote.kubeconfig)")
		out        = fs.String("out", "", "Markdown report to write (default: stdout only)")
		invokedAs  = fs.String("invoked-as", "", "the command to show in the report")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *localDir == "" {
		return fmt.Errorf("-local-dir is required")
	}
	if *kubeconfig == "" {
		*kubeconfig = *localDir + "/kubeconfig"
	}
	steps, err := agentbench.ParseSteps(*tenants)
	if err != nil {
		return err
	}
	if *envs < 0 {
		return fmt.Errorf("-environments must not be negative")
	}
	if last := steps[len(steps)-1]; 2**envs > last {
		return fmt.Errorf("-environments %d needs a last step of at least %d tenants (two phases of %d), not %d", *envs, 2**envs, *envs, last)
	}
	var remote *agentbench.RemoteCluster
	if *envs > 0 {
		if *remoteKube == "" {
			*remoteKube = *localDir + "/remote.kubeconfig"
		}
		rcfg, err := clientcmd.BuildConfigFromFlags("", *remoteKube)
		if err != nil {
			return fmt.Errorf("loading %s (-environments needs the stack's remote cluster: hack/local-up.sh with GITOPS_LOCAL_REMOTE_CLUSTER=1): %w", *remoteKube, err)
		}
		rcfg.QPS, rcfg.Burst = 200, 400
		rkube, err := kubernetes.NewForConfig(rcfg)
		if err != nil {
			return err
		}
		remote = &agentbench.RemoteCluster{Kube: rkube, Server: rcfg.Host, CAData: rcfg.CAData}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	// The creates must not be held back by client-go's default of 5 requests a second.
	cfg.QPS, cfg.Burst = 200, 400
	clients, err := agent.NewClients(cfg)
	if err != nil {
		return err
	}
	// Ctrl-C ends the run early; the tenants are still deleted (unless -keep).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now().UTC()
	sampler := agentbench.StackSampler{Kube: clients.Kube, LocalDir: *localDir}
	res, runErr := agentbench.RunScale(ctx, agentbench.ScaleConfig{
		Clients: clients, ArgoNamespace: *argoNS, Steps: steps, Probe: *probe, Workers: *workers,
		Settle: *settle, StepTimeout: *stepTimeout, Keep: *keep, Sample: sampler.Sample,
		Environments: *envs, Remote: remote,
		Log: func(format string, args ...interface{}) {
			fmt.Fprintf(os.Stderr, "agent-bench scale: "+format+"\n", args...)
		},
	})
	if res == nil || len(res.Steps) == 0 {
		if runErr == nil {
			runErr = fmt.Errorf("no step was measured")
		}
		return runErr
	}
	report := agentbench.RenderScale(res, agentbench.ScaleReportInfo{
		InvokedAs: *invokedAs, Started: started, Wall: time.Since(started), Machine: machine(),
		GoVersion: runtime.Version(), Probe: *probe, Settle: *settle, Workers: *workers,
		StepTimeout: *stepTimeout, Kept: *keep,
	})
	fmt.Print(report)
	if *out != "" {
		// The file's fleet sections are the fleet benchmark's (agent-bench fleet, and its -scale): they stay.
		if old, err := os.ReadFile(*out); err == nil {
			if section, ok := agentbench.FleetSection(string(old)); ok {
				report = agentbench.SpliceFleetSection(report, section)
			}
			if section, ok := agentbench.FleetScaleSection(string(old)); ok {
				report = agentbench.SpliceFleetScaleSection(report, section)
			}
		}
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("the run ended early, after T=%d: %w", res.Steps[len(res.Steps)-1].Tenants, runErr)
	}
	return nil
}

// machine describes this machine: CPUs and their model, memory, load average.
func machine() string {
	model, memory := "", ""
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = ", " + strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int64
			if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
				memory = fmt.Sprintf(", %.1f GiB memory", float64(kb)/(1<<20))
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%d CPUs%s%s, %s/%s; load average at the end: %s", runtime.NumCPU(), model, memory,
		runtime.GOOS, runtime.GOARCH, bench.LoadAverage())
}
