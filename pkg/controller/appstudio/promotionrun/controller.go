// Package promotionrun is the PromotionRun controller: a manual PromotionRun points the
// SnapshotEnvironmentBinding of its Application and Environment (generated when there is none)
// at its Snapshot, and completes once every GitOpsDeployment of the binding is Synced and
// Healthy at the Snapshot's commit, or fails ten minutes after it started (reference §3.8).
//
// It watches PromotionRuns, bindings, Snapshots and GitOpsDeployments, so a promotion moves as
// soon as what it waits for changes; the only timer is the timeout's.
package promotionrun

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongate"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
	managedlisters "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "promotionruns"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// Informer indexes, named after the controller: other controllers share the informers.
const (
	// byApplication: PromotionRuns by "namespace/application".
	byApplication = "promotionrun.appstudio/application"
	// byTarget: PromotionRuns by "namespace/application/environment" they promote into;
	// SnapshotEnvironmentBindings by the same key of theirs.
	byTarget = "promotionrun.appstudio/target"
	// bySnapshot: PromotionRuns by "namespace/snapshot".
	bySnapshot = "promotionrun.appstudio/snapshot"
	// byGeneratedName: PromotionRuns by the "namespace/name" of the binding they would
	// generate, which another binding may hold.
	byGeneratedName = "promotionrun.appstudio/generatedName"
)

// Controller carries PromotionRuns out.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder

	runs         appstudiolisters.PromotionRunLister
	runIndex     cache.Indexer
	bindings     appstudiolisters.SnapshotEnvironmentBindingLister
	bindingIndex cache.Indexer
	snapshots    appstudiolisters.SnapshotLister
	environments appstudiolisters.EnvironmentLister
	deployments  managedlisters.GitOpsDeploymentLister
	gates        appstudiolisters.PromotionGateLister
	holds        appstudiolisters.EnvironmentHoldLister
	approvals    appstudiolisters.PromotionApprovalLister
	jobs         DeployerJobs

	now func() time.Time
}

// DeployerJobs creates and reads verification Jobs as the namespace's deployer
// (deployer.Jobs).
type DeployerJobs interface {
	Get(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
}

// Gates are the informers of the kinds of promotion gates, and the Jobs of the deployers.
type Gates struct {
	Gates     appstudioinformers.PromotionGateInformer
	Holds     appstudioinformers.EnvironmentHoldInformer
	Approvals appstudioinformers.PromotionApprovalInformer
	Jobs      DeployerJobs
}

// New wires the controller's handlers and indexes into the informers.
func New(
	runs appstudioinformers.PromotionRunInformer,
	bindings appstudioinformers.SnapshotEnvironmentBindingInformer,
	snapshots appstudioinformers.SnapshotInformer,
	environments appstudioinformers.EnvironmentInformer,
	deployments managedinformers.GitOpsDeploymentInformer,
	gt Gates,
	gitops versioned.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:       gitops,
		recorder:     recorder,
		runs:         runs.Lister(),
		runIndex:     runs.Informer().GetIndexer(),
		bindings:     bindings.Lister(),
		bindingIndex: bindings.Informer().GetIndexer(),
		snapshots:    snapshots.Lister(),
		environments: environments.Lister(),
		deployments:  deployments.Lister(),
		gates:        gt.Gates.Lister(),
		holds:        gt.Holds.Lister(),
		approvals:    gt.Approvals.Lister(),
		jobs:         gt.Jobs,
		now:          time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)

	if err := runs.Informer().AddIndexers(cache.Indexers{byApplication: applicationOfRun, byTarget: targetOfRun, bySnapshot: snapshotOfRun,
		byGeneratedName: generatedNameOfRun}); err != nil {
		return nil, err
	}
	if err := bindings.Informer().AddIndexers(cache.Indexers{byTarget: targetOfBinding}); err != nil {
		return nil, err
	}

	if err := c.Watch(runs.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			c.Enqueue(obj)
			// An automated run supersedes the older ones of its application.
			if run := obj.(*appstudiov1alpha1.PromotionRun); isAutomated(run) {
				c.enqueueRuns(byApplication, run.Namespace+"/"+run.Spec.Application)
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			c.Enqueue(obj)
			// A run that completes lets the next of its application start.
			if old.(*appstudiov1alpha1.PromotionRun).Status.State != appstudiov1alpha1.PromotionRunStateComplete &&
				obj.(*appstudiov1alpha1.PromotionRun).Status.State == appstudiov1alpha1.PromotionRunStateComplete {
				c.onRunGone(obj)
			}
		},
		DeleteFunc: c.onRunGone,
	}); err != nil {
		return nil, err
	}
	if err := c.Watch(bindings.Informer(), framework.OnChange(c.onBinding)); err != nil {
		return nil, err
	}
	if err := c.Watch(snapshots.Informer(), framework.OnChange(c.onSnapshot)); err != nil {
		return nil, err
	}
	// The graph automated runs walk.
	if err := c.Watch(environments.Informer(), framework.OnGenerationChange(c.onEnvironment)); err != nil {
		return nil, err
	}
	// Gates and holds open and close; approvals are given. (A verification Job is looked at
	// by the run while it verifies: the agent has no right to watch Jobs.)
	if err := c.Watch(gt.Gates.Informer(), framework.OnGenerationChange(c.onNamespaceGate)); err != nil {
		return nil, err
	}
	if err := c.Watch(gt.Holds.Informer(), framework.OnChange(c.onNamespaceGate)); err != nil {
		return nil, err
	}
	if err := c.Watch(gt.Approvals.Informer(), framework.OnChange(c.onApproval)); err != nil {
		return nil, err
	}
	// Only a GitOpsDeployment's status tells whether a promotion is done.
	if err := c.Watch(deployments.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onDeployment,
		UpdateFunc: func(old, obj interface{}) {
			if o, n := old.(*managedv1alpha1.GitOpsDeployment), obj.(*managedv1alpha1.GitOpsDeployment); o.Status.Sync != n.Status.Sync ||
				o.Status.Health.Status != n.Status.Health.Status || o.Status.ResourcesNotReady() != n.Status.ResourcesNotReady() {
				c.onDeployment(obj)
			}
		},
		DeleteFunc: c.onDeployment,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func applicationOfRun(obj interface{}) ([]string, error) {
	run, ok := obj.(*appstudiov1alpha1.PromotionRun)
	if !ok {
		return nil, nil
	}
	return []string{run.Namespace + "/" + run.Spec.Application}, nil
}

func targetOfRun(obj interface{}) ([]string, error) {
	run, ok := obj.(*appstudiov1alpha1.PromotionRun)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, env := range runEnvironments(run) {
		keys = append(keys, targetKey(run.Namespace, run.Spec.Application, env))
	}
	return keys, nil
}

// runEnvironments are the Environments whose bindings and deployments run waits on: a manual
// run's target; an automated run's initial Environment and those of its steps in progress.
func runEnvironments(run *appstudiov1alpha1.PromotionRun) []string {
	if !isAutomated(run) {
		if env := run.Spec.ManualPromotion.TargetEnvironment; env != "" {
			return []string{env}
		}
		return nil
	}
	envs := []string{run.Spec.AutomatedPromotion.InitialEnvironment}
	for _, e := range run.Status.EnvironmentStatus {
		if e.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress && e.EnvironmentName != envs[0] {
			envs = append(envs, e.EnvironmentName)
		}
	}
	return envs
}

func snapshotOfRun(obj interface{}) ([]string, error) {
	run, ok := obj.(*appstudiov1alpha1.PromotionRun)
	if !ok {
		return nil, nil
	}
	return []string{run.Namespace + "/" + run.Spec.Snapshot}, nil
}

func generatedNameOfRun(obj interface{}) ([]string, error) {
	run, ok := obj.(*appstudiov1alpha1.PromotionRun)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, env := range runEnvironments(run) {
		keys = append(keys, run.Namespace+"/"+BindingName(run.Spec.Application, env))
	}
	return keys, nil
}

func targetOfBinding(obj interface{}) ([]string, error) {
	b, ok := obj.(*appstudiov1alpha1.SnapshotEnvironmentBinding)
	if !ok {
		return nil, nil
	}
	return []string{targetKey(b.Namespace, b.Spec.Application, b.Spec.Environment)}, nil
}

func targetKey(namespace, application, environment string) string {
	return namespace + "/" + application + "/" + environment
}

// enqueueRuns queues the PromotionRuns under key in index that are not Complete; a Complete
// one has nothing left to do.
func (c *Controller) enqueueRuns(index, key string) {
	runs, _ := c.runIndex.ByIndex(index, key)
	for _, obj := range runs {
		if obj.(*appstudiov1alpha1.PromotionRun).Status.State != appstudiov1alpha1.PromotionRunStateComplete {
			c.Enqueue(obj)
		}
	}
}

// onRunGone queues the runs of the application of a run that no longer holds it up.
func (c *Controller) onRunGone(obj interface{}) {
	run, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.PromotionRun)
	if !ok {
		return
	}
	c.enqueueRuns(byApplication, run.Namespace+"/"+run.Spec.Application)
}

func (c *Controller) onBinding(obj interface{}) {
	b, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.SnapshotEnvironmentBinding)
	if !ok {
		return
	}
	c.enqueueRuns(byTarget, targetKey(b.Namespace, b.Spec.Application, b.Spec.Environment))
	c.enqueueRuns(byGeneratedName, b.Namespace+"/"+b.Name)
}

// onEnvironment queues the automated runs of the Environment's namespace that are not Complete.
func (c *Controller) onEnvironment(obj interface{}) {
	if env, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.Environment); ok {
		c.enqueueActive(env.Namespace, isAutomated)
	}
}

// onNamespaceGate queues the runs of a PromotionGate's or EnvironmentHold's namespace that
// are not Complete.
func (c *Controller) onNamespaceGate(obj interface{}) {
	if m, ok := framework.UnwrapTombstone(obj).(metav1.Object); ok {
		c.enqueueActive(m.GetNamespace(), func(*appstudiov1alpha1.PromotionRun) bool { return true })
	}
}

// onApproval queues the run an approval decides on.
func (c *Controller) onApproval(obj interface{}) {
	if a, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.PromotionApproval); ok {
		c.Queue.Add(a.Namespace + "/" + a.Spec.PromotionRun)
	}
}

// enqueueActive queues the runs of namespace that are not Complete and that which selects.
func (c *Controller) enqueueActive(namespace string, which func(*appstudiov1alpha1.PromotionRun) bool) {
	runs, err := c.runs.PromotionRuns(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, run := range runs {
		if which(run) && run.Status.State != appstudiov1alpha1.PromotionRunStateComplete {
			c.Enqueue(run)
		}
	}
}

func (c *Controller) onSnapshot(obj interface{}) {
	s, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.Snapshot)
	if !ok {
		return
	}
	c.enqueueRuns(bySnapshot, s.Namespace+"/"+s.Name)
}

// onDeployment queues the runs that promote into the application and Environment of a
// binding's GitOpsDeployment, which the binding controller labels with them.
func (c *Controller) onDeployment(obj interface{}) {
	gd, ok := framework.UnwrapTombstone(obj).(*managedv1alpha1.GitOpsDeployment)
	if !ok {
		return
	}
	app, env := gd.Labels[appstudiov1alpha1.ApplicationLabel], gd.Labels[appstudiov1alpha1.EnvironmentLabel]
	if app == "" || env == "" {
		return
	}
	c.enqueueRuns(byTarget, targetKey(gd.Namespace, app, env))
}

// sync carries one PromotionRun key a step further.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(ctx, namespace, name)
	if err != nil {
		return err
	}
	// Gone: the retry of a failed write, or the timeout's recheck, of a run deleted since.
	if s.run == nil {
		return nil
	}
	p := planPromotion(s, metav1.NewTime(c.now()))
	if err := c.act(ctx, s, p); err != nil {
		return err
	}
	if p.recheckAfter > 0 {
		c.Queue.AddAfter(key, p.recheckAfter)
	}
	return nil
}

// observe gathers the state of one PromotionRun from the informers' caches.
func (c *Controller) observe(ctx context.Context, namespace, name string) (state, error) {
	var s state
	var err error
	if s.run, err = framework.OrNil(c.runs.PromotionRuns(namespace).Get(name)); err != nil || s.run == nil {
		return s, err
	}
	run := s.run
	siblings, err := c.runIndex.ByIndex(byApplication, namespace+"/"+run.Spec.Application)
	if err != nil {
		return s, err
	}
	for _, obj := range siblings {
		s.siblings = append(s.siblings, obj.(*appstudiov1alpha1.PromotionRun))
	}
	if s.snapshot, err = framework.OrNil(c.snapshots.Snapshots(namespace).Get(run.Spec.Snapshot)); err != nil {
		return s, err
	}
	if isAutomated(run) {
		return c.observeAutomated(ctx, s)
	}
	env := run.Spec.ManualPromotion.TargetEnvironment
	if env == "" {
		return s, nil
	}
	t, err := c.observeTarget(run, env)
	if err != nil {
		return s, err
	}
	s.binding, s.occupant, s.previous, s.deployments = t.binding, t.occupant, t.previous, t.deployments
	s.gates, err = c.observeGates(ctx, run, env)
	return s, err
}

// observeAutomated adds what an automated run needs: the Environment graph, and the
// Environments of the walk's current level.
func (c *Controller) observeAutomated(ctx context.Context, s state) (state, error) {
	envs, err := c.environments.Environments(s.run.Namespace).List(labels.Everything())
	if err != nil {
		return s, err
	}
	s.graph = promotiongraph.New(promotiongraph.FromEnvironments(envs))
	s.snapshotCreated = map[string]metav1.Time{}
	for _, r := range append([]*appstudiov1alpha1.PromotionRun{s.run}, s.siblings...) {
		if !isAutomated(r) {
			continue
		}
		if _, seen := s.snapshotCreated[r.Spec.Snapshot]; seen {
			continue
		}
		snap, err := framework.OrNil(c.snapshots.Snapshots(r.Namespace).Get(r.Spec.Snapshot))
		if err != nil {
			return s, err
		}
		if snap != nil {
			s.snapshotCreated[r.Spec.Snapshot] = snap.CreationTimestamp
		}
	}
	walk := promotiongraph.Next(s.graph, s.run.Spec.AutomatedPromotion.InitialEnvironment, stepResults(&s.run.Status))
	s.targets = map[string]target{}
	for _, env := range walk.Active {
		t, err := c.observeTarget(s.run, env)
		if err != nil {
			return s, err
		}
		if t.gates, err = c.observeGates(ctx, s.run, env); err != nil {
			return s, err
		}
		s.targets[env] = t
	}
	return s, nil
}

// observeGates is what the controller sees of env's gates for run: the gate, hold and
// approvals from the caches, the verification Job the gate's status names read as the
// namespace's deployer, and the Snapshot a rollback would go back to.
func (c *Controller) observeGates(ctx context.Context, run *appstudiov1alpha1.PromotionRun, env string) (gates, error) {
	var g gates
	var err error
	ns := run.Namespace
	if g.gate, err = framework.OrNil(c.gates.PromotionGates(ns).Get(env)); err != nil {
		return g, err
	}
	if g.hold, err = framework.OrNil(c.holds.EnvironmentHolds(ns).Get(env)); err != nil {
		return g, err
	}
	if g.environment, err = framework.OrNil(c.environments.Environments(ns).Get(env)); err != nil {
		return g, err
	}
	approvals, err := c.approvals.PromotionApprovals(ns).List(labels.Everything())
	if err != nil {
		return g, err
	}
	for _, a := range approvals {
		if a.Spec.PromotionRun == run.Name && a.Spec.Environment == env {
			g.approvals = append(g.approvals, a)
		}
	}
	if g.gate == nil {
		return g, nil
	}
	g.live = func(name string, uid types.UID) bool {
		r, err := c.runs.PromotionRuns(ns).Get(name)
		return err != nil && !apierrors.IsNotFound(err) || err == nil && (uid == "" || r.UID == uid)
	}
	entry, ok := promotiongate.EntryOf(g.gate.Status, run.Name, run.UID)
	if !ok {
		return g, nil
	}
	entry.Application = run.Spec.Application
	if target := promotiongate.RollbackTarget(g.gate.Status, entry); target != "" {
		if g.rollbackTo, err = framework.OrNil(c.snapshots.Snapshots(ns).Get(target)); err != nil {
			return g, err
		}
	}
	if v := entry.Verification; v != nil && v.Result == "" && c.jobs != nil {
		job, err := c.jobs.Get(ctx, v.Namespace, v.Job)
		switch {
		case err == nil:
			g.job = job
		case apierrors.IsNotFound(err):
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// What no retry mends fails the verification; the rest is retried.
			g.jobErr = err
		default:
			return g, fmt.Errorf("reading verification Job %s/%s as the namespace's deployer: %w", v.Namespace, v.Job, err)
		}
	}
	return g, nil
}

// observeTarget is what the controller sees of env, where run promotes: the binding of run's
// application and env (or the one holding its generated name), the Snapshot it points at when
// that is another, and the GitOpsDeployments it names.
func (c *Controller) observeTarget(run *appstudiov1alpha1.PromotionRun, env string) (target, error) {
	var t target
	namespace := run.Namespace
	bindings, err := c.bindingIndex.ByIndex(byTarget, targetKey(namespace, run.Spec.Application, env))
	if err != nil {
		return t, err
	}
	// The storage keeps one binding per application and Environment; should an older object
	// break that, the choice is at least stable.
	sort.Slice(bindings, func(i, j int) bool {
		return bindings[i].(*appstudiov1alpha1.SnapshotEnvironmentBinding).Name < bindings[j].(*appstudiov1alpha1.SnapshotEnvironmentBinding).Name
	})
	if len(bindings) == 0 {
		t.occupant, err = framework.OrNil(c.bindings.SnapshotEnvironmentBindings(namespace).Get(BindingName(run.Spec.Application, env)))
		return t, err
	}
	t.binding = bindings[0].(*appstudiov1alpha1.SnapshotEnvironmentBinding)
	if t.binding.Spec.Snapshot != run.Spec.Snapshot {
		if t.previous, err = framework.OrNil(c.snapshots.Snapshots(namespace).Get(t.binding.Spec.Snapshot)); err != nil {
			return t, err
		}
	}
	t.deployments = map[string]*managedv1alpha1.GitOpsDeployment{}
	for _, d := range t.binding.Status.GitOpsDeployments {
		gd, err := framework.OrNil(c.deployments.GitOpsDeployments(namespace).Get(d.GitOpsDeployment))
		if err != nil {
			return t, err
		}
		if gd != nil {
			t.deployments[gd.Name] = gd
		}
	}
	return t, nil
}

// act carries out p for the PromotionRun of s, recording an Event on it for each write.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	run := s.run
	ns := run.Namespace
	for _, job := range p.jobs {
		var err error
		if c.jobs == nil {
			err = apierrors.NewForbidden(batchv1.Resource("jobs"), job.Name, fmt.Errorf("the agent has no deployer identity to create it with"))
		} else {
			_, err = c.jobs.Create(ctx, job)
		}
		switch {
		case err == nil:
			c.recorder.Eventf(run, corev1.EventTypeNormal, EventVerificationStarted, "Created verification Job %s in namespace %s", job.Name, job.Namespace)
		case apierrors.IsAlreadyExists(err):
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsUnauthorized(err):
			// No retry mends it (a template the cluster refuses, a quota, no right): the
			// verification fails, and the next pass rolls back.
			msg := fmt.Sprintf("verification Job %s could not be created in namespace %s as its deployer: %v", job.Name, job.Namespace, err)
			c.recorder.Event(run, corev1.EventTypeWarning, EventVerificationNotCreated, msg)
			failVerification(p.gates, job, msg)
		default:
			return fmt.Errorf("creating verification Job %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	for _, g := range p.gates {
		if _, err := c.gitops.AppStudioV1alpha1().PromotionGates(ns).UpdateStatus(ctx, g, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("updating the status of PromotionGate %s/%s: %w", ns, g.Name, err)
		}
	}
	for _, w := range p.writes {
		if done, err := c.writeBinding(ctx, run, w); done || err != nil {
			return err
		}
	}
	for _, h := range p.holds {
		made, err := c.gitops.AppStudioV1alpha1().EnvironmentHolds(ns).Create(ctx, h, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating EnvironmentHold %s/%s: %w", ns, h.Name, err)
		}
		if err == nil {
			c.recorder.Eventf(run, corev1.EventTypeWarning, EventHeld, "Environment %s is held on Snapshot %s: EnvironmentHold %s", h.Name, h.Spec.Snapshot, h.Name)
			c.recorder.Eventf(made, corev1.EventTypeWarning, EventHeld, "Made by the rollback of PromotionRun %s: %s", run.Name, h.Spec.Reason)
		}
	}
	if p.status != nil {
		upd := run.DeepCopy()
		upd.Status = *p.status
		_, err := c.gitops.AppStudioV1alpha1().PromotionRuns(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsNotFound(err) {
			return nil // nothing is left to report to
		}
		if err != nil {
			return fmt.Errorf("updating the status of PromotionRun %s/%s: %w", ns, run.Name, err)
		}
		for _, e := range p.events {
			c.recorder.Event(run, e.eventType, e.reason, e.message)
		}
	}
	for _, e := range p.objectEvents {
		if obj, ok := e.object.(runtime.Object); ok {
			c.recorder.Event(obj, e.eventType, e.reason, e.message)
		}
	}
	return nil
}

// writeBinding carries out one binding's writes for run. done, without error, means the pass
// ends here: the binding to create exists already, and its add event brings the run back.
func (c *Controller) writeBinding(ctx context.Context, run *appstudiov1alpha1.PromotionRun, w bindingWrite) (done bool, err error) {
	ns := run.Namespace
	bindings := c.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
	if w.createBinding != nil {
		_, err := bindings.Create(ctx, w.createBinding, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			// The cache has yet to show it; its add event brings the run back, whichever
			// application and Environment it binds.
			// An automated run's index follows its status, which says nothing of this step
			// yet: look again soon rather than wait for the event.
			klog.V(2).InfoS("binding exists already", "promotionRun", klog.KObj(run), "binding", w.createBinding.Name)
			c.Queue.AddAfter(run.Namespace+"/"+run.Name, time.Second)
			return true, nil
		}
		if err != nil {
			c.recorder.Eventf(run, corev1.EventTypeWarning, EventBindingCreateFailed, "Creating SnapshotEnvironmentBinding %s: %v", w.createBinding.Name, err)
			return true, fmt.Errorf("creating SnapshotEnvironmentBinding %s/%s: %w", ns, w.createBinding.Name, err)
		}
		c.recorder.Eventf(run, corev1.EventTypeNormal, EventBindingCreated, "Created SnapshotEnvironmentBinding %s for Snapshot %s",
			w.createBinding.Name, run.Spec.Snapshot)
	}
	if w.markBinding != nil {
		marked, err := bindings.UpdateStatus(ctx, w.markBinding, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			return true, fmt.Errorf("marking the status of SnapshotEnvironmentBinding %s/%s: %w", ns, w.markBinding.Name, err)
		}
		// Pointed over the mark, or not at all: a write between them could be the generator's
		// answer to the Snapshot before. (The server keeps the stored status on an update; the
		// status sent is the one it has.)
		w.updateBinding.ResourceVersion, w.updateBinding.Status = marked.ResourceVersion, marked.Status
	}
	if w.updateBinding != nil {
		if _, err := bindings.Update(ctx, w.updateBinding, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			if !apierrors.IsConflict(err) {
				c.recorder.Eventf(run, corev1.EventTypeWarning, EventBindingUpdateFailed, "Pointing SnapshotEnvironmentBinding %s at Snapshot %s: %v",
					w.updateBinding.Name, w.updateBinding.Spec.Snapshot, err)
			}
			return true, fmt.Errorf("updating SnapshotEnvironmentBinding %s/%s: %w", ns, w.updateBinding.Name, err)
		}
		c.recorder.Eventf(run, corev1.EventTypeNormal, EventBindingUpdated, "Pointed SnapshotEnvironmentBinding %s at Snapshot %s",
			w.updateBinding.Name, w.updateBinding.Spec.Snapshot)
	}
	return false, nil
}

// failVerification records, in the gate status about to be written that names job, that its
// verification failed with msg.
func failVerification(gates []*appstudiov1alpha1.PromotionGate, job *batchv1.Job, msg string) {
	for _, g := range gates {
		for i := range g.Status.Promotions {
			e := &g.Status.Promotions[i]
			if v := e.Verification; v != nil && v.Job == job.Name && v.Namespace == job.Namespace && v.Result == "" {
				v.Result, e.Message = promotiongate.ResultFailed, msg
			}
		}
	}
}
