// Package autopromotion starts automated promotion: a new Snapshot of an Application gets a
// PromotionRun from each AppStudioAutomated Environment without a parent, which the
// PromotionRun controller walks down the Environment graph (pkg/controller/appstudio/promotiongraph).
// Only the newest Snapshot of an Application is promoted so; plan.go decides, pure.
package autopromotion

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "autopromotion"

const fieldManager = "gitops-service-agent"

// Event reasons, on the Snapshot.
const (
	EventPromotionStarted = "AutomatedPromotionStarted"
	EventGraphInvalid     = "PromotionGraphInvalid"
	EventCreateFailed     = "FailedCreate"
	EventRunNameTaken     = "RunNameTaken"
)

// byApplication indexes Snapshots by "namespace/application".
const byApplication = "autopromotion/application"

// Controller creates the PromotionRuns of automated promotion.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder

	snapshots     appstudiolisters.SnapshotLister
	snapshotIndex cache.Indexer
	environments  appstudiolisters.EnvironmentLister
	runs          appstudiolisters.PromotionRunLister

	// since is how old a Snapshot listed at start may be and still be promoted.
	since time.Time
}

// startGrace is how long before the controller started a Snapshot listed at start may have been
// created and still be promoted: one that arrived while no agent ran.
const startGrace = 5 * time.Minute

// New wires the controller into the informers.
func New(snapshots appstudioinformers.SnapshotInformer, environments appstudioinformers.EnvironmentInformer,
	runs appstudioinformers.PromotionRunInformer, gitops versioned.Interface, recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops: gitops, recorder: recorder,
		snapshots: snapshots.Lister(), snapshotIndex: snapshots.Informer().GetIndexer(),
		environments: environments.Lister(), runs: runs.Lister(),
		since: time.Now().Add(-startGrace),
	}
	c.Controller = framework.NewController(Name, c.sync)
	if err := snapshots.Informer().AddIndexers(cache.Indexers{byApplication: func(obj interface{}) ([]string, error) {
		s, ok := obj.(*appstudiov1alpha1.Snapshot)
		if !ok {
			return nil, nil
		}
		return []string{s.Namespace + "/" + s.Spec.Application}, nil
	}}); err != nil {
		return nil, err
	}
	// A new Snapshot is what starts a promotion: adds alone. A Snapshot's status changes often
	// (tests, releases) and its spec never. Neither a change of the graph, nor a run deleted (to
	// cancel it), nor the newest Snapshot deleted sends an existing Snapshot on its way.
	if err := c.Watch(snapshots.Informer(), cache.ResourceEventHandlerDetailedFuncs{AddFunc: c.onSnapshotAdded}); err != nil {
		return nil, err
	}
	// Except for a graph the cache learns of late: the informers relist independently after a
	// watch breaks (gitops-apiserver restarted), so a Snapshot may reach the cache before the
	// Environments created ahead of it, and its sync finds no graph.
	if err := c.Watch(environments.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.onEnvironmentAdded}); err != nil {
		return nil, err
	}
	return c, nil
}

// onEnvironmentAdded queues again the recent Snapshots of the Environment's namespace that
// were created after it: they were due to be promoted with it, and their sync may have run
// before the cache had it. An Environment made after a Snapshot does not send it on its way,
// nor does one learnt of long after (startGrace), as for the Snapshots listed at start.
func (c *Controller) onEnvironmentAdded(obj interface{}) {
	env, ok := obj.(*appstudiov1alpha1.Environment)
	if !ok {
		return
	}
	snapshots, err := c.snapshots.Snapshots(env.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	recent := time.Now().Add(-startGrace)
	for _, s := range snapshots {
		if !s.CreationTimestamp.Before(&env.CreationTimestamp) && s.CreationTimestamp.Time.After(recent) {
			c.Enqueue(s)
		}
	}
}

// onSnapshotAdded queues a new Snapshot. The Snapshots an informer lists when it starts are
// new only if created shortly before (while no agent ran, or across a change of leader): the
// others were there before this agent and were promoted then, or predate automated promotion,
// and an upgrade or a restart must not send an old Snapshot to production.
func (c *Controller) onSnapshotAdded(obj interface{}, isInInitialList bool) {
	s, ok := obj.(*appstudiov1alpha1.Snapshot)
	if !ok || (isInInitialList && s.CreationTimestamp.Time.Before(c.since)) {
		return
	}
	c.Enqueue(obj)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	snapshot, err := framework.OrNil(c.snapshots.Snapshots(namespace).Get(name))
	if err != nil || snapshot == nil {
		return err
	}
	siblings, err := c.snapshotIndex.ByIndex(byApplication, namespace+"/"+snapshot.Spec.Application)
	if err != nil {
		return err
	}
	var list []*appstudiov1alpha1.Snapshot
	for _, obj := range siblings {
		list = append(list, obj.(*appstudiov1alpha1.Snapshot))
	}
	graph, err := c.graph(namespace)
	if err != nil {
		return err
	}
	existing := map[string]bool{}
	for _, env := range graph.Roots() {
		name := RunName(snapshot.Name, env)
		run, err := framework.OrNil(c.runs.PromotionRuns(namespace).Get(name))
		if err != nil {
			return err
		}
		if run == nil {
			continue
		}
		existing[name] = true
		if run.Annotations[AnnotationSnapshot] != snapshot.Name || run.Annotations[AnnotationEnvironment] != env {
			c.recorder.Eventf(snapshot, corev1.EventTypeWarning, EventRunNameTaken,
				"PromotionRun %s, which would promote Snapshot %s automatically from Environment %s, exists and is not that promotion", name, snapshot.Name, env)
		}
	}
	promoted, err := c.promoted(namespace, snapshot.Spec.Application)
	if err != nil {
		return err
	}
	p := Decide(snapshot, Newest(list), graph, existing, promoted)
	if len(p.Create) == 0 {
		return nil
	}
	for _, problem := range p.Problems {
		c.recorder.Event(snapshot, corev1.EventTypeWarning, EventGraphInvalid, problem.Message())
	}
	var errs []error
	for _, run := range p.Create {
		_, err := c.gitops.AppStudioV1alpha1().PromotionRuns(namespace).Create(ctx, run, metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Ours, made before the cache knew; or someone else's of the same name, which is theirs.
			klog.V(2).InfoS("promotion run exists already", "snapshot", klog.KObj(snapshot), "promotionRun", run.Name)
		case err != nil:
			c.recorder.Eventf(snapshot, corev1.EventTypeWarning, EventCreateFailed, "Creating PromotionRun %s: %v", run.Name, err)
			errs = append(errs, fmt.Errorf("creating PromotionRun %s/%s: %w", namespace, run.Name, err))
		default:
			c.recorder.Eventf(snapshot, corev1.EventTypeNormal, EventPromotionStarted,
				"Promoting Snapshot %s automatically from Environment %s: PromotionRun %s",
				snapshot.Name, run.Spec.AutomatedPromotion.InitialEnvironment, run.Name)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// promoted is the creation time of the newest Snapshot of application promoted automatically,
// nil if none, as its runs recorded it.
func (c *Controller) promoted(namespace, application string) (*metav1.Time, error) {
	runs, err := c.runs.PromotionRuns(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var last *metav1.Time
	for _, r := range runs {
		if r.Spec.Application != application || r.Annotations[AnnotationSnapshot] == "" {
			continue
		}
		created, err := time.Parse(time.RFC3339, r.Annotations[AnnotationSnapshotCreated])
		if err != nil {
			continue // not ours after all, or edited: it proves nothing
		}
		if t := metav1.NewTime(created); last == nil || last.Before(&t) {
			last = &t
		}
	}
	return last, nil
}

// graph is the promotion graph of namespace's Environments.
func (c *Controller) graph(namespace string) (*promotiongraph.Graph, error) {
	envs, err := c.environments.Environments(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return promotiongraph.New(promotiongraph.FromEnvironments(envs)), nil
}
