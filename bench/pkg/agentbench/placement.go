package agentbench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/gitops-service/gitops-service/pkg/agent"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// The placement benchmark (issue 37): N new tenant namespaces, each made a tenant by one
// GitOpsDeployment, created at once on a stack whose fleet has two or more Ready
// ArgoCDInstances; it times from the first create until every tenant's TenantPlacement has
// spec.instance set. Only the placement controller runs (an agent process with
// --controllers placement): no Argo CD is needed, the instances' heartbeats are the
// benchmark's (PlacementHeartbeats), so what is measured is the API, the controller's caches
// and queue, and its writes.
const (
	placementLabelValue = "placement"
	placementPrefix     = "tenant-place-"
	// PlacementDeployment is the name of each placement tenant's GitOpsDeployment.
	PlacementDeployment = "place"
	// PlacementInstancePrefix starts the names of the benchmark's ArgoCDInstances.
	PlacementInstancePrefix = "placement-bench-"
)

// PlacementTenantNamespace is the name of placement tenant i (from 1) of run id.
func PlacementTenantNamespace(id string, i int) string {
	return fmt.Sprintf("%s%s-%04d", placementPrefix, id, i)
}

// PlacementInstanceNames are the names of the benchmark's n instances.
func PlacementInstanceNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s%d", PlacementInstancePrefix, i))
	}
	return out
}

// PlacementConfig is one placement run.
type PlacementConfig struct {
	// Clients are admin clients of the stack's cluster.
	agent.Clients
	// ID names the run's tenants (PlacementTenantNamespace): each run makes namespaces of its
	// own, so that it need not wait for the deletion of an earlier run's.
	ID string
	// Tenants is N; Workers create namespaces and deployments at once.
	Tenants, Workers int
	// Instances are the ArgoCDInstances the tenants are expected on (PlacementHeartbeats keeps
	// them Ready).
	Instances []string
	// Backlog, when set, is called once the tenants are created, and the clock starts when it
	// returns, at the time it gives: it starts the controller, so that what is timed is the
	// placement of a backlog of tenants that all exist already, without their creation.
	Backlog func(context.Context) (time.Time, error)
	// Timeout bounds the wait for the placements, and the cleanup.
	Timeout time.Duration
	Log     func(format string, args ...interface{})
}

// PlacementResult is one run. The durations are from just before the first create (with
// Backlog: from the controller's start).
type PlacementResult struct {
	Tenants int
	// Creates is until the response to the last create (namespace, then GitOpsDeployment, per
	// tenant).
	Creates time.Duration
	// Placed is until the first watch event showing the last tenant's TenantPlacement with
	// spec.instance set.
	Placed time.Duration
	// Latency is per tenant: from the response to its GitOpsDeployment's create to the first
	// watch event of its placement with spec.instance.
	Latency Stats
	// Balance is by spec.instance, at the end.
	Balance Balance
	// Moved counts the tenants whose spec.instance changed from one instance to another.
	Moved int
}

// PlacementHeartbeats creates (or updates) the instances with capacity each and reports them
// Ready, as their agents would, every 5 s until ctx is done. It returns once each has reported
// once; the reports go on in the background.
func PlacementHeartbeats(ctx context.Context, clients agent.Clients, instances []string, capacity int32, logf func(string, ...interface{})) error {
	api := clients.GitOps.ManagedGitopsV1alpha1().ArgoCDInstances()
	for _, name := range instances {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			in, err := api.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = api.Create(ctx, &managedv1alpha1.ArgoCDInstance{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       managedv1alpha1.ArgoCDInstanceSpec{Namespace: name + "-argocd", Capacity: capacity},
				}, metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			if in.Spec.Capacity == capacity && !in.Spec.Draining {
				return nil
			}
			in.Spec.Capacity, in.Spec.Draining = capacity, false
			_, err = api.Update(ctx, in, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("instance %s: %w", name, err)
		}
	}
	report := func() error {
		for _, name := range instances {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				in, err := api.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				now := metav1.Now()
				meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: managedv1alpha1.ArgoCDInstanceConditionReady,
					Status: metav1.ConditionTrue, Reason: "Heartbeat", Message: "the placement benchmark's heartbeat"})
				in.Status.LastHeartbeatTime = &now
				_, err = api.UpdateStatus(ctx, in, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("heartbeat of instance %s: %w", name, err)
			}
		}
		return nil
	}
	if err := report(); err != nil {
		return err
	}
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := report(); err != nil && ctx.Err() == nil {
					logf("%v", err)
				}
			}
		}
	}()
	return nil
}

// placementObserver records when each tenant of the run was first seen placed.
type placementObserver struct {
	prefix   string
	mu       sync.Mutex
	placedAt map[string]time.Time
	on       map[string]string
	moved    map[string]bool
}

func (o *placementObserver) observe(obj interface{}) {
	p, ok := obj.(*managedv1alpha1.TenantPlacement)
	if !ok || !strings.HasPrefix(p.Name, o.prefix) || p.Spec.Instance == "" {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, seen := o.on[p.Name]; seen && prev != p.Spec.Instance {
		o.moved[p.Name] = true
	}
	o.on[p.Name] = p.Spec.Instance
	if _, seen := o.placedAt[p.Name]; !seen {
		o.placedAt[p.Name] = now
	}
}

func (o *placementObserver) placed() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.placedAt)
}

// RunPlacement runs one placement run; the agent running the placement controller must be up.
// It refuses to start while placements of an earlier run exist (CleanupPlacement).
func RunPlacement(ctx context.Context, cfg PlacementConfig) (*PlacementResult, error) {
	logf := cfg.Log
	obs := &placementObserver{prefix: placementPrefix + cfg.ID + "-",
		placedAt: map[string]time.Time{}, on: map[string]string{}, moved: map[string]bool{}}
	factory := externalversions.NewSharedInformerFactory(cfg.GitOps, 0)
	inf := factory.ManagedGitops().V1alpha1().TenantPlacements().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    obs.observe,
		UpdateFunc: func(_, obj interface{}) { obs.observe(obj) },
	}); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	factory.Start(watchCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the TenantPlacements' cache did not sync")
	}
	for _, o := range inf.GetStore().List() {
		if strings.HasPrefix(o.(*managedv1alpha1.TenantPlacement).Name, placementPrefix) {
			return nil, fmt.Errorf("placements of an earlier run's tenants are left: run CleanupPlacement first")
		}
	}

	logf("creating %d tenant namespaces with a GitOpsDeployment each, %d at a time", cfg.Tenants, cfg.Workers)
	start := time.Now()
	createdAt, err := createPlacementTenants(ctx, cfg)
	creates := time.Since(start)
	if err != nil {
		return nil, err
	}
	logf("created in %s; %d of %d placed so far", creates.Round(time.Millisecond), obs.placed(), cfg.Tenants)
	if cfg.Backlog != nil {
		if start, err = cfg.Backlog(ctx); err != nil {
			return nil, err
		}
		createdAt = nil // the latencies are from start
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, cfg.Timeout, true, func(context.Context) (bool, error) {
		return obs.placed() >= cfg.Tenants, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%d of %d tenants placed after %s: %w", obs.placed(), cfg.Tenants, time.Since(start).Round(time.Second), err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	res := &PlacementResult{Tenants: cfg.Tenants, Creates: creates, Moved: len(obs.moved)}
	var latencies []time.Duration
	var last time.Time
	for ns, at := range obs.placedAt {
		if at.After(last) {
			last = at
		}
		if c, ok := createdAt[ns]; ok {
			latencies = append(latencies, nonNegative(at.Sub(c)))
		} else if cfg.Backlog != nil {
			latencies = append(latencies, nonNegative(at.Sub(start)))
		}
	}
	res.Placed = last.Sub(start)
	res.Latency = ComputeStats(latencies)
	res.Balance = ComputeBalance(cfg.Instances, obs.on)
	return res, nil
}

// createPlacementTenants creates namespaces 1..cfg.Tenants with their deployment, cfg.Workers
// at a time, and returns when each deployment's create returned.
func createPlacementTenants(ctx context.Context, cfg PlacementConfig) (map[string]time.Time, error) {
	var (
		mu       sync.Mutex
		at       = map[string]time.Time{}
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ns := PlacementTenantNamespace(cfg.ID, i)
				_, err := cfg.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					Name: ns, Labels: map[string]string{ScaleLabel: placementLabelValue},
				}}, metav1.CreateOptions{})
				if err == nil {
					_, err = cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx, &managedv1alpha1.GitOpsDeployment{
						ObjectMeta: metav1.ObjectMeta{Name: PlacementDeployment},
						Spec: managedv1alpha1.GitOpsDeploymentSpec{
							Source: managedv1alpha1.ApplicationSource{RepoURL: "https://example.com/placement-bench.git", Path: "app"},
							Type:   managedv1alpha1.GitOpsDeploymentSpecTypeManual,
						},
					}, metav1.CreateOptions{})
				}
				mu.Lock()
				if err == nil {
					at[ns] = time.Now()
				} else if firstErr == nil {
					firstErr = fmt.Errorf("tenant %s: %w", ns, err)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 1; i <= cfg.Tenants; i++ {
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
	return at, firstErr
}

func placementNamespaces(ctx context.Context, clients agent.Clients) ([]string, error) {
	list, err := clients.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: ScaleLabel + "=" + placementLabelValue})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	sort.Strings(out)
	return out, nil
}

// Namespaces says what CleanupPlacement does with the benchmark's tenant namespaces.
type Namespaces int

const (
	// KeepNamespaces leaves them: a run's tenants have names of their own (PlacementConfig.ID).
	KeepNamespaces Namespaces = iota
	// DeleteNamespaces deletes them; kube-controller-manager empties and removes them in the
	// background (about 4 a second on a loaded machine).
	DeleteNamespaces
	// AwaitNamespaces deletes them and waits until they are gone, so that a run that follows
	// does not share the machine with their deletion.
	AwaitNamespaces
)

// CleanupPlacement makes the benchmark's tenants no tenants: it deletes their
// GitOpsDeployments and their placements; then namespaces says what becomes of the namespaces.
func CleanupPlacement(ctx context.Context, clients agent.Clients, namespaces Namespaces, timeout time.Duration, logf func(string, ...interface{})) error {
	names, err := placementNamespaces(ctx, clients)
	if err != nil {
		return err
	}
	start := time.Now()
	deleteAll := func(names []string, del func(string) error) {
		var wg sync.WaitGroup
		next := make(chan string)
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for name := range next {
					if err := del(name); err != nil && !apierrors.IsNotFound(err) {
						logf("deleting %s: %v", name, err)
					}
				}
			}()
		}
		for _, n := range names {
			next <- n
		}
		close(next)
		wg.Wait()
	}
	deleteAll(names, func(ns string) error {
		return clients.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, PlacementDeployment, metav1.DeleteOptions{})
	})
	placements, err := clients.GitOps.ManagedGitopsV1alpha1().TenantPlacements().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var ours []string
	for _, p := range placements.Items {
		if strings.HasPrefix(p.Name, placementPrefix) {
			ours = append(ours, p.Name)
		}
	}
	deleteAll(ours, func(name string) error {
		return clients.GitOps.ManagedGitopsV1alpha1().TenantPlacements().Delete(ctx, name, metav1.DeleteOptions{})
	})
	logf("deleted the GitOpsDeployments of %d namespaces and %d placements in %s", len(names), len(ours), time.Since(start).Round(time.Millisecond))
	if namespaces == KeepNamespaces || len(names) == 0 {
		return nil
	}
	deleteAll(names, func(ns string) error {
		return clients.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	if namespaces == DeleteNamespaces {
		logf("deleted %d namespaces; kube-controller-manager removes them in the background", len(names))
		return nil
	}
	logf("deleted %d namespaces; waiting for them to go", len(names))
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		left, err := placementNamespaces(ctx, clients)
		if err != nil {
			return false, nil
		}
		if len(left) == 0 {
			logf("the namespaces are gone after %s", time.Since(start).Round(time.Second))
		}
		return len(left) == 0, nil
	})
}
