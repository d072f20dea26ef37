package agentbench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/gitops-service/gitops-service/pkg/agent"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// The fleet benchmark: N tenant namespaces with one automated GitOpsDeployment each on a stack
// with two Argo CD instances (hack/local-up.sh with GITOPS_LOCAL_INSTANCES=2: "main" on the
// stack's cluster, "engine" on the remote cluster). It measures how the placement controller
// spreads them over the instances, then drains one instance and times the moves of its tenants
// to the other: placed (spec.instance), released by the old instance, held by the new one
// (status.instance) and Synced/Healthy again from the new instance's Argo CD; and it checks
// that no deployed ConfigMap was re-created and that the drained instance keeps no Application
// of a moved tenant.
const (
	// fleetLabelValue marks the fleet benchmark's namespaces (label ScaleLabel):
	// kubectl delete namespace -l gitops-service.dev/agent-bench=fleet
	fleetLabelValue = "fleet"
	// FleetDeployment is the name of each fleet tenant's GitOpsDeployment.
	FleetDeployment = "fleet"
	// fleetConfigMap is what each tenant's deployment deploys (fixtureRepository's appPath(0)).
	fleetConfigMap = "bench-0000"
	fleetPrefix    = "tenant-fleet-"
)

// FleetTenantNamespace is the name of fleet tenant i (from 1).
func FleetTenantNamespace(i int) string { return fmt.Sprintf(fleetPrefix+"%04d", i) }

// FleetConfig is one fleet run.
type FleetConfig struct {
	// Clients are admin clients of the stack's cluster; their Argo reaches the Argo CD of an
	// instance whose spec.cluster is empty (it runs on the stack's cluster).
	agent.Clients
	// RemoteArgo reaches the Argo CD of an instance with a spec.cluster (the stack's remote
	// cluster, where "engine" runs).
	RemoteArgo argoclient.Interface
	// Tenants is N; Workers create namespaces and deployments at once.
	Tenants, Workers int
	// Drain is the instance drained, Target the one its tenants are expected to move to.
	Drain, Target string
	// Timeout bounds each wait: the initial placement, the drain, the cleanup.
	Timeout time.Duration
	// Keep leaves the tenant namespaces in place at the end.
	Keep bool
	Log  func(format string, args ...interface{})
}

// Balance is how tenants are spread over the instances, by spec.instance.
type Balance struct {
	Counts   map[string]int // tenants per instance; every instance of the fleet has an entry
	Unplaced int            // tenants with no spec.instance
	Max, Min int            // over the instances
	Spread   int            // Max - Min
}

// ComputeBalance counts the tenants of placements (namespace → spec.instance) per instance of
// instances; a tenant on an instance not in the list still gets a count of its own.
func ComputeBalance(instances []string, placements map[string]string) Balance {
	b := Balance{Counts: map[string]int{}}
	for _, in := range instances {
		b.Counts[in] = 0
	}
	for _, in := range placements {
		if in == "" {
			b.Unplaced++
			continue
		}
		b.Counts[in]++
	}
	first := true
	for _, n := range b.Counts {
		if first || n > b.Max {
			b.Max = n
		}
		if first || n < b.Min {
			b.Min = n
		}
		first = false
	}
	b.Spread = b.Max - b.Min
	return b
}

// Stats is the distribution of per-tenant durations.
type Stats struct {
	N             int
	P50, P90, Max time.Duration
}

// ComputeStats summarizes samples (any order): p50 and p90 interpolated as Summary does, and the
// maximum, which is the time until the last tenant got there.
func ComputeStats(samples []time.Duration) Stats {
	p50, p90, _, max := Summary(samples)
	return Stats{N: len(samples), P50: p50, P90: p90, Max: max}
}

// DrainResult is what the drain measured. The durations are from the drain's write (just
// before the update of the instance's spec.draining) to the first watch event showing each step.
type DrainResult struct {
	From, To string
	// Moving are the benchmark's tenants held by From when it was drained.
	Moving int
	// Placed: spec.instance names To; Released: From cleared status.instance; Held: To holds
	// the tenant (status.instance); Synced: held, To's Argo CD shows its Application Synced and
	// Healthy and the GitOpsDeployment shows Synced and Healthy.
	Placed, Released, Held, Synced []time.Duration
	// Elsewhere counts the moving tenants placed on an instance other than To.
	Elsewhere int
	// StatusLeftSynced counts the moving tenants whose GitOpsDeployment showed something other
	// than Synced and Healthy at some point of the move; LeftStatuses counts what the first such
	// event showed ("sync/health"), NotSyncedFor how long each was not Synced and Healthy (from
	// that event until Synced from To).
	StatusLeftSynced int
	LeftStatuses     map[string]int
	NotSyncedFor     []time.Duration
	// OperationStates counts the moving tenants whose GitOpsDeployment showed an operationState
	// (the result of its last sync) at the drain; OperationStatesLost those of them that show
	// none once moved.
	OperationStates, OperationStatesLost int
	// ConfigMaps is how many deployed ConfigMaps of moving tenants had their UID recorded before
	// the drain; ConfigMapsChanged how many of them had another UID (or were gone) after.
	ConfigMaps, ConfigMapsChanged int
	ChangedConfigMaps             []string // namespaces, at most a few
	// LeftOnFrom counts the Applications of moving tenants in From's Argo CD namespace after
	// the moves.
	LeftOnFrom int
	// OthersMoved counts the tenants other than the benchmark's whose spec.instance changed
	// during the drain (they were pinned: should be 0).
	OthersMoved int
	// Pinned is how many other tenants were pinned for the drain.
	Pinned int
	// Wall is from the drain until every moving tenant was Synced from To (or the timeout).
	Wall time.Duration
}

// FleetResult is a whole fleet run.
type FleetResult struct {
	Tenants   int
	Instances []string // the fleet's instances, by name
	// Created is how long the creates took; Ready is from the first create until every tenant
	// was held where placed and its deployment Synced and Healthy; NotReady counts those that
	// were not within the timeout.
	Created, Ready time.Duration
	NotReady       int
	// Ours is the balance of the benchmark's tenants, All that of every tenant of the fleet.
	Ours, All Balance
	// InitialMoves counts the benchmark's tenants whose spec.instance changed from one instance
	// to another before the drain (placements are meant to be stable: 0).
	InitialMoves int
	Drain        *DrainResult
}

// fleetTenant is what the watches saw of one benchmark tenant.
type fleetTenant struct {
	spec, status string // the placement's
	deplOK       bool   // the GitOpsDeployment shows Synced and Healthy
	deplStatus   string // what it shows: "sync/health"
	deplOp       bool   // it shows an operationState (the last sync's)
	opBefore     bool   // deplOp when the drain started
	targetAppOK  bool   // the Target's Argo CD shows its Application Synced and Healthy
	moves        int    // spec.instance changed from one instance to another before the drain

	// during the drain, for the tenants moving
	moving                         bool
	placed, released, held, synced time.Time
	placedElsewhere                bool
	leftAt                         time.Time // the first event showing the deployment not Synced and Healthy
	leftStatus                     string    // what it showed then
}

// fleetObserver follows the placements, the deployments and the Target's Applications.
type fleetObserver struct {
	mu      sync.Mutex
	target  string
	tenants map[string]*fleetTenant // benchmark tenants by namespace
	others  map[string]string       // other tenants' spec.instance
	drainAt time.Time
	// othersMoved counts the other tenants whose spec.instance changed after drainAt.
	othersMoved int
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func ours(ns string) bool { return strings.HasPrefix(ns, fleetPrefix) }

func (o *fleetObserver) tenant(ns string) *fleetTenant {
	t := o.tenants[ns]
	if t == nil {
		t = &fleetTenant{}
		o.tenants[ns] = t
	}
	return t
}

func (o *fleetObserver) placement(obj interface{}, deleted bool) {
	p, ok := obj.(*managedv1alpha1.TenantPlacement)
	if !ok {
		if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			p, ok = tomb.Obj.(*managedv1alpha1.TenantPlacement)
		}
		if !ok {
			return
		}
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !ours(p.Name) {
		old, seen := o.others[p.Name]
		if deleted {
			delete(o.others, p.Name)
			return
		}
		if seen && !o.drainAt.IsZero() && old != "" && p.Spec.Instance != old {
			o.othersMoved++
		}
		o.others[p.Name] = p.Spec.Instance
		return
	}
	if deleted {
		return
	}
	t := o.tenant(p.Name)
	if o.drainAt.IsZero() && t.spec != "" && p.Spec.Instance != "" && p.Spec.Instance != t.spec {
		t.moves++
	}
	t.spec, t.status = p.Spec.Instance, p.Status.Instance
	o.evaluate(t, now)
}

func (o *fleetObserver) deployment(obj interface{}) {
	d, ok := obj.(*managedv1alpha1.GitOpsDeployment)
	if !ok || d.Name != FleetDeployment || !ours(d.Namespace) {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tenant(d.Namespace)
	t.deplOK = d.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced && d.Status.Health.Status == managedv1alpha1.HealthStatusCodeHealthy
	t.deplOp = d.Status.OperationState != nil
	t.deplStatus = fmt.Sprintf("%s/%s", orNone(string(d.Status.Sync.Status)), orNone(string(d.Status.Health.Status)))
	o.evaluate(t, now)
}

func (o *fleetObserver) application(obj interface{}, deleted bool) {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		if tomb, isTomb := obj.(cache.DeletedFinalStateUnknown); isTomb {
			app, ok = tomb.Obj.(*argov1alpha1.Application)
		}
		if !ok {
			return
		}
	}
	ns := app.Labels[argocd.LabelDeploymentNamespace]
	if !ours(ns) {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tenant(ns)
	t.targetAppOK = !deleted && app.DeletionTimestamp == nil &&
		app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && app.Status.Health.Status == "Healthy"
	o.evaluate(t, now)
}

// evaluate records the drain's steps of a moving tenant the first time they show.
func (o *fleetObserver) evaluate(t *fleetTenant, now time.Time) {
	if o.drainAt.IsZero() || !t.moving {
		return
	}
	if t.spec != "" && t.spec != o.target {
		t.placedElsewhere = true
	}
	if t.placed.IsZero() && t.spec == o.target {
		t.placed = now
	}
	if t.released.IsZero() && t.spec == o.target && t.status == "" {
		t.released = now
	}
	if t.held.IsZero() && t.spec == o.target && t.status == o.target {
		t.held = now
		if t.released.IsZero() { // the event of the cleared status.instance was not seen on its own
			t.released = now
		}
	}
	if !t.deplOK && t.leftAt.IsZero() {
		t.leftAt, t.leftStatus = now, t.deplStatus
	}
	if t.synced.IsZero() && !t.held.IsZero() && t.status == o.target && t.targetAppOK && t.deplOK {
		t.synced = now
	}
}

// progress counts the benchmark tenants held where placed with their deployment Synced and
// Healthy, and (during the drain) the moving ones at each step.
func (o *fleetObserver) progress() (ready, moving, placed, held, synced int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.tenants {
		if t.spec != "" && t.status == t.spec && t.deplOK {
			ready++
		}
		if t.moving {
			moving++
			if !t.placed.IsZero() {
				placed++
			}
			if !t.held.IsZero() {
				held++
			}
			if !t.synced.IsZero() {
				synced++
			}
		}
	}
	return
}

// startDrain marks the benchmark's tenants held by from as moving, from now on.
func (o *fleetObserver) startDrain(from string, at time.Time) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var moving []string
	for ns, t := range o.tenants {
		if t.spec == from && t.status == from {
			t.moving = true
			t.opBefore = t.deplOp
			moving = append(moving, ns)
		}
	}
	o.drainAt = at
	sort.Strings(moving)
	return moving
}

func (o *fleetObserver) drainResult(res *DrainResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	since := func(t time.Time) time.Duration { return nonNegative(t.Sub(o.drainAt)) }
	for _, t := range o.tenants {
		if !t.moving {
			continue
		}
		res.Moving++
		if !t.placed.IsZero() {
			res.Placed = append(res.Placed, since(t.placed))
		}
		if !t.released.IsZero() {
			res.Released = append(res.Released, since(t.released))
		}
		if !t.held.IsZero() {
			res.Held = append(res.Held, since(t.held))
		}
		if !t.synced.IsZero() {
			res.Synced = append(res.Synced, since(t.synced))
		}
		if !t.leftAt.IsZero() {
			res.StatusLeftSynced++
			if res.LeftStatuses == nil {
				res.LeftStatuses = map[string]int{}
			}
			res.LeftStatuses[t.leftStatus]++
			if !t.synced.IsZero() {
				res.NotSyncedFor = append(res.NotSyncedFor, nonNegative(t.synced.Sub(t.leftAt)))
			}
		}
		if t.placedElsewhere {
			res.Elsewhere++
		}
		if t.opBefore {
			res.OperationStates++
			if !t.deplOp {
				res.OperationStatesLost++
			}
		}
	}
	res.OthersMoved = o.othersMoved
}

// RunFleet runs the fleet benchmark. It refuses to start while tenant namespaces of an earlier
// run exist, or while the instance to drain is draining already.
func RunFleet(ctx context.Context, cfg FleetConfig) (*FleetResult, error) {
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Tenants <= 0 {
		return nil, fmt.Errorf("no tenants")
	}
	if cfg.Drain == cfg.Target {
		return nil, fmt.Errorf("the instance drained and the target are both %q", cfg.Drain)
	}
	gitops := cfg.GitOps.ManagedGitopsV1alpha1()
	selector := ScaleLabel + "=" + fleetLabelValue
	old, err := cfg.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	if len(old.Items) > 0 {
		return nil, fmt.Errorf("%d tenant namespaces of an earlier run exist (%s ...): delete them first (kubectl delete namespace -l %s)",
			len(old.Items), old.Items[0].Name, selector)
	}

	// The fleet: both instances there, Ready, and the one to drain not draining.
	var instances []string
	argoOf := map[string]argoclient.Interface{}
	argoNamespaceOf := map[string]string{}
	logf("waiting for instances %s and %s to be Ready", cfg.Drain, cfg.Target)
	waitCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	var lastErr error
	err = wait.PollUntilContextCancel(waitCtx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := gitops.ArgoCDInstances().List(ctx, metav1.ListOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		instances = instances[:0]
		ready := map[string]bool{}
		for _, in := range list.Items {
			instances = append(instances, in.Name)
			argoNamespaceOf[in.Name] = in.Spec.Namespace
			if in.Spec.Cluster == "" {
				argoOf[in.Name] = cfg.Argo
			} else {
				argoOf[in.Name] = cfg.RemoteArgo
			}
			ready[in.Name] = instanceReady(&in, time.Now())
			if in.Name == cfg.Drain && in.Spec.Draining {
				return false, fmt.Errorf("instance %s is draining already", in.Name)
			}
		}
		lastErr = fmt.Errorf("instances %v; Ready: %v", instances, ready)
		return ready[cfg.Drain] && ready[cfg.Target], nil
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("instances %s and %s not Ready (hack/local-up.sh with GITOPS_LOCAL_REMOTE_CLUSTER=1 GITOPS_LOCAL_INSTANCES=2): %v; %v",
			cfg.Drain, cfg.Target, err, lastErr)
	}
	sort.Strings(instances)
	for _, in := range []string{cfg.Drain, cfg.Target} {
		if argoOf[in] == nil {
			return nil, fmt.Errorf("instance %s runs on another cluster: its Argo CD client is missing (the remote kubeconfig)", in)
		}
	}

	repoDir, err := os.MkdirTemp("", "agentbench-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(repoDir)
	repoURL, err := fixtureRepository(repoDir, 1)
	if err != nil {
		return nil, err
	}

	// The watches, opened before the first create.
	obs := &fleetObserver{target: cfg.Target, tenants: map[string]*fleetTenant{}, others: map[string]string{}}
	informersCtx, stopInformers := context.WithCancel(ctx)
	gitopsInf := externalversions.NewSharedInformerFactory(cfg.GitOps, 0)
	argoInf := argoinformers.NewSharedInformerFactoryWithOptions(argoOf[cfg.Target], 0, argoinformers.WithNamespace(argoNamespaceOf[cfg.Target]))
	defer func() {
		stopInformers()
		gitopsInf.Shutdown()
		argoInf.Shutdown()
	}()
	placements := gitopsInf.ManagedGitops().V1alpha1().TenantPlacements()
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{placements.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { obs.placement(obj, false) },
			UpdateFunc: func(_, obj interface{}) { obs.placement(obj, false) },
			DeleteFunc: func(obj interface{}) { obs.placement(obj, true) },
		}},
		{gitopsInf.ManagedGitops().V1alpha1().GitOpsDeployments().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    obs.deployment,
			UpdateFunc: func(_, obj interface{}) { obs.deployment(obj) },
		}},
		{argoInf.Argoproj().V1alpha1().Applications().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { obs.application(obj, false) },
			UpdateFunc: func(_, obj interface{}) { obs.application(obj, false) },
			DeleteFunc: func(obj interface{}) { obs.application(obj, true) },
		}},
	} {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, err
		}
	}
	gitopsInf.Start(informersCtx.Done())
	argoInf.Start(informersCtx.Done())
	for typ, ok := range gitopsInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}
	for typ, ok := range argoInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}

	res := &FleetResult{Tenants: cfg.Tenants, Instances: instances}
	var namespaces []string
	if !cfg.Keep {
		defer func() { cleanupFleet(cfg, argoOf, argoNamespaceOf, namespaces, logf) }()
	}

	// 1. The tenants, placed by the service.
	logf("creating %d tenant namespaces with one automated GitOpsDeployment each, %d at a time", cfg.Tenants, cfg.Workers)
	start := time.Now()
	namespaces, err = createFleetTenants(ctx, cfg, repoURL)
	if err != nil {
		return res, err
	}
	res.Created = time.Since(start)
	stepCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	lastLog := time.Time{}
	_ = wait.PollUntilContextCancel(stepCtx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		ready, _, _, _, _ := obs.progress()
		res.NotReady = cfg.Tenants - ready
		if time.Since(lastLog) >= 5*time.Second || ready == cfg.Tenants {
			logf("%4.0fs: %d/%d tenants held where placed and Synced+Healthy", time.Since(start).Seconds(), ready, cfg.Tenants)
			lastLog = time.Now()
		}
		return ready == cfg.Tenants, nil
	})
	cancel()
	res.Ready = time.Since(start)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	// The balance, from the watch's cache.
	all, err := placements.Lister().List(labels.Everything())
	if err != nil {
		return res, err
	}
	oursByInstance, allByInstance := map[string]string{}, map[string]string{}
	for _, p := range all {
		allByInstance[p.Name] = p.Spec.Instance
		if ours(p.Name) {
			oursByInstance[p.Name] = p.Spec.Instance
		}
	}
	res.Ours, res.All = ComputeBalance(instances, oursByInstance), ComputeBalance(instances, allByInstance)
	obs.mu.Lock()
	for _, t := range obs.tenants {
		if t.moves > 0 {
			res.InitialMoves++
		}
	}
	obs.mu.Unlock()
	logf("placement: ours %v (spread %d), all %v (spread %d); %d tenants moved meanwhile",
		res.Ours.Counts, res.Ours.Spread, res.All.Counts, res.All.Spread, res.InitialMoves)
	if res.NotReady > 0 {
		return res, fmt.Errorf("%d of %d tenants not held where placed and Synced after %s", res.NotReady, cfg.Tenants, cfg.Timeout)
	}

	// 2. The drain.
	res.Drain, err = drain(ctx, cfg, obs, argoOf[cfg.Drain], argoNamespaceOf[cfg.Drain], logf)
	return res, err
}

// instanceReady is the placement controller's view: Ready condition True and a heartbeat that
// is recent enough.
func instanceReady(in *managedv1alpha1.ArgoCDInstance, now time.Time) bool {
	if in.Status.LastHeartbeatTime == nil || now.Sub(in.Status.LastHeartbeatTime.Time) > 30*time.Second {
		return false
	}
	for _, c := range in.Status.Conditions {
		if c.Type == managedv1alpha1.ArgoCDInstanceConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// drain pins the other tenants, drains cfg.Drain, waits until its benchmark tenants are held
// by cfg.Target and Synced from there, checks their ConfigMaps and the drained instance's
// Applications, then undrains it and unpins the others.
func drain(ctx context.Context, cfg FleetConfig, obs *fleetObserver, fromArgo argoclient.Interface, fromArgoNamespace string,
	logf func(string, ...interface{})) (*DrainResult, error) {
	gitops := cfg.GitOps.ManagedGitopsV1alpha1()
	res := &DrainResult{From: cfg.Drain, To: cfg.Target}

	// The other tenants stay where they are, as in the e2e spec of the fleet.
	list, err := gitops.TenantPlacements().List(ctx, metav1.ListOptions{})
	if err != nil {
		return res, err
	}
	var pinned []string
	defer func() {
		if len(pinned) == 0 {
			return
		}
		restoreCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, name := range pinned {
			if err := setPinned(restoreCtx, cfg, name, false); err != nil {
				logf("unpinning %s: %v", name, err)
			}
		}
		logf("unpinned the %d other tenants", len(pinned))
	}()
	for _, p := range list.Items {
		if ours(p.Name) || p.Spec.Pinned || p.Spec.Instance == "" {
			continue
		}
		if err := setPinned(ctx, cfg, p.Name, true); err != nil {
			return res, fmt.Errorf("pinning %s: %w", p.Name, err)
		}
		pinned = append(pinned, p.Name)
	}
	res.Pinned = len(pinned)
	if len(pinned) > 0 {
		logf("pinned the %d other tenants for the drain", len(pinned))
	}

	// The deployed ConfigMaps' UIDs, before.
	var candidates []string
	obs.mu.Lock()
	for ns, t := range obs.tenants {
		if t.spec == cfg.Drain && t.status == cfg.Drain {
			candidates = append(candidates, ns)
		}
	}
	obs.mu.Unlock()
	uids := map[string]string{}
	for _, ns := range candidates {
		cm, err := cfg.Kube.CoreV1().ConfigMaps(ns).Get(ctx, fleetConfigMap, metav1.GetOptions{})
		if err != nil {
			return res, fmt.Errorf("the ConfigMap of %s before the drain: %w", ns, err)
		}
		uids[ns] = string(cm.UID)
	}

	logf("draining instance %s (%d benchmark tenants on it)", cfg.Drain, len(candidates))
	at := time.Now()
	moving := obs.startDrain(cfg.Drain, at)
	defer func() {
		restoreCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := setDraining(restoreCtx, cfg, cfg.Drain, false); err != nil {
			logf("undraining %s: %v", cfg.Drain, err)
		} else {
			logf("undrained instance %s", cfg.Drain)
		}
	}()
	if err := setDraining(ctx, cfg, cfg.Drain, true); err != nil {
		return res, err
	}
	stepCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	lastLog := time.Time{}
	_ = wait.PollUntilContextCancel(stepCtx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		_, n, placed, held, synced := obs.progress()
		if time.Since(lastLog) >= 5*time.Second || synced == n {
			logf("drain %4.0fs: of %d tenants, %d placed on %s, %d held by it, %d Synced+Healthy from it",
				time.Since(at).Seconds(), n, placed, cfg.Target, held, synced)
			lastLog = time.Now()
		}
		return synced == n, nil
	})
	cancel()
	res.Wall = time.Since(at)
	obs.drainResult(res)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	// Nothing re-created, nothing left behind.
	for _, ns := range moving {
		before, ok := uids[ns]
		if !ok {
			continue
		}
		res.ConfigMaps++
		cm, err := cfg.Kube.CoreV1().ConfigMaps(ns).Get(ctx, fleetConfigMap, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return res, fmt.Errorf("the ConfigMap of %s after the drain: %w", ns, err)
		}
		if err != nil || string(cm.UID) != before {
			res.ConfigMapsChanged++
			if len(res.ChangedConfigMaps) < 5 {
				res.ChangedConfigMaps = append(res.ChangedConfigMaps, ns)
			}
		}
	}
	apps, err := fromArgo.ArgoprojV1alpha1().Applications(fromArgoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return res, fmt.Errorf("the Applications of instance %s: %w", cfg.Drain, err)
	}
	movingSet := map[string]bool{}
	for _, ns := range moving {
		movingSet[ns] = true
	}
	for _, a := range apps.Items {
		if movingSet[a.Labels[argocd.LabelDeploymentNamespace]] {
			res.LeftOnFrom++
		}
	}
	logf("drain: %d/%d moved in %s; %d ConfigMaps re-created of %d; %d Applications of moved tenants left on %s; %d other tenants moved",
		len(res.Synced), res.Moving, res.Wall.Round(100*time.Millisecond), res.ConfigMapsChanged, res.ConfigMaps, res.LeftOnFrom, cfg.Drain, res.OthersMoved)
	if len(res.Synced) < res.Moving {
		return res, fmt.Errorf("%d of %d tenants of %s not held and Synced from %s after %s", res.Moving-len(res.Synced), res.Moving,
			cfg.Drain, cfg.Target, cfg.Timeout)
	}
	return res, nil
}

func setDraining(ctx context.Context, cfg FleetConfig, instance string, draining bool) error {
	client := cfg.GitOps.ManagedGitopsV1alpha1().ArgoCDInstances()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		in, err := client.Get(ctx, instance, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if in.Spec.Draining == draining {
			return nil
		}
		in.Spec.Draining = draining
		_, err = client.Update(ctx, in, metav1.UpdateOptions{})
		return err
	})
}

func setPinned(ctx context.Context, cfg FleetConfig, name string, pinned bool) error {
	client := cfg.GitOps.ManagedGitopsV1alpha1().TenantPlacements()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if p.Spec.Pinned == pinned || p.Spec.Instance == "" {
			return nil
		}
		p.Spec.Pinned = pinned
		_, err = client.Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// createFleetTenants creates the namespaces 1..cfg.Tenants with their deployment, cfg.Workers
// at a time; it returns the namespaces it made (also on error, for the cleanup).
func createFleetTenants(ctx context.Context, cfg FleetConfig, repoURL string) ([]string, error) {
	var (
		mu       sync.Mutex
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
				ns := FleetTenantNamespace(i)
				_, err := cfg.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
					Name: ns, Labels: map[string]string{ScaleLabel: fleetLabelValue},
				}}, metav1.CreateOptions{})
				if err == nil {
					mu.Lock()
					made = append(made, ns)
					mu.Unlock()
					_, err = cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx,
						automatedDeployment(FleetDeployment, repoURL, appPath(0)), metav1.CreateOptions{})
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("tenant %s: %w", ns, err)
					}
					mu.Unlock()
				}
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
	sort.Strings(made)
	return made, firstErr
}

// cleanupFleet deletes the deployments, waits until no instance's Argo CD holds an Application
// of them, and deletes the namespaces.
func cleanupFleet(cfg FleetConfig, argoOf map[string]argoclient.Interface, argoNamespaceOf map[string]string, namespaces []string,
	logf func(string, ...interface{})) {
	if len(namespaces) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	logf("deleting the benchmark's GitOpsDeployments and namespaces")
	start := time.Now()
	for _, ns := range namespaces {
		if err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, FleetDeployment, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("deleting the GitOpsDeployment of %s: %v", ns, err)
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for name, client := range argoOf {
			if client == nil {
				continue
			}
			apps, err := client.ArgoprojV1alpha1().Applications(argoNamespaceOf[name]).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, a := range apps.Items {
				if ours(a.Labels[argocd.LabelDeploymentNamespace]) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		logf("the agents had not deleted all their Applications after %s; deleting the namespaces anyway", time.Since(start).Round(time.Second))
	} else {
		logf("the agents deleted their Applications in %s; deleting the namespaces", time.Since(start).Round(time.Second))
	}
	for _, ns := range namespaces {
		if err := cfg.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("deleting namespace %s: %v", ns, err)
		}
	}
}
