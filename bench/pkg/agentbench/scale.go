package agentbench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gitops-service/gitops-service/pkg/agent"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// The scale benchmark (issue 18): T tenant namespaces with one automated GitOpsDeployment each,
// grown step by step; at each step it measures the time until all are Synced, the watches on
// kube-apiserver, the memory of argocd-application-controller and of the agent, and the
// latency of both directions.
const (
	// ScaleLabel marks the namespaces the scale benchmark creates, so that a later run (or a
	// person, after -keep) finds them: kubectl delete namespace -l gitops-service.dev/agent-bench=scale
	ScaleLabel      = "gitops-service.dev/agent-bench"
	scaleLabelValue = "scale"
	// TenantDeployment is the name of each tenant's GitOpsDeployment; ProbeDeployment that of
	// the probe's second deployment in a tenant namespace.
	TenantDeployment = "scale"
	ProbeDeployment  = "probe"
)

// TenantNamespace is the name of tenant i (from 1).
func TenantNamespace(i int) string { return fmt.Sprintf("tenant-scale-%04d", i) }

// ScaleConfig is one scale run.
type ScaleConfig struct {
	agent.Clients
	ArgoNamespace string
	// Steps are the tenant counts to measure at, ascending; the tenants of a step stay for the
	// next (the run grows from one step to the next).
	Steps []int
	// Probe deployments are created, back to back, in as many tenant namespaces once a step is
	// Synced and measured, to time both directions at that T; they are deleted again before the
	// next step. 0 leaves the probe out.
	Probe int
	// Workers create namespaces and deployments at once.
	Workers int
	// Settle is waited before each sample of watches and memory.
	Settle time.Duration
	// StepTimeout bounds the wait for a step's Synced, and for its probe.
	StepTimeout time.Duration
	// Keep leaves the tenants in place at the end.
	Keep bool
	// Sample reads the watch count and the processes' memory.
	Sample func(context.Context) (Resources, error)
	// Environments, when positive, adds the environments step after the last step (scale_env.go):
	// that many ManagedEnvironments to Remote with distinct credentials, then as many with one
	// shared credential; the last step must have at least twice as many tenants.
	Environments int
	Remote       *RemoteCluster
	Log          func(format string, args ...interface{})
}

// ScaleStep is what was measured at one T.
type ScaleStep struct {
	Tenants int // T
	New     int // tenants created in this step
	// Created is how long the creates of the step's namespaces and deployments took; Synced is
	// from the first of them until every tenant's GitOpsDeployment (old and new) showed Synced
	// and Healthy in its status. NotSynced counts those that did not within StepTimeout.
	Created, Synced time.Duration
	NotSynced       int
	Resources       Resources
	// Ramp holds the latencies of the step's own creates (each the first deployment of a new
	// namespace, all at once); Probe those of the probe at T (nil without one).
	Ramp, Probe *Result
}

// ScaleResult is a whole run.
type ScaleResult struct {
	Baseline Resources
	Steps    []ScaleStep
	RepoURL  string
	// Environments is the environments step (nil without one).
	Environments *EnvironmentsResult
}

// ParseSteps parses "10,100,1000" into ascending, distinct, positive counts.
func ParseSteps(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(f, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != f {
			return nil, fmt.Errorf("tenant count %q is not a positive integer", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("tenant counts must be ascending: %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tenant counts")
	}
	return out, nil
}

// RunScale runs the steps. It refuses to start while tenant namespaces of an earlier run exist.
func RunScale(ctx context.Context, cfg ScaleConfig) (*ScaleResult, error) {
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	selector := ScaleLabel + "=" + scaleLabelValue
	old, err := cfg.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	if len(old.Items) > 0 {
		return nil, fmt.Errorf("%d tenant namespaces of an earlier run exist (%s ...): delete them first (kubectl delete namespace -l %s)",
			len(old.Items), old.Items[0].Name, selector)
	}
	if cfg.Environments > 0 {
		if cfg.Remote == nil {
			return nil, fmt.Errorf("the environments step needs the remote cluster")
		}
		if last := cfg.Steps[len(cfg.Steps)-1]; 2*cfg.Environments > last {
			return nil, fmt.Errorf("%d environments in each of two phases need at least %d tenants; the last step has %d", cfg.Environments, 2*cfg.Environments, last)
		}
		if err := checkRemoteClean(ctx, cfg.Remote); err != nil {
			return nil, err
		}
	}

	repoDir, err := os.MkdirTemp("", "agentbench-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(repoDir)
	// app0000 for the tenants' deployments, app0001 for the probe's: their ConfigMaps differ, so
	// a tenant's two Applications never own the same object.
	// envSharedPath(k) for the environments step's shared phase, whose deployments all go to
	// one remote namespace.
	repoURL, err := fixtureRepository(repoDir, 2+cfg.Environments)
	if err != nil {
		return nil, err
	}

	tr, err := StartTracker(ctx, cfg.Clients, cfg.ArgoNamespace)
	if err != nil {
		return nil, err
	}
	defer tr.Stop()

	var namespaces []string
	if !cfg.Keep {
		defer func() { cleanup(cfg.Clients, cfg.ArgoNamespace, namespaces, logf) }()
	}

	res := &ScaleResult{RepoURL: repoURL}
	logf("T=0: settling %s, then sampling the baseline", cfg.Settle)
	if res.Baseline, err = sample(ctx, cfg, tr); err != nil {
		return res, err
	}
	logf("T=0: %s", describe(res.Baseline))

	for _, T := range cfg.Steps {
		step := ScaleStep{Tenants: T, New: T - len(namespaces)}
		first := len(namespaces) + 1
		logf("T=%d: creating %d tenant namespaces with one automated GitOpsDeployment each", T, step.New)
		start := time.Now()
		uids, made, err := createTenants(ctx, cfg, tr, first, T, repoURL)
		namespaces = append(namespaces, made...)
		if err != nil {
			return res, err
		}
		step.Created = time.Since(start)

		stepCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
		var syncedAt time.Time
		_ = wait.PollUntilContextCancel(stepCtx, time.Second, true, func(context.Context) (bool, error) {
			notSynced := countNotSynced(tr, T)
			applied, reported := tr.Progress(uids)
			if notSynced == 0 && syncedAt.IsZero() {
				syncedAt = time.Now()
			}
			step.NotSynced = notSynced
			logf("T=%d %4.0fs: %d/%d Applications made, %d/%d reported Synced+Healthy; %d of %d tenants not Synced", T,
				time.Since(start).Seconds(), applied, len(uids), reported, len(uids), notSynced, T)
			return notSynced == 0 && reported == len(uids), nil
		})
		cancel()
		if syncedAt.IsZero() {
			step.Synced = time.Since(start)
		} else {
			step.Synced = syncedAt.Sub(start)
		}
		step.Ramp = tr.Result(uids)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}

		logf("T=%d: settling %s, then sampling", T, cfg.Settle)
		if step.Resources, err = sample(ctx, cfg, tr); err != nil {
			return res, err
		}
		logf("T=%d: %s", T, describe(step.Resources))

		if cfg.Probe > 0 {
			if step.Probe, err = probe(ctx, cfg, tr, T, repoURL, logf); err != nil {
				return res, err
			}
		}
		res.Steps = append(res.Steps, step)
		if step.NotSynced > 0 {
			logf("T=%d: %d tenants not Synced after %s; not growing further", T, step.NotSynced, cfg.StepTimeout)
			break
		}
	}
	if cfg.Environments > 0 {
		res.Environments, err = runEnvironments(ctx, cfg, tr, repoURL, len(namespaces), logf)
		if err != nil {
			return res, fmt.Errorf("environments: %w", err)
		}
	}
	return res, nil
}

func describe(r Resources) string {
	return fmt.Sprintf("%.0f watches on kube-apiserver, application-controller RSS %.1f MiB, agent RSS %.1f MiB, %d Applications",
		r.Watches, mib(r.ControllerRSS), mib(r.AgentRSS), r.Applications)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// sample waits Settle, then reads the stack's costs and counts the Applications.
func sample(ctx context.Context, cfg ScaleConfig, tr *Tracker) (Resources, error) {
	select {
	case <-ctx.Done():
		return Resources{}, ctx.Err()
	case <-time.After(cfg.Settle):
	}
	r, err := cfg.Sample(ctx)
	if err != nil {
		return r, err
	}
	apps, err := tr.Applications()
	if err != nil {
		return r, err
	}
	r.Applications = len(apps)
	return r, nil
}

// createTenants creates the namespaces first..last with their deployment, cfg.Workers at a
// time, registering each deployment with the tracker; it returns the deployments' UIDs and the
// namespaces it made (also on error, for the cleanup).
func createTenants(ctx context.Context, cfg ScaleConfig, tr *Tracker, first, last int, repoURL string) ([]string, []string, error) {
	var (
		mu       sync.Mutex
		uids     []string
		made     []string
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ns := TenantNamespace(i)
				_, err := cfg.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					Name: ns, Labels: map[string]string{ScaleLabel: scaleLabelValue},
				}}, metav1.CreateOptions{})
				var created *managedv1alpha1.GitOpsDeployment
				if err == nil {
					mu.Lock()
					made = append(made, ns)
					mu.Unlock()
					created, err = cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx,
						automatedDeployment(TenantDeployment, repoURL, appPath(0)), metav1.CreateOptions{})
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("tenant %s: %w", ns, err)
				}
				if err == nil {
					tr.Created(created, 0)
					uids = append(uids, string(created.UID))
				}
				mu.Unlock()
			}
		}()
	}
	for i := first; i <= last; i++ {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	sort.Strings(made)
	return uids, made, firstErr
}

// countNotSynced counts the tenants 1..T whose deployment does not show Synced and Healthy in
// its status (or does not exist in the watch's cache yet).
func countNotSynced(tr *Tracker, T int) int {
	ds, err := tr.Deployments()
	if err != nil {
		return T
	}
	synced := 0
	for _, d := range ds {
		if d.Name != TenantDeployment || !strings.HasPrefix(d.Namespace, "tenant-scale-") {
			continue
		}
		if d.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced && d.Status.Health.Status == managedv1alpha1.HealthStatusCodeHealthy {
			synced++
		}
	}
	return T - synced
}

// probe creates cfg.Probe deployments, back to back, in tenant namespaces spread over 1..T,
// waits until both directions are observed, then deletes them and waits for their
// Applications to go.
func probe(ctx context.Context, cfg ScaleConfig, tr *Tracker, T int, repoURL string, logf func(string, ...interface{})) (*Result, error) {
	n := cfg.Probe
	if n > T {
		n = T
	}
	logf("T=%d: probe: creating %d more GitOpsDeployments, one in each of %d tenant namespaces", T, n, n)
	var uids, probed []string
	start := time.Now()
	for k := 0; k < n; k++ {
		ns := TenantNamespace(1 + k*T/n)
		created, err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx,
			automatedDeployment(ProbeDeployment, repoURL, appPath(1)), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("probe in %s: %w", ns, err)
		}
		tr.Created(created, 1)
		uids = append(uids, string(created.UID))
		probed = append(probed, ns)
	}
	stepCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	_ = wait.PollUntilContextCancel(stepCtx, time.Second, true, func(context.Context) (bool, error) {
		applied, reported := tr.Progress(uids)
		logf("T=%d probe %3.0fs: %d/%d Applications made, %d/%d Synced+Healthy reported back", T,
			time.Since(start).Seconds(), applied, n, reported, n)
		return applied == n && reported == n, nil
	})
	cancel()
	res := tr.Result(uids)
	res.Wall = time.Since(start)

	logf("T=%d: probe: deleting its deployments", T)
	for _, ns := range probed {
		if err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, ProbeDeployment, metav1.DeleteOptions{}); err != nil {
			return res, fmt.Errorf("deleting the probe in %s: %w", ns, err)
		}
	}
	gone := map[string]bool{}
	for _, u := range uids {
		gone[u] = true
	}
	delCtx, cancel := context.WithTimeout(ctx, cfg.StepTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(delCtx, time.Second, true, func(context.Context) (bool, error) {
		apps, err := tr.Applications()
		if err != nil {
			return false, nil
		}
		for _, a := range apps {
			if gone[a.Labels[argocd.LabelDeploymentUID]] {
				return false, nil
			}
		}
		return true, nil
	}); err != nil && ctx.Err() == nil {
		logf("T=%d: probe: its Applications were not all deleted within %s", T, cfg.StepTimeout)
	}
	return res, ctx.Err()
}
