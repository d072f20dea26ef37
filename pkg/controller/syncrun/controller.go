// Package syncrun is the GitOpsDeploymentSyncRun controller: a SyncRun becomes an Argo CD sync
// operation on its GitOpsDeployment's Application (see the comment below for how), and the
// operation's outcome becomes the SyncRun's ErrorOccurred condition. The decisions are
// planSyncRuns' (plan.go), a pure function; the reconcile reads the caches and carries the
// plan out. It is one of the agent's Argo CD controllers, run under the Argo CD Lease.
package syncrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions/application/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// A GitOpsDeploymentSyncRun becomes an Argo CD sync operation: the agent sets the `operation`
// field of the deployment's Application, as argocd-server does for `argocd app sync` (reference
// argocd.md §1.3), after asking Argo CD for a refresh (§1.4).
//
// The SyncRuns of one GitOpsDeployment are reconciled together, under the deployment's
// "namespace/name" as the work queue key: a deployment has one Application and so runs one
// operation at a time, and one worker deciding for all of its SyncRuns is what makes them run
// one after another without racing each other.
//
// What the agent knows about a SyncRun lives in two places, and nowhere in its own memory, so
// that a restart picks up where it stopped:
//   - the Application names the SyncRun whose operation it runs: the operation's info carries the
//     SyncRun's UID, and Argo CD copies it into status.operationState.operation, where it stays
//     after the operation ends. Setting the operation and naming the SyncRun are one write.
//   - a SyncRun whose outcome is known carries it in its ErrorOccurred condition ("finished").
//     The next SyncRun starts only once the previous one's outcome is written, so an outcome is
//     never lost to the next operation overwriting status.operationState.
//
// The sync is keyed on the SyncRun's UID, never on its spec or resourceVersion: a status
// write, a label change or the same object applied again finds the operation already started
// (or finished) and starts nothing. spec.gitopsDeploymentName and spec.revisionID cannot change
// (the API rejects it).
//
// Argo CD looks at an Application's operation after each pass of its refresh queue, which the
// update that sets the operation makes. Should it not have started the operation syncStartGrace
// after the agent set it, the agent writes the Application again (the request's new time), at
// growing intervals (stalledStart), rather than leave the SyncRun to Argo CD's periodic refresh.
//
// Deleting a SyncRun needs no finalizer: once it is gone, an operation on the Application that
// names its UID belongs to no SyncRun, and the agent terminates it if it still runs (reference
// managed-gitops-api.md §4.5).

// bySyncRunDeployment indexes SyncRuns by the "namespace/name" of the GitOpsDeployment they sync.
const bySyncRunDeployment = "syncrun-gitopsdeployment"

// What the agent writes on the Application for a SyncRun.
const (
	// OperationInfoSyncRunUID is the operation info entry that names the SyncRun (by UID) an
	// operation was started for.
	OperationInfoSyncRunUID = "syncRunUID"
	// operationInfoSyncRun names it for people reading the Application: "namespace/name".
	operationInfoSyncRun = "syncRun"
	// OperationInfoSyncRun is operationInfoSyncRun, for the controllers that read it (the
	// DeploymentRecord controller names the SyncRun of a sync).
	OperationInfoSyncRun = operationInfoSyncRun
	// AnnotationSyncRunRefresh is the UID of the SyncRun the agent asked Argo CD to refresh the
	// Application for. With Argo CD's refresh annotation gone, that refresh is done and the
	// SyncRun's operation follows.
	AnnotationSyncRunRefresh = "managed-gitops.redhat.com/syncrun-refresh"
	// AnnotationSyncRunRequested is the agent's last request for the Application's operation
	// (syncRequest: "<SyncRun UID> <RFC 3339 time> <nudges>"): written with the operation, then
	// with each nudge.
	AnnotationSyncRunRequested = "managed-gitops.redhat.com/syncrun-requested"
	// syncRunInitiator is the user Argo CD shows as having started the operation.
	syncRunInitiator = "gitops-service"
)

// Argo CD's refresh annotation (argocd.md §1.4) and the operation phases the controller reads
// (gitops-engine's OperationPhase values).
const (
	annotationArgoRefresh = argov1alpha1.AnnotationKeyRefresh
	refreshNormal         = string(argov1alpha1.RefreshTypeNormal)
	phaseRunning          = argocd.PhaseRunning
	phaseSucceeded        = argocd.PhaseSucceeded
)

// Messages of the SyncRun's ErrorOccurred condition (reference §3.3; the second is ours, for a
// SyncRun that names a deployment created after it).
func syncRunMissingDeployment(run *managedv1alpha1.GitOpsDeploymentSyncRun) string {
	return fmt.Sprintf("Unable to retrieve GitOpsDeployment '%s' referenced by the GitOpsDeploymentSyncRun", run.Spec.GitopsDeploymentName)
}

func syncRunAutomated(run *managedv1alpha1.GitOpsDeploymentSyncRun) string {
	return fmt.Sprintf("invalid GitOpsDeploymentSyncRun '%s'. Syncing a GitOpsDeployment with Automated sync policy is not allowed", run.Name)
}

func syncRunDeploymentNewer(run *managedv1alpha1.GitOpsDeploymentSyncRun) string {
	return fmt.Sprintf("GitOpsDeployment '%s' was created after the GitOpsDeploymentSyncRun: create a new GitOpsDeploymentSyncRun to sync it", run.Spec.GitopsDeploymentName)
}

// Name is the controller's name in logs and metrics.
const Name = "gitopsdeploymentsyncruns"

// fieldManager is the field manager of the controller's writes.
const fieldManager = argocd.FieldManager

// Controller reconciles the SyncRuns of one GitOpsDeployment key with its Application.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	argo     argoclient.Interface
	recorder record.EventRecorder
	// ops records the controller's writes to Applications as Operations.
	ops *operations.Recorder

	runs        cache.Indexer
	deployments listers.GitOpsDeploymentLister
	apps        cache.Indexer
	// served are the tenant namespaces served (serve.go): every one when nil.
	served *tenancy.Tenants

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers. Its key is a
// GitOpsDeployment's; the events of that deployment's SyncRuns, of the deployment itself and of
// its Application queue it. The deployment and Application informers are shared with the
// GitOpsDeployment controller.
func New(
	runs managedinformers.GitOpsDeploymentSyncRunInformer,
	deployments managedinformers.GitOpsDeploymentInformer,
	applications argoinformers.ApplicationInformer,
	gitops versioned.Interface,
	argo argoclient.Interface,
	ops *operations.Recorder,
	recorder record.EventRecorder,
) (*Controller, error) {
	runInformer, deplInformer, appInformer := runs.Informer(), deployments.Informer(), applications.Informer()
	if err := runInformer.AddIndexers(cache.Indexers{bySyncRunDeployment: deploymentKeyOfSyncRun}); err != nil {
		return nil, err
	}
	if err := argocd.AddDeploymentIndex(appInformer); err != nil {
		return nil, err
	}
	c := &Controller{
		gitops:      gitops,
		argo:        argo,
		recorder:    recorder,
		ops:         ops,
		runs:        runInformer.GetIndexer(),
		deployments: deployments.Lister(),
		apps:        appInformer.GetIndexer(),
		now:         time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)

	enqueueRun := func(obj interface{}) {
		obj = framework.UnwrapTombstone(obj)
		if keys, _ := deploymentKeyOfSyncRun(obj); len(keys) == 1 {
			c.Add(keys[0])
		}
	}
	if err := c.Watch(runInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueRun,
		// The old object too, should its deployment name ever change.
		UpdateFunc: func(old, obj interface{}) { enqueueRun(old); enqueueRun(obj) },
		DeleteFunc: enqueueRun,
	}); err != nil {
		return nil, err
	}

	if err := c.Watch(deplInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(old, obj interface{}) {
			o, ok1 := old.(*managedv1alpha1.GitOpsDeployment)
			n, ok2 := obj.(*managedv1alpha1.GitOpsDeployment)
			if !ok1 || !ok2 || o.UID != n.UID || o.Spec.Type != n.Spec.Type {
				c.Enqueue(obj)
			}
		},
		DeleteFunc: c.Enqueue,
	}); err != nil {
		return nil, err
	}

	enqueueApp := func(obj interface{}) {
		if key, ok := argocd.ApplicationOwner(obj); ok {
			c.Add(key)
		}
	}
	if err := c.Watch(appInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueApp,
		UpdateFunc: func(old, obj interface{}) {
			o, ok1 := old.(*argov1alpha1.Application)
			n, ok2 := obj.(*argov1alpha1.Application)
			if !ok1 || !ok2 || syncRunRelevantChange(o, n) {
				enqueueApp(obj)
			}
		},
		DeleteFunc: enqueueApp,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles SyncRuns with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.Controller.Run(ctx, workers) }

// deploymentKeyOfSyncRun is the "namespace/name" of the GitOpsDeployment a SyncRun syncs.
func deploymentKeyOfSyncRun(obj interface{}) ([]string, error) {
	run, ok := obj.(*managedv1alpha1.GitOpsDeploymentSyncRun)
	if !ok || run.Spec.GitopsDeploymentName == "" {
		return nil, nil
	}
	return []string{run.Namespace + "/" + run.Spec.GitopsDeploymentName}, nil
}

// syncRunRelevantChange tells whether an Application update changes anything the SyncRuns of
// its deployment wait on: the operation and its state, the refresh, or its existence. Argo CD
// updates an Application's status on every refresh; the rest of those updates are no news here.
func syncRunRelevantChange(old, app *argov1alpha1.Application) bool {
	return old.UID != app.UID ||
		(old.DeletionTimestamp == nil) != (app.DeletionTimestamp == nil) ||
		old.Annotations[annotationArgoRefresh] != app.Annotations[annotationArgoRefresh] ||
		old.Annotations[AnnotationSyncRunRefresh] != app.Annotations[AnnotationSyncRunRefresh] ||
		old.Labels[argocd.LabelDeploymentUID] != app.Labels[argocd.LabelDeploymentUID] ||
		!apiequality.Semantic.DeepEqual(old.Operation, app.Operation) ||
		!operationStateEqual(old.Status.OperationState, app.Status.OperationState)
}

func operationStateEqual(a, b *argov1alpha1.OperationState) bool {
	if a == nil || b == nil {
		return a == b
	}
	// Not the message: Argo CD rewrites it while a sync waits on its waves.
	return a.Phase == b.Phase && syncRunOf(a.Operation.Info) == syncRunOf(b.Operation.Info) &&
		a.StartedAt.Equal(&b.StartedAt) && a.FinishedAt.Equal(b.FinishedAt)
}

// syncRunOf is the UID of the SyncRun an operation was started for, from its info; "" for an
// operation someone else started.
func syncRunOf(info []*argov1alpha1.Info) types.UID {
	for _, i := range info {
		if i != nil && i.Name == OperationInfoSyncRunUID {
			return types.UID(i.Value)
		}
	}
	return ""
}

// sync reconciles the SyncRuns of one GitOpsDeployment key with its Application.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || !c.served.Holds(namespace) {
		return nil
	}
	objs, err := c.runs.ByIndex(bySyncRunDeployment, key)
	if err != nil {
		return err
	}
	w := syncRunWorld{}
	for _, obj := range objs {
		w.runs = append(w.runs, obj.(*managedv1alpha1.GitOpsDeploymentSyncRun))
	}
	w.deployment, err = c.deployments.GitOpsDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		w.deployment = nil
	} else if err != nil {
		return err
	}
	apps, err := c.apps.ByIndex(argocd.ByDeployment, key)
	if err != nil {
		return err
	}
	for _, obj := range apps {
		w.applications = append(w.applications, obj.(*argov1alpha1.Application))
	}

	plan := planSyncRuns(w, metav1.NewTime(c.now()))
	if plan.automated {
		// Refusing a SyncRun for good deserves more than the cache's word: a deployment
		// switched to manual just before the SyncRun was created may not have reached it yet.
		live, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			live = nil
		} else if err != nil {
			return err
		}
		if live == nil || live.UID != w.deployment.UID || live.Spec.Type != w.deployment.Spec.Type {
			w.deployment = live
			plan = planSyncRuns(w, metav1.NewTime(c.now()))
		}
	}

	for _, app := range plan.terminate {
		if err := c.terminateOperation(ctx, app); err != nil {
			return err
		}
	}
	// Outcomes first: the next operation may start only once the last one's is recorded.
	for _, st := range plan.statuses {
		if st.ended != nil {
			// The refresh and the start were recorded after the fact, by a goroutine that an
			// agent killed in between never ran. Once the outcome is written nothing looks at
			// this SyncRun again: make sure of the records before.
			for _, rec := range []operations.Change{syncRunRefreshChange(plan.app, st.run), syncStartChange(plan.app, st.run, st.ended.StartedAt.Time)} {
				if err := c.ops.Ensure(ctx, rec); err != nil {
					return fmt.Errorf("recording the sync of GitOpsDeploymentSyncRun %s/%s: %w", st.run.Namespace, st.run.Name, err)
				}
			}
		}
		if err := c.updateSyncRunStatus(ctx, st.run, st.conditions, st.events); err != nil {
			return err
		}
	}
	if plan.recheck > 0 {
		c.Queue.AddAfter(key, plan.recheck)
	}
	switch {
	case plan.refresh != nil:
		return c.requestRefresh(ctx, plan.app, plan.refresh)
	case plan.start != nil:
		return c.startOperation(ctx, plan.app, plan.start, w.deployment)
	case plan.nudge != nil:
		return c.nudgeArgoCD(ctx, plan.app, plan.nudge)
	}
	return nil
}

// patchApplication merge-patches an Application (argocd.PatchApplication): a concurrent change
// fails the patch with a conflict, and the key is reconciled again from fresher state. The
// write is recorded as rec, an Operation of the SyncRun.
func (c *Controller) patchApplication(ctx context.Context, app *argov1alpha1.Application, patch map[string]interface{}, rec operations.Change) error {
	return argocd.PatchApplication(ctx, c.argo, c.ops, app, patch, rec)
}

// syncRunRefreshChange is the refresh of app asked for run, and syncStartChange the start of
// run's sync on app, at (zero: now). Each happens once for a SyncRun (planSyncRuns starts a
// sync only after asking for its refresh), so their Operations have names of their own:
// recording them again finds them.
func syncRunRefreshChange(app *argov1alpha1.Application, run *managedv1alpha1.GitOpsDeploymentSyncRun) operations.Change {
	rec := argocd.ApplicationChange(app, syncRunSource(run), "requested a refresh of")
	rec.Name = "syncrun-" + string(run.UID) + "-refresh"
	return rec
}

func syncStartChange(app *argov1alpha1.Application, run *managedv1alpha1.GitOpsDeploymentSyncRun, at time.Time) operations.Change {
	rec := argocd.ApplicationChange(app, syncRunSource(run), "started a sync of")
	rec.At, rec.Name = at, "syncrun-"+string(run.UID)+"-start"
	return rec
}

func syncRunSource(run *managedv1alpha1.GitOpsDeploymentSyncRun) managedv1alpha1.OperationSource {
	return managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", Namespace: run.Namespace, Name: run.Name, UID: string(run.UID)}
}

func (c *Controller) requestRefresh(ctx context.Context, app *argov1alpha1.Application, run *managedv1alpha1.GitOpsDeploymentSyncRun) error {
	if err := c.patchApplication(ctx, app, refreshPatch(run), syncRunRefreshChange(app, run)); err != nil {
		return err
	}
	klog.V(2).InfoS("refreshing the Application before a sync", "application", app.Name, "syncrun", klog.KObj(run))
	return nil
}

func (c *Controller) startOperation(ctx context.Context, app *argov1alpha1.Application, run *managedv1alpha1.GitOpsDeploymentSyncRun, depl *managedv1alpha1.GitOpsDeployment) error {
	if err := c.patchApplication(ctx, app, operationPatch(syncOperation(run, depl), syncRequest{run: run.UID, at: c.now()}), syncStartChange(app, run, time.Time{})); err != nil {
		return err
	}
	klog.V(2).InfoS("started a sync", "application", app.Name, "syncrun", klog.KObj(run), "revision", run.Spec.RevisionID)
	c.recordEvents(run, []event{syncRequestedEvent(run)})
	return nil
}

// nudgeArgoCD writes next, the agent's next request for app's operation, which Argo CD has not
// started: the update makes Argo CD look at the operation again. Recorded once per SyncRun, its
// attempts counting the nudges.
func (c *Controller) nudgeArgoCD(ctx context.Context, app *argov1alpha1.Application, next *syncRequest) error {
	source := managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", UID: string(next.run)}
	for _, i := range app.Operation.Info {
		if i != nil && i.Name == operationInfoSyncRun {
			source.Namespace, source.Name, _ = strings.Cut(i.Value, "/")
		}
	}
	rec := argocd.ApplicationChange(app, source, "asked Argo CD again to start the sync on")
	rec.Name = "syncrun-" + string(next.run) + "-nudge"
	if err := c.patchApplication(ctx, app, requestPatch(*next), rec); err != nil {
		return err
	}
	klog.InfoS("Argo CD has not started the sync it was asked for: asked again", "application", app.Name,
		"syncrun", source.Namespace+"/"+source.Name, "lastRequest", app.Annotations[AnnotationSyncRunRequested])
	return nil
}

// terminateOperation does what argocd-server's TerminateOperation does: the phase becomes
// Terminating, and Argo CD stops the sync and ends it as Failed.
func (c *Controller) terminateOperation(ctx context.Context, app *argov1alpha1.Application) error {
	uid := syncRunOf(app.Operation.Info)
	source := managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", UID: string(uid)}
	for _, i := range app.Operation.Info {
		if i == nil || i.Name != operationInfoSyncRun {
			continue
		}
		if ns, name, ok := strings.Cut(i.Value, "/"); ok {
			source.Namespace, source.Name = ns, name
		}
	}
	if err := c.patchApplication(ctx, app, argocd.TerminatePatch(), argocd.ApplicationChange(app, source, "terminated the sync of")); err != nil {
		return err
	}
	klog.V(2).InfoS("terminating the sync of a deleted SyncRun", "application", app.Name, "syncRunUID", uid)
	return nil
}

// updateSyncRunStatus writes a SyncRun's conditions and, once written, records evs on it: a
// failed or conflicting write records nothing, and the pass that retries it decides again.
func (c *Controller) updateSyncRunStatus(ctx context.Context, run *managedv1alpha1.GitOpsDeploymentSyncRun, conds []managedv1alpha1.GitOpsDeploymentSyncRunCondition, evs []event) error {
	upd := run.DeepCopy()
	upd.Status.Conditions = conds
	written, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(run.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeploymentSyncRun %s/%s: %w", run.Namespace, run.Name, err)
	}
	c.recordEvents(written, evs)
	return nil
}

// syncOperation is the operation a SyncRun asks of Argo CD. The sync options must travel in
// the operation: Argo CD reads them nowhere else (argocd.md §4.7, pitfall 7). Like an automated
// sync, it prunes what Git no longer has, in the background.
func syncOperation(run *managedv1alpha1.GitOpsDeploymentSyncRun, depl *managedv1alpha1.GitOpsDeployment) *argov1alpha1.Operation {
	options := argov1alpha1.SyncOptions{argocd.PrunePropagationBackground}
	if depl.Spec.SyncPolicy != nil {
		for _, o := range depl.Spec.SyncPolicy.SyncOptions {
			options = append(options, string(o))
		}
	}
	return &argov1alpha1.Operation{
		Sync: &argov1alpha1.SyncOperation{
			Revision:     run.Spec.RevisionID,
			Prune:        true,
			SyncOptions:  options,
			SyncStrategy: &argov1alpha1.SyncStrategy{Hook: &argov1alpha1.SyncStrategyHook{}},
		},
		InitiatedBy: argov1alpha1.OperationInitiator{Username: syncRunInitiator},
		Info: []*argov1alpha1.Info{
			{Name: OperationInfoSyncRunUID, Value: string(run.UID)},
			{Name: operationInfoSyncRun, Value: run.Namespace + "/" + run.Name},
		},
	}
}

// refreshPatch asks Argo CD for a refresh and records for which SyncRun it was asked.
func refreshPatch(run *managedv1alpha1.GitOpsDeploymentSyncRun) map[string]interface{} {
	return map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{
		annotationArgoRefresh:    refreshNormal,
		AnnotationSyncRunRefresh: string(run.UID),
	}}}
}

// operationPatch sets the operation, as argocd-server's SetAppOperation does: the previous
// operation's state goes, so that Argo CD starts this one afresh rather than resuming it.
// The request, r, says when syncStartGrace starts.
func operationPatch(op *argov1alpha1.Operation, r syncRequest) map[string]interface{} {
	return map[string]interface{}{
		"metadata": map[string]interface{}{"annotations": map[string]interface{}{
			AnnotationSyncRunRefresh: nil, AnnotationSyncRunRequested: r.String()}},
		"operation": op,
		"status":    map[string]interface{}{"operationState": nil},
	}
}

// requestPatch writes the agent's request r for an operation Argo CD has not started.
func requestPatch(r syncRequest) map[string]interface{} {
	return map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{
		AnnotationSyncRunRequested: r.String()}}}
}

// syncRequestedEvent is the Event of a SyncRun whose sync operation the agent set.
func syncRequestedEvent(run *managedv1alpha1.GitOpsDeploymentSyncRun) event {
	rev := "its target revision"
	if run.Spec.RevisionID != "" {
		rev = "revision " + run.Spec.RevisionID
	}
	return normalEvent(EventSyncRequested, "Requested a sync of GitOpsDeployment %s to %s in Argo CD", run.Spec.GitopsDeploymentName, rev)
}
