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
	mglisters "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
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
	// FleetDeployment is the name of each fleet tenant's (first) GitOpsDeployment.
	FleetDeployment = "fleet"
	fleetPrefix     = "tenant-fleet-"
)

// FleetTenantNamespace is the name of fleet tenant i (from 1).
func FleetTenantNamespace(i int) string { return fmt.Sprintf(fleetPrefix+"%04d", i) }

// FleetDeploymentName is the name of a fleet tenant's deployment j (from 0): the first keeps the
// name of the one-deployment runs, so that both modes see the same objects.
func FleetDeploymentName(j int) string {
	if j == 0 {
		return FleetDeployment
	}
	return fmt.Sprintf("%s-%d", FleetDeployment, j)
}

// fleetConfigMap is what deployment j of a tenant deploys (fixtureRepository's appPath(j)): the
// deployments of one tenant own distinct objects.
func fleetConfigMap(j int) string { return fmt.Sprintf("bench-%04d", j) }

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
	// Deployments is each tenant's automated GitOpsDeployments (0 means 1).
	Deployments int
	// Instances, when positive, is how many instances the fleet must have, all Ready.
	Instances int
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
	Tenants int
	// Deployments is each tenant's GitOpsDeployments.
	Deployments int
	Instances   []string // the fleet's instances, by name
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

// fleetDeploymentState is what the watch saw of one GitOpsDeployment of a tenant.
type fleetDeploymentState struct {
	ok     bool   // it shows Synced and Healthy
	status string // what it shows: "sync/health"
	op     bool   // it shows an operationState (the last sync's)
}

// fleetTenant is what the watches saw of one benchmark tenant.
type fleetTenant struct {
	spec, status string                          // the placement's
	depls        map[string]fleetDeploymentState // its GitOpsDeployments, by name
	// targetApps: the Target's Argo CD shows the Application of the deployment (by name)
	// Synced and Healthy.
	targetApps map[string]bool
	opBefore   bool // deplOp when the drain started
	moves      int  // spec.instance changed from one instance to another before the drain

	// during the drain, for the tenants moving
	moving                         bool
	placed, released, held, synced time.Time
	placedElsewhere                bool
	leftAt                         time.Time // the first event showing the deployment not Synced and Healthy
	leftStatus                     string    // what it showed then
}

// deplOK: all n deployments of the tenant show Synced and Healthy.
func (t *fleetTenant) deplOK(n int) bool {
	if len(t.depls) < n {
		return false
	}
	for _, d := range t.depls {
		if !d.ok {
			return false
		}
	}
	return true
}

// deplStatus is what the first deployment (by name) that is not Synced and Healthy shows.
func (t *fleetTenant) deplStatus() string {
	names := make([]string, 0, len(t.depls))
	for name := range t.depls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !t.depls[name].ok {
			return t.depls[name].status
		}
	}
	return ""
}

// deplOp: every one of its n deployments shows the result of its last sync.
func (t *fleetTenant) deplOp(n int) bool {
	if len(t.depls) < n {
		return false
	}
	for _, d := range t.depls {
		if !d.op {
			return false
		}
	}
	return true
}

// targetAppsOK: the Target's Argo CD shows all n Applications of the tenant Synced and Healthy.
func (t *fleetTenant) targetAppsOK(n int) bool {
	ok := 0
	for _, synced := range t.targetApps {
		if synced {
			ok++
		}
	}
	return ok >= n
}

// fleetObserver follows the placements, the deployments and the Target's Applications.
type fleetObserver struct {
	mu     sync.Mutex
	target string
	// perTenant is the deployments each tenant has (0 means 1); the scale mode raises it when
	// it adds deployments to the tenants.
	perTenant int
	tenants   map[string]*fleetTenant // benchmark tenants by namespace
	others    map[string]string       // other tenants' spec.instance
	drainAt   time.Time
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
		t = &fleetTenant{depls: map[string]fleetDeploymentState{}, targetApps: map[string]bool{}}
		o.tenants[ns] = t
	}
	return t
}

// n is the deployments each tenant has; o.mu held.
func (o *fleetObserver) n() int {
	if o.perTenant <= 0 {
		return 1
	}
	return o.perTenant
}

// setPerTenant sets the deployments each tenant is to have.
func (o *fleetObserver) setPerTenant(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.perTenant = n
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
	if !ok || !ours(d.Namespace) {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tenant(d.Namespace)
	t.depls[d.Name] = fleetDeploymentState{
		ok:     d.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced && d.Status.Health.Status == managedv1alpha1.HealthStatusCodeHealthy,
		op:     d.Status.OperationState != nil,
		status: fmt.Sprintf("%s/%s", orNone(string(d.Status.Sync.Status)), orNone(string(d.Status.Health.Status))),
	}
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
	t.targetApps[app.Annotations[argocd.AnnotationDeploymentName]] = !deleted && app.DeletionTimestamp == nil &&
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
	n := o.n()
	deplOK := t.deplOK(n)
	if !deplOK && t.leftAt.IsZero() {
		t.leftAt, t.leftStatus = now, t.deplStatus()
	}
	if t.synced.IsZero() && !t.held.IsZero() && t.status == o.target && t.targetAppsOK(n) && deplOK {
		t.synced = now
	}
}

// progress counts the benchmark tenants held where placed with their deployment Synced and
// Healthy, and (during the drain) the moving ones at each step.
func (o *fleetObserver) progress() (ready, moving, placed, held, synced int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.tenants {
		if t.spec != "" && t.status == t.spec && t.deplOK(o.n()) {
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
			t.opBefore = t.deplOp(o.n())
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
			if !t.deplOp(o.n()) {
				res.OperationStatesLost++
			}
		}
	}
	res.OthersMoved = o.othersMoved
}

// fleetRun is what both modes of the fleet benchmark set up before the first tenant: the
// instances, their Argo CD clients, the fixture repository and the watches.
type fleetRun struct {
	instances       []string // by name
	argoOf          map[string]argoclient.Interface
	argoNamespaceOf map[string]string
	capacityOf      map[string]int
	repoURL         string
	obs             *fleetObserver
	placements      mglisters.TenantPlacementLister
	close           func()
}

// openFleet checks that no tenants of an earlier run exist and that the fleet's instances are
// there and Ready (cfg.Instances of them, when set), makes the fixture repository with
// deployments paths and opens the watches. The caller closes it.
func openFleet(ctx context.Context, cfg FleetConfig, deployments int, logf func(string, ...interface{})) (*fleetRun, error) {
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

	// The fleet: the instances there, Ready, and the one to drain not draining.
	r := &fleetRun{argoOf: map[string]argoclient.Interface{}, argoNamespaceOf: map[string]string{}, capacityOf: map[string]int{}}
	logf("waiting for instances %s and %s to be Ready", cfg.Drain, cfg.Target)
	waitCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	var lastErr error
	err = wait.PollUntilContextCancel(waitCtx, time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := gitops.ArgoCDInstances().List(ctx, metav1.ListOptions{})
		if err != nil {
			lastErr = err
			return false, nil
		}
		r.instances = r.instances[:0]
		ready := map[string]bool{}
		allReady := true
		for _, in := range list.Items {
			r.instances = append(r.instances, in.Name)
			r.argoNamespaceOf[in.Name] = in.Spec.Namespace
			r.capacityOf[in.Name] = int(in.Spec.Capacity)
			if in.Spec.Cluster == "" {
				r.argoOf[in.Name] = cfg.Argo
			} else {
				r.argoOf[in.Name] = cfg.RemoteArgo
			}
			ready[in.Name] = instanceReady(&in, time.Now())
			allReady = allReady && ready[in.Name]
			if in.Name == cfg.Drain && in.Spec.Draining {
				return false, fmt.Errorf("instance %s is draining already", in.Name)
			}
		}
		lastErr = fmt.Errorf("instances %v; Ready: %v", r.instances, ready)
		if cfg.Instances > 0 {
			if len(list.Items) > cfg.Instances {
				return false, fmt.Errorf("the fleet has %d instances (%v), not %d", len(list.Items), r.instances, cfg.Instances)
			}
			return len(list.Items) == cfg.Instances && allReady, nil
		}
		return ready[cfg.Drain] && ready[cfg.Target], nil
	})
	cancel()
	if err != nil {
		want := fmt.Sprintf("%s and %s", cfg.Drain, cfg.Target)
		if cfg.Instances > 0 {
			want = fmt.Sprintf("%d instances, %s and %s among them,", cfg.Instances, cfg.Drain, cfg.Target)
		}
		return nil, fmt.Errorf("instances %s not Ready (hack/local-up.sh with GITOPS_LOCAL_REMOTE_CLUSTER=1 GITOPS_LOCAL_INSTANCES=2): %v; %v",
			want, err, lastErr)
	}
	sort.Strings(r.instances)
	for _, in := range []string{cfg.Drain, cfg.Target} {
		if r.argoOf[in] == nil {
			return nil, fmt.Errorf("instance %s runs on another cluster: its Argo CD client is missing (the remote kubeconfig)", in)
		}
	}

	repoDir, err := os.MkdirTemp("", "agentbench-fleet-")
	if err != nil {
		return nil, err
	}
	if r.repoURL, err = fixtureRepository(repoDir, deployments); err != nil {
		os.RemoveAll(repoDir)
		return nil, err
	}

	// The watches, opened before the first create.
	r.obs = &fleetObserver{target: cfg.Target, tenants: map[string]*fleetTenant{}, others: map[string]string{}}
	obs := r.obs
	informersCtx, stopInformers := context.WithCancel(ctx)
	gitopsInf := externalversions.NewSharedInformerFactory(cfg.GitOps, 0)
	argoInf := argoinformers.NewSharedInformerFactoryWithOptions(r.argoOf[cfg.Target], 0, argoinformers.WithNamespace(r.argoNamespaceOf[cfg.Target]))
	r.close = func() {
		stopInformers()
		gitopsInf.Shutdown()
		argoInf.Shutdown()
		os.RemoveAll(repoDir)
	}
	placements := gitopsInf.ManagedGitops().V1alpha1().TenantPlacements()
	r.placements = placements.Lister()
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
			r.close()
			return nil, err
		}
	}
	gitopsInf.Start(informersCtx.Done())
	argoInf.Start(informersCtx.Done())
	for typ, ok := range gitopsInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			r.close()
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}
	for typ, ok := range argoInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			r.close()
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}
	return r, nil
}

// waitFleetReady waits until tenants benchmark tenants are held where placed with all their
// deployments Synced and Healthy, or the timeout; it returns how many were not.
func waitFleetReady(ctx context.Context, obs *fleetObserver, tenants int, start time.Time, timeout time.Duration,
	logf func(string, ...interface{})) int {
	notReady := tenants
	stepCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lastLog := time.Time{}
	_ = wait.PollUntilContextCancel(stepCtx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		ready, _, _, _, _ := obs.progress()
		notReady = tenants - ready
		if time.Since(lastLog) >= 5*time.Second || ready == tenants {
			logf("%4.0fs: %d/%d tenants held where placed and Synced+Healthy", time.Since(start).Seconds(), ready, tenants)
			lastLog = time.Now()
		}
		return ready == tenants, nil
	})
	return notReady
}

// fleetBalance is the balance of the benchmark's tenants and of all tenants, from the watch's
// cache, and the benchmark's tenants that moved before the drain.
func fleetBalance(r *fleetRun) (oursB, allB Balance, moved int, err error) {
	list, err := r.placements.List(labels.Everything())
	if err != nil {
		return oursB, allB, 0, err
	}
	oursByInstance, allByInstance := map[string]string{}, map[string]string{}
	for _, p := range list {
		allByInstance[p.Name] = p.Spec.Instance
		if ours(p.Name) {
			oursByInstance[p.Name] = p.Spec.Instance
		}
	}
	r.obs.mu.Lock()
	for _, t := range r.obs.tenants {
		if t.moves > 0 {
			moved++
		}
	}
	r.obs.mu.Unlock()
	return ComputeBalance(r.instances, oursByInstance), ComputeBalance(r.instances, allByInstance), moved, nil
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
	if cfg.Deployments <= 0 {
		cfg.Deployments = 1
	}
	if cfg.Tenants <= 0 {
		return nil, fmt.Errorf("no tenants")
	}
	r, err := openFleet(ctx, cfg, cfg.Deployments, logf)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.obs.setPerTenant(cfg.Deployments)

	res := &FleetResult{Tenants: cfg.Tenants, Deployments: cfg.Deployments, Instances: r.instances}
	var namespaces []string
	if !cfg.Keep {
		defer func() { cleanupFleet(cfg, r.argoOf, r.argoNamespaceOf, namespaces, cfg.Deployments, logf) }()
	}

	// 1. The tenants, placed by the service.
	logf("creating %d tenant namespaces with %d automated GitOpsDeployments each, %d at a time", cfg.Tenants, cfg.Deployments, cfg.Workers)
	start := time.Now()
	namespaces, err = createFleetTenants(ctx, cfg, r.repoURL, 1, cfg.Tenants, 0, cfg.Deployments)
	if err != nil {
		return res, err
	}
	res.Created = time.Since(start)
	res.NotReady = waitFleetReady(ctx, r.obs, cfg.Tenants, start, cfg.Timeout, logf)
	res.Ready = time.Since(start)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}

	if res.Ours, res.All, res.InitialMoves, err = fleetBalance(r); err != nil {
		return res, err
	}
	logf("placement: ours %v (spread %d), all %v (spread %d); %d tenants moved meanwhile",
		res.Ours.Counts, res.Ours.Spread, res.All.Counts, res.All.Spread, res.InitialMoves)
	if res.NotReady > 0 {
		return res, fmt.Errorf("%d of %d tenants not held where placed and Synced after %s", res.NotReady, cfg.Tenants, cfg.Timeout)
	}

	// 2. The drain.
	res.Drain, err = drain(ctx, cfg, r.obs, r.argoOf[cfg.Drain], r.argoNamespaceOf[cfg.Drain], logf)
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
	obs.mu.Lock()
	perTenant := obs.n()
	obs.mu.Unlock()
	uids := map[string]map[int]string{} // namespace → deployment → its ConfigMap's UID
	for _, ns := range candidates {
		uids[ns] = map[int]string{}
		for j := 0; j < perTenant; j++ {
			cm, err := cfg.Kube.CoreV1().ConfigMaps(ns).Get(ctx, fleetConfigMap(j), metav1.GetOptions{})
			if err != nil {
				return res, fmt.Errorf("the ConfigMap %s of %s before the drain: %w", fleetConfigMap(j), ns, err)
			}
			uids[ns][j] = string(cm.UID)
		}
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
		for j := 0; j < perTenant; j++ {
			before, ok := uids[ns][j]
			if !ok {
				continue
			}
			res.ConfigMaps++
			cm, err := cfg.Kube.CoreV1().ConfigMaps(ns).Get(ctx, fleetConfigMap(j), metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return res, fmt.Errorf("the ConfigMap %s of %s after the drain: %w", fleetConfigMap(j), ns, err)
			}
			if err != nil || string(cm.UID) != before {
				res.ConfigMapsChanged++
				if len(res.ChangedConfigMaps) < 5 {
					res.ChangedConfigMaps = append(res.ChangedConfigMaps, ns+"/"+fleetConfigMap(j))
				}
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

// createFleetTenants makes the tenants first..last, cfg.Workers at a time: each one's namespace
// when fromD is 0, and its deployments fromD..toD-1 (deployment j deploys appPath(j)). It
// returns the namespaces it made (also on error, for the cleanup).
func createFleetTenants(ctx context.Context, cfg FleetConfig, repoURL string, first, last, fromD, toD int) ([]string, error) {
	var (
		mu       sync.Mutex
		made     []string
		firstErr error
		wg       sync.WaitGroup
	)
	workers := cfg.Workers
	if workers <= 0 {
		workers = 1
	}
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ns := FleetTenantNamespace(i)
				var err error
				if fromD == 0 {
					_, err = cfg.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
						Name: ns, Labels: map[string]string{ScaleLabel: fleetLabelValue},
					}}, metav1.CreateOptions{})
					if err == nil {
						mu.Lock()
						made = append(made, ns)
						mu.Unlock()
					}
				}
				for j := fromD; j < toD && err == nil; j++ {
					_, err = cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx,
						automatedDeployment(FleetDeploymentName(j), repoURL, appPath(j)), metav1.CreateOptions{})
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
	return made, firstErr
}

// cleanupFleet deletes the deployments (perTenant in each namespace), waits until no
// instance's Argo CD holds an Application of them, and deletes the namespaces.
func cleanupFleet(cfg FleetConfig, argoOf map[string]argoclient.Interface, argoNamespaceOf map[string]string, namespaces []string,
	perTenant int, logf func(string, ...interface{})) {
	if len(namespaces) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	logf("deleting the benchmark's GitOpsDeployments and namespaces")
	start := time.Now()
	for _, ns := range namespaces {
		for j := 0; j < perTenant; j++ {
			if err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, FleetDeploymentName(j), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				logf("deleting the GitOpsDeployment %s of %s: %v", FleetDeploymentName(j), ns, err)
			}
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
	// A context of their own: the wait above may have used all of ctx.
	delCtx, cancelDel := context.WithTimeout(context.Background(), time.Minute+time.Duration(len(namespaces))*100*time.Millisecond)
	defer cancelDel()
	for _, ns := range namespaces {
		if err := cfg.Kube.CoreV1().Namespaces().Delete(delCtx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("deleting namespace %s: %v", ns, err)
		}
	}
}
