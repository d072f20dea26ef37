// Package gitopsdeployment is the GitOpsDeployment controller: each GitOpsDeployment becomes
// an Argo CD Application (application.go) and its namespace an AppProject (argocd.DesiredProject)
// with a deployer (pkg/controller/deployer), and Argo CD's view of the Application flows back
// into the GitOpsDeployment's status (status.go) and Events (events.go). An Application whose
// deployment is gone is retired (retire.go). Both directions are driven by informer events, so
// a change on either side is acted on as soon as it is seen. With it runs the project refresh
// controller (project_refresh.go), which has Argo CD look again at what an AppProject refused.
// It is one of the agent's Argo CD controllers, run under the Argo CD Lease.
package gitopsdeployment

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions/application/v1alpha1"
	argolisters "github.com/argoproj/argo-cd/v2/pkg/client/listers/application/v1alpha1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Names of the controllers in logs and metrics.
const (
	// Name is the GitOpsDeployment controller's.
	Name = "gitopsdeployments"
	// ProjectRefreshName is the project refresh controller's (project_refresh.go).
	ProjectRefreshName = "projectrefresh"
)

// Controller reconciles GitOpsDeployments into Argo CD Applications and AppProjects, and the
// Applications' state back into the GitOpsDeployments' status.
type Controller struct {
	*framework.Controller
	// ProjectRefresh asks Argo CD to refresh the refused Applications of an AppProject that
	// changed (project_refresh.go); it runs beside the Controller, with a queue of its own.
	ProjectRefresh *framework.Controller

	gitops        versioned.Interface
	argo          argoclient.Interface
	kube          kubernetes.Interface
	argoNamespace string
	// localServer is the URL of the Argo CD cluster through which Argo CD reaches the cluster
	// the agent runs on.
	localServer string
	recorder    record.EventRecorder
	// ops records the controller's writes in Argo CD as Operations.
	ops *operations.Recorder

	deployments listers.GitOpsDeploymentLister
	// holds are the GitOpsDeploymentHolds (hold.go); nil when the controller runs without them.
	holds listers.GitOpsDeploymentHoldLister
	// resolver resolves the branch of a NewCommit hold's deployment (newcommit.go), every
	// newCommitInterval; nil without --repo-server.
	resolver          RevisionResolver
	newCommitInterval time.Duration
	// deploymentIndex indexes the GitOpsDeployments byEnvironment (environments.go).
	deploymentIndex cache.Indexer
	applications    argolisters.ApplicationLister
	appIndex        cache.Indexer
	projects        argolisters.AppProjectLister
	argoSecrets     corelisters.SecretLister
	// argoSecretIndex is the Argo CD namespace's Secrets, indexed by repository
	// (argocd.RepositoryAllowed).
	argoSecretIndex cache.Indexer

	// envClusters tells which Argo CD cluster an environment deploys to (the ManagedEnvironment
	// controller's view, pkg/controller/managedenvironment).
	envClusters *managedenvironment.Clusters
	// deployers makes the tenant namespaces' deployers (pkg/controller/deployer).
	deployers *deployer.Deployers
	// served are the tenant namespaces served (release.go): every one when nil.
	served *tenancy.Tenants

	// tenants holds a *tenant per tenant namespace (tenant.go).
	tenants sync.Map
	// degraded holds, by key, the UID of each GitOpsDeployment whose health was Degraded
	// since it was last Healthy, so that a recovery by way of Progressing is told as one.
	// Lost with the process: Events are told at most once, not at least once.
	degraded sync.Map

	// trees reads the resource trees Argo CD keeps in its Redis (tree.go); nil when the agent
	// was not told where that Redis is.
	trees     treeReader
	treeState treeState

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers: a GitOpsDeployment's own
// events, and those of the Application made for it, queue its key; so do those of its tenant's
// AppProject and deployer objects (deployers' informers, which it watches through
// Deployers.OnChange), of the repository Secrets of its repository (argoSecrets: the Argo CD
// namespace's Secrets), and of its ManagedEnvironment and the cluster Secrets that list it
// (environments.go), and of the GitOpsDeploymentHold of the same name (hold.go). environments and argoSecrets give it the environments' clusters
// (managedenvironment.Clusters). The informers are shared with the other Argo CD controllers.
func New(
	deployments managedinformers.GitOpsDeploymentInformer,
	holds managedinformers.GitOpsDeploymentHoldInformer,
	environments managedinformers.GitOpsDeploymentManagedEnvironmentInformer,
	applications argoinformers.ApplicationInformer,
	projects argoinformers.AppProjectInformer,
	argoSecrets coreinformers.SecretInformer,
	deployers *deployer.Deployers,
	argoNamespace, localServer string,
	gitops versioned.Interface,
	argo argoclient.Interface,
	kube kubernetes.Interface,
	ops *operations.Recorder,
	recorder record.EventRecorder,
) (*Controller, error) {
	clusters, err := managedenvironment.NewClusters(environments, argoSecrets, deployments.Lister(), argoNamespace)
	if err != nil {
		return nil, err
	}
	appInformer := applications.Informer()
	if err := argocd.AddDeploymentIndex(appInformer); err != nil {
		return nil, err
	}
	c := &Controller{
		gitops:          gitops,
		argo:            argo,
		kube:            kube,
		argoNamespace:   argoNamespace,
		localServer:     localServer,
		recorder:        recorder,
		ops:             ops,
		deployments:     deployments.Lister(),
		applications:    applications.Lister(),
		appIndex:        appInformer.GetIndexer(),
		projects:        projects.Lister(),
		argoSecrets:     argoSecrets.Lister(),
		argoSecretIndex: argoSecrets.Informer().GetIndexer(),
		envClusters:     clusters,
		deployers:       deployers,
		now:             time.Now,
	}
	c.Controller = framework.NewController(Name, c.syncDeployment)

	if err := c.Watch(deployments.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	if err := c.watchHolds(holds); err != nil {
		return nil, err
	}

	enqueueOwner := func(obj interface{}) {
		if key, ok := argocd.ApplicationOwner(obj); ok {
			c.Add(key)
		}
	}
	if err := c.Watch(appInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueOwner,
		UpdateFunc: func(old, obj interface{}) {
			if applicationChanged(old, obj) {
				enqueueOwner(obj)
			}
		},
		DeleteFunc: enqueueOwner,
	}); err != nil {
		return nil, err
	}

	// Someone widening or deleting a tenant's AppProject gets it put back at once.
	requeueTenant := func(obj interface{}) {
		obj = framework.UnwrapTombstone(obj)
		if p, ok := obj.(*argov1alpha1.AppProject); ok {
			c.requeueNamespace(p.Labels[argocd.LabelTenantNamespace])
		}
	}
	if err := c.Watch(projects.Informer(), cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { requeueTenant(obj) },
		DeleteFunc: requeueTenant,
	}); err != nil {
		return nil, err
	}

	// A deployer's object that changed or went has its namespace look at its deployer again.
	if err := deployers.OnChange(func(namespace string) {
		c.deployerChanged(namespace)
		c.requeueNamespace(namespace)
	}); err != nil {
		return nil, err
	}

	if err := c.watchEnvironments(deployments.Informer(), environments.Informer(), argoSecrets.Informer()); err != nil {
		return nil, err
	}
	if err := c.watchRepositorySecrets(argoSecrets.Informer()); err != nil {
		return nil, err
	}
	if err := c.setupProjectRefresh(projects.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles GitOpsDeployments with workers workers until ctx is done; ProjectRefresh runs
// on its own (its Run).
func (c *Controller) Run(ctx context.Context, workers int) { c.Controller.Run(ctx, workers) }

// requeueNamespace queues every GitOpsDeployment of a tenant namespace, whose shared Argo CD
// objects (AppProject, deployer) changed under the agent.
func (c *Controller) requeueNamespace(namespace string) {
	if namespace == "" {
		return
	}
	depls, err := c.deployments.GitOpsDeployments(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, d := range depls {
		c.Add(deploymentKey(d))
	}
}

// applicationChanged tells whether an Application's update carries anything the agent acts
// on. Argo CD rewrites status.reconciledAt at every refresh of an Application, which, with
// every Application watching the whole cluster's cache, is often: those updates alone would
// keep the workers busy while new deployments wait. (reflect.DeepEqual, unlike the API's
// semantic comparison, copes with the unexported field of ApplicationDestination.)
//
// An Application that keeps its resources' health in the resource tree (Argo CD 3.x's
// default) is the exception: a resource's health message can change in the tree while the
// status stays the same (a Deployment Degraded for another reason), and a refresh of the
// Application, which moves reconciledAt, is the agent's cue to read the tree again. A change of
// a resource's health that changes the Application's own health changes the status anyway.
func applicationChanged(old, obj interface{}) bool {
	o, ok1 := old.(*argov1alpha1.Application)
	n, ok2 := obj.(*argov1alpha1.Application)
	if !ok1 || !ok2 {
		return true
	}
	if o.ResourceVersion == n.ResourceVersion {
		return false
	}
	os, ns := o.Status, n.Status
	if ns.ResourceHealthSource == argov1alpha1.ResourceHealthLocationAppTree && !ns.ReconciledAt.Equal(os.ReconciledAt) {
		return true
	}
	os.ReconciledAt, ns.ReconciledAt = nil, nil
	os.ObservedAt, ns.ObservedAt = nil, nil
	return !reflect.DeepEqual(os, ns) || !reflect.DeepEqual(o.Spec, n.Spec) || !reflect.DeepEqual(o.Operation, n.Operation) ||
		!reflect.DeepEqual(o.ObjectMeta.Labels, n.ObjectMeta.Labels) || !reflect.DeepEqual(o.Annotations, n.Annotations) ||
		!slices.Equal(o.Finalizers, n.Finalizers) || !o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

// deploymentKey is the work queue key of a GitOpsDeployment.
func deploymentKey(d *managedv1alpha1.GitOpsDeployment) string { return d.Namespace + "/" + d.Name }

// syncDeployment brings the Argo CD side of one GitOpsDeployment key in line with the object,
// and the object's status in line with Argo CD. An error means "retry with backoff".
func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	held, done := c.served.Serving(namespace)
	defer done()
	if !held {
		return c.release(ctx, key, namespace, name)
	}
	hold, err := c.hold(namespace, name)
	if err != nil {
		return err
	}
	depl, err := c.deployments.GitOpsDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.degraded.Delete(key)
		if err := c.deleteApplications(ctx, key, ""); err != nil {
			return err
		}
		if err := c.updateHoldStatus(ctx, hold, nil, nil, nil); err != nil {
			return err
		}
		return c.syncProject(ctx, namespace)
	}
	if err != nil {
		return err
	}
	// Applications of an earlier object of the same name go, whatever this one needs.
	if err := c.deleteApplications(ctx, key, depl.UID); err != nil {
		return err
	}
	if depl.DeletionTimestamp != nil {
		return c.finalize(ctx, depl)
	}

	hold, newCommit, err := c.checkNewCommit(ctx, depl, hold)
	if err != nil {
		return err
	}
	if newCommit != nil && c.resolver != nil && c.newCommitInterval > 0 {
		c.Queue.AddAfter(key, c.newCommitInterval)
	}

	reconcileErr := c.applyApplication(ctx, depl, hold)
	if reconcileErr != nil && !isUserError(reconcileErr) {
		klog.ErrorS(reconcileErr, "applying the Application", "key", key)
	}
	app, err := c.applications.Applications(c.argoNamespace).Get(argocd.ApplicationName(depl.UID))
	if apierrors.IsNotFound(err) {
		app = nil
	} else if err != nil {
		return err
	}
	if err := c.updateStatus(ctx, depl, hold, app, reconcileErr); err != nil {
		return err
	}
	if err := c.updateHoldStatus(ctx, hold, depl, app, newCommit); err != nil {
		return err
	}
	if isUserError(reconcileErr) {
		return nil // the tenant has to change the object; its update will requeue it
	}
	return reconcileErr
}

// applyApplication makes the Application (and the namespace's AppProject) what depl asks for,
// at the revision of hold while there is one.
func (c *Controller) applyApplication(ctx context.Context, depl *managedv1alpha1.GitOpsDeployment, hold *managedv1alpha1.GitOpsDeploymentHold) error {
	dest, err := c.destination(depl)
	if err != nil {
		return err
	}
	want, err := desiredApplication(depl, hold, c.argoNamespace, dest)
	if err != nil {
		return err
	}
	// The project allows the destination and sets up the deployer that syncs into it.
	if err := c.syncProject(ctx, depl.Namespace); err != nil {
		return err
	}
	cur, err := c.applications.Applications(c.argoNamespace).Get(want.Metadata.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if want.upToDate(cur) {
		return nil
	}
	body, err := json.Marshal(want)
	if err != nil {
		return err
	}
	// Server-side apply creates or updates only the fields in body; Argo CD's status and
	// operation, which share the object for want of a status subresource, stay untouched.
	written, err := c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Patch(ctx, want.Metadata.Name,
		types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
	c.recordChange(managedv1alpha1.OperationResourceTypeApplication, "Application", want.Metadata.Name,
		deploymentSource(depl.Namespace, depl.Name, depl.UID), "applied", err)
	if err != nil {
		return fmt.Errorf("applying Application %s: %w", want.Metadata.Name, err)
	}
	klog.V(2).InfoS("applied Application", "application", want.Metadata.Name, "gitopsdeployment", deploymentKey(depl))
	// Argo CD's finalizer (an earlier agent's, or someone else's) deletes with the controller's
	// own identity, which may not: the agent retires Applications itself (retire.go).
	return c.dropArgoFinalizers(ctx, written)
}

// deleteApplications retires the Applications made for the GitOpsDeployment key, except that
// of keep: what each deployed goes first (retire.go).
func (c *Controller) deleteApplications(ctx context.Context, key string, keep types.UID) error {
	objs, err := c.appIndex.ByIndex(argocd.ByDeployment, key)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		app := obj.(*argov1alpha1.Application)
		if keep != "" && app.Labels[argocd.LabelDeploymentUID] == string(keep) {
			continue
		}
		if err := c.retireApplication(ctx, app); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) deleteApplication(ctx context.Context, app *argov1alpha1.Application) error {
	name, uid := app.Name, app.UID
	err := c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	c.recordChange(managedv1alpha1.OperationResourceTypeApplication, "Application", name,
		deploymentSource(app.Labels[argocd.LabelDeploymentNamespace], app.Annotations[argocd.AnnotationDeploymentName], types.UID(app.Labels[argocd.LabelDeploymentUID])),
		"deleted", err)
	if err != nil {
		return fmt.Errorf("deleting Application %s: %w", name, err)
	}
	klog.V(2).InfoS("deleted Application", "application", name)
	return nil
}

// finalize handles a GitOpsDeployment being deleted: its Application goes first, and the
// tenant's finalizer is removed only once the Application, and with it everything it
// deployed, is gone.
func (c *Controller) finalize(ctx context.Context, depl *managedv1alpha1.GitOpsDeployment) error {
	name := argocd.ApplicationName(depl.UID)
	app, err := c.applications.Applications(c.argoNamespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if app != nil {
		if err := c.retireApplication(ctx, app); err != nil {
			return err
		}
		// Argo CD reports what stands in the way (a sync or comparison error) through the
		// status; the Application's events bring the deployment back here.
		return c.updateStatus(ctx, depl, nil, app, nil)
	}
	if !slices.Contains(depl.Finalizers, managedv1alpha1.GitOpsDeploymentFinalizer) {
		return nil
	}
	// The cache may not have seen an Application created moments ago: only the server can
	// say it is gone before the tenant's resources are declared deleted.
	if _, err := c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("Application %s exists but is not in the cache yet", name)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.removeFinalizer(ctx, depl); err != nil {
		return err
	}
	return c.syncProject(ctx, depl.Namespace)
}

func (c *Controller) removeFinalizer(ctx context.Context, depl *managedv1alpha1.GitOpsDeployment) error {
	patch, err := finalizersPatch(depl.ResourceVersion, without(depl.Finalizers, managedv1alpha1.GitOpsDeploymentFinalizer))
	if err != nil {
		return err
	}
	_, err = c.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(depl.Namespace).Patch(ctx, depl.Name,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of GitOpsDeployment %s: %w", deploymentKey(depl), err)
	}
	klog.V(2).InfoS("removed finalizer", "gitopsdeployment", deploymentKey(depl))
	return nil
}

// updateStatus writes the status computeStatus derives, with the Held condition of hold, and
// only when it differs, and then records the Events of the change.
func (c *Controller) updateStatus(ctx context.Context, depl *managedv1alpha1.GitOpsDeployment, hold *managedv1alpha1.GitOpsDeploymentHold,
	app *argov1alpha1.Application, reconcileErr error) error {
	now := metav1.NewTime(c.now())
	st, err := computeStatus(depl.Status, app, c.readTree(app), reconcileErr, now)
	if err != nil {
		return err
	}
	st.Conditions = heldCondition(st.Conditions, hold, now)
	if app != nil && app.Status.Sync.ComparedTo.Source.RepoURL != "" {
		st.ReconciledState.Destination.Name = c.reconciledEnvironment(depl.Namespace, app)
	}
	if apiequality.Semantic.DeepEqual(st, depl.Status) {
		return nil
	}
	upd := depl.DeepCopy()
	upd.Status = st
	written, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(depl.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeployment %s: %w", deploymentKey(depl), err)
	}
	// Decided from the status this write replaced: a failed or conflicting write records
	// nothing, and its retry records the Events once (events.go).
	key := deploymentKey(depl)
	uid, _ := c.degraded.Load(key)
	c.recordEvents(written, deploymentEvents(depl.Status, st, uid == depl.UID))
	switch st.Health.Status {
	case managedv1alpha1.HealthStatusCodeDegraded:
		c.degraded.Store(key, depl.UID)
	case managedv1alpha1.HealthStatusCodeHealthy:
		c.degraded.Delete(key)
	}
	return nil
}

// syncProject makes the AppProject of a tenant namespace, and its deployer, match the
// GitOpsDeployments in it and the Applications still being retired, and deletes both once the
// namespace has neither left.
func (c *Controller) syncProject(ctx context.Context, namespace string) error {
	t := c.tenant(namespace)
	t.mu.Lock()
	defer t.mu.Unlock()

	depls, err := c.deployments.GitOpsDeployments(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	apps, err := c.applications.Applications(c.argoNamespace).List(labels.SelectorFromSet(labels.Set{argocd.LabelDeploymentNamespace: namespace}))
	if err != nil {
		return err
	}
	name := argocd.ProjectName(namespace)
	cur, err := c.projects.AppProjects(c.argoNamespace).Get(name)
	if apierrors.IsNotFound(err) {
		cur = nil
	} else if err != nil {
		return err
	}
	cur = t.project(cur)
	if len(depls) == 0 && len(apps) == 0 {
		return c.removeProject(ctx, t, namespace, cur)
	}
	var in projectInputs
	live := make(map[types.UID]bool, len(depls))
	for _, d := range depls {
		live[d.UID] = d.DeletionTimestamp == nil
		dest, err := c.destination(d)
		if err != nil {
			continue // not deployed (its environment is gone, say), so nothing to allow
		}
		in.add(d.Spec.Source.RepoURL, dest)
	}
	// A retiring Application (its deployment gone or being deleted) prunes through its
	// project: its repository and destination stay allowed until it is gone. Those of live
	// deployments are what the deployments say: an Application whose environment was deleted
	// syncs no more.
	for _, app := range apps {
		if app.Spec.Source != nil && !live[types.UID(app.Labels[argocd.LabelDeploymentUID])] {
			in.add(app.Spec.Source.RepoURL, app.Spec.Destination)
		}
	}
	repos := make([]string, 0, len(in.repos))
	for _, r := range in.repos {
		if c.repositoryAllowed(namespace, r) { // another tenant's private repository: project_refresh.go, argocd.RepositoryAllowed
			repos = append(repos, r)
		}
	}
	var accounts []argov1alpha1.ApplicationDestinationServiceAccount
	clusterScoped, local := false, false
	for _, dest := range in.dests {
		acct, wholeCluster, ok := c.destinationAccount(dest)
		if !ok {
			continue // Argo CD then refuses to sync there: no one to impersonate
		}
		accounts = append(accounts, acct)
		clusterScoped = clusterScoped || wholeCluster
		local = local || dest.Server == c.localServer
	}
	// The deployer and the project do not depend on one another: a namespace's first
	// deployment waits for one round trip, not two.
	g, gctx := errgroup.WithContext(ctx)
	if local && !t.deployerApplied.Load() {
		g.Go(func() error {
			err := c.deployers.Ensure(gctx, namespace)
			if err == nil {
				err = c.deployers.RemoveLegacy(gctx, namespace)
			}
			switch {
			case err == nil:
				t.deployerApplied.Store(true)
			case !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				return err
			}
			return nil
		})
	}
	if want := argocd.DesiredProject(namespace, c.argoNamespace, repos, in.dests, accounts, clusterScoped); !want.UpToDate(cur) {
		g.Go(func() error {
			body, err := json.Marshal(want)
			if err != nil {
				return err
			}
			written, err := c.argo.ArgoprojV1alpha1().AppProjects(c.argoNamespace).Patch(gctx, name, types.ApplyPatchType, body,
				metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
			c.recordChange(managedv1alpha1.OperationResourceTypeAppProject, "AppProject", name, namespaceSource(namespace), "applied", err)
			if err != nil {
				return fmt.Errorf("applying AppProject %s: %w", name, err)
			}
			t.wrote(cur, written) // the tenant is locked throughout
			return nil
		})
	}
	return g.Wait()
}

// projectInputs gathers the repositories and destinations a tenant's project must allow.
type projectInputs struct {
	repos []string
	dests []argov1alpha1.ApplicationDestination
}

func (in *projectInputs) add(repoURL string, dest argov1alpha1.ApplicationDestination) {
	in.repos = append(in.repos, repoURL)
	in.dests = append(in.dests, dest)
}

// removeProject deletes the AppProject and the deployer of a namespace that deploys nothing.
func (c *Controller) removeProject(ctx context.Context, t *tenant, namespace string, cur *argov1alpha1.AppProject) error {
	// The cache may not show a deployment created moments ago, whose Application would
	// then be refused for want of its project: only the server can say there is none.
	live, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(live.Items) > 0 {
		return nil // its own event brings the namespace back here
	}
	t.deployerApplied.Store(false)
	if c.deployers.Exists(namespace) {
		if err := c.deployers.Remove(ctx, namespace); err != nil {
			return err
		}
	}
	if cur == nil {
		return nil
	}
	t.wrote(cur, nil)
	name := argocd.ProjectName(namespace)
	err = c.argo.ArgoprojV1alpha1().AppProjects(c.argoNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	c.recordChange(managedv1alpha1.OperationResourceTypeAppProject, "AppProject", name, namespaceSource(namespace), "deleted", err)
	if err != nil {
		return fmt.Errorf("deleting AppProject %s: %w", name, err)
	}
	return nil
}

// destinationAccount is the entry of a tenant project's destinationServiceAccounts for dest:
// whom Argo CD impersonates to sync there. In the local cluster that is the namespace's
// deployer; through a ManagedEnvironment, the ServiceAccount its credentials belong to
// (argocd.AnnotationImpersonate on its cluster Secret, pkg/controller/managedenvironment), which
// also tells whether the environment reaches cluster-scoped resources. ok is false for a
// cluster the agent does not know (yet).
func (c *Controller) destinationAccount(dest argov1alpha1.ApplicationDestination) (acct argov1alpha1.ApplicationDestinationServiceAccount, wholeCluster, ok bool) {
	if dest.Server == c.localServer {
		return argov1alpha1.ApplicationDestinationServiceAccount{
			Server:                globEscape(dest.Server),
			Namespace:             globEscape(dest.Namespace),
			DefaultServiceAccount: deployer.Identity(dest.Namespace),
		}, false, true
	}
	if dest.Name == "" {
		return acct, false, false
	}
	s, err := c.argoSecrets.Secrets(c.argoNamespace).Get(dest.Name)
	if err != nil || s.Annotations[argocd.AnnotationImpersonate] == "" || len(s.Data[argocd.ClusterKeyServer]) == 0 {
		return acct, false, false
	}
	return argov1alpha1.ApplicationDestinationServiceAccount{
		Server:                globEscape(string(s.Data[argocd.ClusterKeyServer])),
		Namespace:             "*", // the environment's cluster Secret limits the namespaces
		DefaultServiceAccount: s.Annotations[argocd.AnnotationImpersonate],
	}, len(s.Data[argocd.ClusterKeyNamespaces]) == 0 || string(s.Data[argocd.ClusterKeyClusterScoped]) == "true", true
}

// globEscape quotes the characters Argo CD's glob matching of destinationServiceAccounts
// would read as patterns (an API URL may hold "?"), so that an entry matches its own
// destination alone.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
