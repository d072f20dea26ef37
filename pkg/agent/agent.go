// Package agent reconciles the GitOps API into one Argo CD instance: each GitOpsDeployment
// becomes an Argo CD Application (and its namespace an AppProject), and Argo CD's view of the
// Application flows back into the GitOpsDeployment's status. Both directions are driven by
// informer events, so a change on either side is acted on as soon as it is seen.
package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	argolisters "github.com/argoproj/argo-cd/v2/pkg/client/listers/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// byDeployment indexes Applications by the "namespace/name" of their GitOpsDeployment, so the
// agent finds the Applications of a GitOpsDeployment that no longer exists, or of an earlier
// object of the same name.
const byDeployment = "gitopsdeployment"

// Agent reconciles GitOpsDeployments into the Argo CD instance of one namespace.
type Agent struct {
	gitops        versioned.Interface
	argo          argoclient.Interface
	argoNamespace string

	gitopsInformers externalversions.SharedInformerFactory
	argoInformers   argoinformers.SharedInformerFactory
	deployments     listers.GitOpsDeploymentLister
	applications    argolisters.ApplicationLister
	appIndex        cache.Indexer
	projects        argolisters.AppProjectLister
	synced          []cache.InformerSynced

	queue workqueue.TypedRateLimitingInterface[string]

	// projectLocks serialises the AppProject writes of one tenant namespace, which
	// the workers of several GitOpsDeployments in that namespace would otherwise race on.
	projectLocks sync.Map

	now func() time.Time
}

// New wires an Agent; Run starts it. The informers are not resynced on a timer: everything the
// agent acts on arrives as an event.
func New(gitops versioned.Interface, argo argoclient.Interface, argoNamespace string) (*Agent, error) {
	a := &Agent{
		gitops:          gitops,
		argo:            argo,
		argoNamespace:   argoNamespace,
		gitopsInformers: externalversions.NewSharedInformerFactory(gitops, 0),
		argoInformers:   argoinformers.NewSharedInformerFactoryWithOptions(argo, 0, argoinformers.WithNamespace(argoNamespace)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gitopsdeployments"}),
		now: time.Now,
	}

	deplInformer := a.gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeployments()
	a.deployments = deplInformer.Lister()
	if _, err := deplInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.enqueueDeployment,
		UpdateFunc: func(_, obj interface{}) { a.enqueueDeployment(obj) },
		DeleteFunc: a.enqueueDeployment,
	}); err != nil {
		return nil, err
	}

	appInformer := a.argoInformers.Argoproj().V1alpha1().Applications()
	if err := appInformer.Informer().AddIndexers(cache.Indexers{byDeployment: deploymentKeyOfApplication}); err != nil {
		return nil, err
	}
	a.applications = appInformer.Lister()
	a.appIndex = appInformer.Informer().GetIndexer()
	if _, err := appInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.enqueueApplicationOwner,
		UpdateFunc: func(_, obj interface{}) { a.enqueueApplicationOwner(obj) },
		DeleteFunc: a.enqueueApplicationOwner,
	}); err != nil {
		return nil, err
	}

	projInformer := a.argoInformers.Argoproj().V1alpha1().AppProjects()
	a.projects = projInformer.Lister()

	a.synced = []cache.InformerSynced{deplInformer.Informer().HasSynced, appInformer.Informer().HasSynced,
		projInformer.Informer().HasSynced}
	return a, nil
}

// Run processes changes with the given number of workers until ctx is done.
func (a *Agent) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer a.queue.ShutDown()

	a.gitopsInformers.Start(ctx.Done())
	a.argoInformers.Start(ctx.Done())
	defer a.gitopsInformers.Shutdown()
	defer a.argoInformers.Shutdown()

	klog.InfoS("waiting for informer caches", "argoNamespace", a.argoNamespace)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return fmt.Errorf("informer caches did not sync: %w", ctx.Err())
	}
	klog.InfoS("agent started", "workers", workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, a.worker, time.Second)
		}()
	}
	<-ctx.Done()
	a.queue.ShutDown()
	wg.Wait()
	return nil
}

func (a *Agent) worker(ctx context.Context) {
	for a.processNext(ctx) {
	}
}

func (a *Agent) processNext(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.syncDeployment(ctx, key); err != nil {
		// A conflict only means the cache had not yet seen the agent's own last write.
		if apierrors.IsConflict(err) {
			klog.V(4).InfoS("conflict; retrying", "key", key)
		} else {
			klog.ErrorS(err, "reconciling GitOpsDeployment; will retry", "key", key)
		}
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

func (a *Agent) enqueueDeployment(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	a.queue.Add(key)
}

func (a *Agent) enqueueApplicationOwner(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return
	}
	if keys, _ := deploymentKeyOfApplication(app); len(keys) == 1 {
		a.queue.Add(keys[0])
	}
}

// deploymentKeyOfApplication is the "namespace/name" of the GitOpsDeployment an Application
// was made for; Applications the agent did not make have none.
func deploymentKeyOfApplication(obj interface{}) ([]string, error) {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return nil, nil
	}
	ns, name := app.Labels[LabelDeploymentNamespace], app.Annotations[AnnotationDeploymentName]
	if ns == "" || name == "" {
		return nil, nil
	}
	return []string{ns + "/" + name}, nil
}

// deploymentKey is the work queue key of a GitOpsDeployment.
func deploymentKey(d *managedv1alpha1.GitOpsDeployment) string { return d.Namespace + "/" + d.Name }
