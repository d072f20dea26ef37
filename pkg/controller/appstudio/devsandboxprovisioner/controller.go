// Package devsandboxprovisioner is the Dev Sandbox provisioner: for a DeploymentTargetClaim
// that the binder (deploymenttargetbinder) marked for provisioning, of a DeploymentTargetClass
// whose provisioner is ProvisionerName ("appstudio.redhat.com/devsandbox"), it asks the Dev
// Sandbox operator for a space through a SpaceRequest (toolchain.dev.openshift.com/v1alpha1),
// and once the operator made it ready, makes the DeploymentTarget "<claim>-dt" of its
// namespace and credentials, which the binder then binds (reference §3.9–3.11). The rules are
// in planUnit.
//
// The controller's key is the unit "claim namespace/claim name": the claim, its target
// TargetName(claim) and the SpaceRequests labelled for either (labels appstudio.openshift.io/dtc
// and appstudio.openshift.io/dt) are found from it whether or not the claim still exists. The
// provisioner's SpaceRequests are those labelled appstudio.openshift.io/dtc, which it makes
// them with (informerSelector): the cache and the checks made of the server see only those.
//
// Deleting a target of this provisioner, under its finalizer Finalizer: Delete adds the
// operator's finalizer to the SpaceRequest and deletes it, and lets the target go once the
// operator removed the space and its finalizer; a SpaceRequest the operator reports
// UnableToTerminate StuckAfter its deletion makes the target Failed. Retain lets the target go
// and leaves the SpaceRequest. The reclaim controller (deploymenttargetreclaim) treats these
// targets as any other: it drops its own finalizer at once and watches the time the
// provisioner's takes.
//
// SpaceRequests are read and written as unstructured objects through the dynamic client: the
// service takes no dependency on the toolchain's Go module. The cluster may not serve the API
// (no Dev Sandbox operator): Run asks discovery (at most once a minute, as the binder does,
// through spacerequest.Served) and only while the API is served runs an informer of
// SpaceRequests of its own, which the agent's start does not wait for. Until the API is
// served, and after it goes away, the controller idles: nothing is queued, and the informer is
// stopped rather than left retrying a resource that is not there. It idles too, once the API
// is served, while the agent lacks its rights on SpaceRequests (CheckAccess): the provisioner
// is enabled by default, so a missing right is logged and asked again, and fails nothing.
package devsandboxprovisioner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "devsandboxprovisioner"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// SpaceRequest informer indexes: by "namespace/label value" of LabelClaim and LabelTarget.
const (
	byClaim  = "devsandboxprovisioner/claim"
	byTarget = "devsandboxprovisioner/target"
)

var everything = labels.Everything()

// syncTimeout is how long the SpaceRequest informer may take to fill its cache before Run
// stops it and tries again at the next recheck (the API may have gone away meanwhile).
const syncTimeout = time.Minute

// Controller provisions DeploymentTargets through SpaceRequests.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	dynamic  dynamic.Interface
	recorder record.EventRecorder

	claims  appstudiolisters.DeploymentTargetClaimLister
	targets appstudiolisters.DeploymentTargetLister
	classes appstudiolisters.DeploymentTargetClassLister

	// served tells whether the cluster serves SpaceRequests (discovery, at most once a
	// spacerequest.Recheck).
	served func() bool
	// recheck is how often Run looks at served.
	recheck time.Duration
	// checkAccess, when set, tells whether the agent has the rights the provisioner needs on
	// SpaceRequests (CheckAccess): Run starts no informer until it has.
	checkAccess func(context.Context) error

	mu sync.RWMutex
	// srIndex is the running SpaceRequest informer's cache; nil while the API is not served.
	srIndex cache.Indexer

	now func() time.Time
}

// New wires the controller's handlers into the informers. d is asked whether the cluster
// serves SpaceRequests; dyn reads and writes them; kube, unless nil, is asked whether the agent
// may (CheckAccess) once they are served.
func New(
	claims appstudioinformers.DeploymentTargetClaimInformer,
	targets appstudioinformers.DeploymentTargetInformer,
	classes appstudioinformers.DeploymentTargetClassInformer,
	gitops versioned.Interface,
	dyn dynamic.Interface,
	d discovery.DiscoveryInterface,
	kube kubernetes.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:   gitops,
		dynamic:  dyn,
		recorder: recorder,
		claims:   claims.Lister(),
		targets:  targets.Lister(),
		classes:  classes.Lister(),
		recheck:  spacerequest.Recheck,
		now:      time.Now,
	}
	c.served = spacerequest.Served(d, c.now)
	if kube != nil {
		c.checkAccess = func(ctx context.Context) error { return CheckAccess(ctx, kube) }
	}
	c.Controller = framework.NewController(Name, c.sync)
	for _, h := range []struct {
		inf cache.SharedIndexInformer
		f   func(interface{})
	}{
		{claims.Informer(), c.onClaim},
		{targets.Informer(), c.onTarget},
		{classes.Informer(), c.onClass},
	} {
		if _, err := h.inf.AddEventHandler(framework.OnChange(h.f)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// active is the SpaceRequest cache, nil while the API is not served.
func (c *Controller) active() cache.Indexer {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.srIndex
}

func (c *Controller) setActive(idx cache.Indexer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.srIndex = idx
}

// Run runs the controller until ctx is done: it idles until the cluster serves SpaceRequests
// and the agent has its rights on them (checkAccess), then runs its SpaceRequest informer,
// waits for its cache, queues every unit and drains the queue; when the API goes away it stops
// the informer and idles again. A missing right does not stop the agent (the provisioner is
// enabled by default): it is logged, and asked again at the next recheck.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	defer wg.Wait()
	workersStarted := false
	var stopInformer context.CancelFunc
	defer func() {
		if stopInformer != nil {
			stopInformer()
		}
	}()
	for {
		served := c.served()
		switch {
		case served && stopInformer == nil:
			if c.checkAccess != nil {
				if err := c.checkAccess(ctx); err != nil {
					if ctx.Err() != nil {
						return
					}
					klog.ErrorS(err, "the Dev Sandbox provisioner idles until it has its rights on SpaceRequests; checking again later", "controller", Name)
					break
				}
			}
			infCtx, cancel := context.WithCancel(ctx)
			idx, ok := c.startInformer(infCtx)
			if !ok {
				cancel()
				if ctx.Err() != nil {
					return
				}
				klog.InfoS("the SpaceRequest informer did not sync; trying again later", "controller", Name)
				break
			}
			stopInformer = cancel
			c.setActive(idx)
			klog.InfoS("SpaceRequests are served: provisioning Dev Sandbox DeploymentTargets", "controller", Name)
			c.queueAll()
			if !workersStarted {
				workersStarted = true
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.Controller.Run(ctx, workers)
				}()
			}
		case !served && stopInformer != nil:
			klog.InfoS("SpaceRequests are no longer served: the Dev Sandbox provisioner idles", "controller", Name)
			c.setActive(nil)
			stopInformer()
			stopInformer = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.recheck):
		}
	}
}

// startInformer starts an informer of the SpaceRequests labelled for a claim and waits for
// its cache; false when it did not sync (ctx done, or the API went away meanwhile).
func (c *Controller) startInformer(ctx context.Context) (cache.Indexer, bool) {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dynamic, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = informerSelector
	})
	inf := factory.ForResource(spacerequest.Resource).Informer()
	if err := inf.AddIndexers(cache.Indexers{byClaim: labelIndex(spacerequest.LabelClaim), byTarget: labelIndex(spacerequest.LabelTarget)}); err != nil {
		klog.ErrorS(err, "indexing SpaceRequests", "controller", Name)
		return nil, false
	}
	if _, err := inf.AddEventHandler(framework.OnChange(c.onSpaceRequest)); err != nil {
		return nil, false
	}
	factory.Start(ctx.Done())
	go func() {
		// The caller cancels ctx to stop the informer, also when it did not sync.
		<-ctx.Done()
		factory.Shutdown()
	}()
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return nil, false
	}
	return inf.GetIndexer(), true
}

func labelIndex(label string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil
		}
		if v := m.GetLabels()[label]; v != "" {
			return []string{m.GetNamespace() + "/" + v}, nil
		}
		return nil, nil
	}
}

// queueAll queues the units of every claim and target of this provisioner's classes, and of
// every SpaceRequest.
func (c *Controller) queueAll() {
	classes, _ := c.classes.List(everything)
	for _, class := range classes {
		c.onClass(class)
	}
	if idx := c.active(); idx != nil {
		for _, obj := range idx.List() {
			c.onSpaceRequest(obj)
		}
	}
}

func (c *Controller) onClaim(obj interface{}) {
	if c.active() == nil {
		return
	}
	if claim, ok := framework.UnwrapTombstone(obj).(*claimT); ok {
		c.Add(claim.Namespace + "/" + claim.Name)
	}
}

func (c *Controller) onTarget(obj interface{}) {
	if c.active() == nil {
		return
	}
	if t, ok := framework.UnwrapTombstone(obj).(*targetT); ok && isOurs(t) && strings.HasSuffix(t.Name, TargetSuffix) {
		c.Add(t.Namespace + "/" + strings.TrimSuffix(t.Name, TargetSuffix))
	}
}

func (c *Controller) onSpaceRequest(obj interface{}) {
	m, err := meta.Accessor(framework.UnwrapTombstone(obj))
	if err != nil {
		return
	}
	if v := m.GetLabels()[spacerequest.LabelClaim]; v != "" {
		c.Add(m.GetNamespace() + "/" + v)
	}
	if v := m.GetLabels()[spacerequest.LabelTarget]; strings.HasSuffix(v, TargetSuffix) {
		c.Add(m.GetNamespace() + "/" + strings.TrimSuffix(v, TargetSuffix))
	}
}

// onClass queues the units of the class's claims and targets.
func (c *Controller) onClass(obj interface{}) {
	class, ok := framework.UnwrapTombstone(obj).(*classT)
	if !ok || c.active() == nil || class.Spec.Provisioner != ProvisionerName {
		return
	}
	claims, targets := provisioning.OfClass(c.claims, c.targets, class.Name)
	for _, claim := range claims {
		c.onClaim(claim)
	}
	for _, t := range targets {
		c.onTarget(t)
	}
}

// sync provisions, maintains or reclaims one unit.
func (c *Controller) sync(ctx context.Context, key string) error {
	idx := c.active()
	if idx == nil {
		return nil // the API is not served: everything is queued again when it is
	}
	namespace, claim, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(idx, namespace, claim)
	if err != nil {
		return err
	}
	p := planUnit(s, c.now())
	if err := c.act(ctx, s, p); err != nil {
		if !errors.Is(err, errCacheBehind) {
			c.reportFailure(ctx, s, err)
		}
		return err
	}
	if p.requeueAfter > 0 {
		// The 2 minutes after a SpaceRequest's deletion: no event marks them.
		c.Queue.AddAfter(key, p.requeueAfter)
	}
	return nil
}

// observe gathers the state of one unit from the caches.
func (c *Controller) observe(idx cache.Indexer, namespace, claim string) (state, error) {
	s := state{namespace: namespace, claimName: claim}
	var err error
	if s.claim, err = framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(claim)); err != nil {
		return s, err
	}
	if s.dt, err = framework.OrNil(c.targets.DeploymentTargets(namespace).Get(TargetName(claim))); err != nil {
		return s, err
	}
	if s.byClaim, err = spaceRequests(idx, byClaim, namespace+"/"+claim); err != nil {
		return s, err
	}
	if s.byTarget, err = spaceRequests(idx, byTarget, namespace+"/"+TargetName(claim)); err != nil {
		return s, err
	}
	getClass := func(name string) (*classT, error) {
		if name == "" {
			return nil, nil
		}
		return framework.OrNil(c.classes.Get(name))
	}
	if s.claim != nil {
		if s.claimClass, err = getClass(string(s.claim.Spec.DeploymentTargetClassName)); err != nil {
			return s, err
		}
	}
	for _, sr := range append(append([]*srT(nil), s.byClaim...), s.byTarget...) {
		if v := sr.GetAnnotations()[AnnClass]; v != "" {
			s.recordedClass = v
			break
		}
	}
	// The target's class decides its reclaim, also when a claim of the same name (a new one,
	// of another class) exists.
	switch {
	case s.dt != nil:
		s.class, err = getClass(string(s.dt.Spec.DeploymentTargetClassName))
	case s.claim != nil && s.claim.Spec.DeploymentTargetClassName != "":
		s.class = s.claimClass
	default:
		s.class, err = getClass(s.recordedClass)
	}
	if err != nil {
		return s, err
	}
	if s.claim == nil && s.dt == nil && len(s.byClaim)+len(s.byTarget) > 0 {
		classes, err := c.classes.List(everything)
		if err != nil {
			return s, err
		}
		for _, class := range classes {
			if class.Spec.Provisioner == ProvisionerName {
				s.classes = append(s.classes, class)
			}
		}
		sort.Slice(s.classes, func(i, j int) bool { return s.classes[i].Name < s.classes[j].Name })
	}
	return s, nil
}

func spaceRequests(idx cache.Indexer, index, key string) ([]*srT, error) {
	objs, err := idx.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]*srT, 0, len(objs))
	for _, obj := range objs {
		if sr, ok := obj.(*srT); ok {
			out = append(out, sr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// errCacheBehind is a sync that read, from the server, what its caches have yet to show: it
// is tried again (with the queue's backoff) and is no failure to report.
var errCacheBehind = errors.New("the cache has yet to show what an earlier sync wrote")

// informerSelector selects the SpaceRequests of this provisioner, those its informer caches:
// the ones labelled LabelClaim. A label selector cannot select those labelled LabelClaim or
// LabelTarget, and two informers would cache twice the SpaceRequests labelled with both,
// which are all those this provisioner labels LabelTarget: it makes every SpaceRequest with
// LabelClaim, and the original's SpaceRequest controller took only those (reference §3.11).
// A SpaceRequest labelled LabelTarget alone is none of this provisioner's: the cache does not
// show it and the server checks (claimSelector, targetSelector) do not look for it either, so
// that no check waits for a cache that will never show what it found.
const informerSelector = spacerequest.LabelClaim

// claimSelector selects on the server the SpaceRequests of the index byClaim of the claim:
// labelled LabelClaim=claim. False when claim cannot be a label value: no SpaceRequest is
// labelled for it, and no selector is to be made of it (a DoesNotExist one would select every
// SpaceRequest without the label).
func claimSelector(claim string) (string, bool) {
	r, err := labels.NewRequirement(spacerequest.LabelClaim, selection.Equals, []string{claim})
	if err != nil {
		return "", false
	}
	return labels.NewSelector().Add(*r).String(), true
}

// targetSelector selects on the server the SpaceRequests of the index byTarget of the claim's
// target: of the informer's (informerSelector) and labelled LabelTarget=TargetName(claim).
// False as claimSelector.
func targetSelector(claim string) (string, bool) {
	cached, err := labels.NewRequirement(informerSelector, selection.Exists, nil)
	if err != nil {
		return "", false
	}
	r, err := labels.NewRequirement(spacerequest.LabelTarget, selection.Equals, []string{TargetName(claim)})
	if err != nil {
		return "", false
	}
	return labels.NewSelector().Add(*cached, *r).String(), true
}

// serverHasSpaceRequests tells whether the server (not the cache) has a SpaceRequest selected
// by one of selectors that keep accepts (nil: any).
func (c *Controller) serverHasSpaceRequests(ctx context.Context, s state, selectors []string, keep func(*srT) bool) (bool, error) {
	for _, sel := range selectors {
		list, err := c.dynamic.Resource(spacerequest.Resource).Namespace(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, fmt.Errorf("listing SpaceRequests: %w", err)
		}
		for i := range list.Items {
			if keep == nil || keep(&list.Items[i]) {
				return true, nil
			}
		}
	}
	return false, nil
}

// unitSelectors are claimSelector and targetSelector, those that can be made.
func unitSelectors(claim string) []string {
	var out []string
	for _, sel := range []func(string) (string, bool){claimSelector, targetSelector} {
		if s, ok := sel(claim); ok {
			out = append(out, s)
		}
	}
	return out
}

// act carries out p in order; each write is found again on the next sync, so a stop between
// two converges.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	srs := c.dynamic.Resource(spacerequest.Resource).Namespace(s.namespace)
	update := metav1.UpdateOptions{FieldManager: fieldManager}
	ignoreNotFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if sr := p.createSpaceRequest; sr != nil {
		// generateName: a SpaceRequest the cache has yet to show would be made twice. The
		// cache's view provision looked at: byClaim, whatever the tier.
		sel, ok := claimSelector(s.claimName)
		if !ok {
			return fmt.Errorf("the DeploymentTargetClaim name %s/%s is not a valid label value", s.namespace, s.claimName)
		}
		has, err := c.serverHasSpaceRequests(ctx, s, []string{sel}, nil)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("%w: a SpaceRequest for DeploymentTargetClaim %s/%s", errCacheBehind, s.namespace, s.claimName)
		}
		created, err := srs.Create(ctx, sr, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("creating a SpaceRequest for DeploymentTargetClaim %s/%s: %w", s.namespace, s.claimName, err)
		}
		klog.V(2).InfoS("requested a space", "spaceRequest", klog.KObj(created), "claim", klog.KRef(s.namespace, s.claimName))
	}
	if p.orphanNeedsNoClaim {
		// The caches may not show a claim or target made since: ask.
		claim, err := framework.OrNil(c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(s.namespace).Get(ctx, s.claimName, metav1.GetOptions{}))
		if err != nil {
			return err
		}
		t, err := framework.OrNil(c.gitops.AppStudioV1alpha1().DeploymentTargets(s.namespace).Get(ctx, TargetName(s.claimName), metav1.GetOptions{}))
		if err != nil {
			return err
		}
		if claim != nil || t != nil {
			return nil // their events bring the unit back
		}
	}
	for _, sr := range p.finalizeSpaceRequests {
		if _, err := srs.Update(ctx, sr, update); ignoreNotFound(err) != nil {
			return fmt.Errorf("adding the finalizer of SpaceRequest %s/%s: %w", sr.GetNamespace(), sr.GetName(), err)
		}
	}
	for _, sr := range p.deleteSpaceRequests {
		if err := ignoreNotFound(srs.Delete(ctx, sr.GetName(), framework.PreconditionUID(sr.GetUID()))); err != nil {
			return fmt.Errorf("deleting SpaceRequest %s/%s: %w", sr.GetNamespace(), sr.GetName(), err)
		}
		klog.V(2).InfoS("deleted a SpaceRequest", "spaceRequest", klog.KObj(sr), "unit", s.namespace+"/"+s.claimName)
	}

	targets := c.gitops.AppStudioV1alpha1().DeploymentTargets(s.namespace)
	last := s.dt
	if t := p.createTarget; t != nil {
		var err error
		if last, err = targets.Create(ctx, t, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("creating DeploymentTarget %s/%s: %w", t.Namespace, t.Name, err)
		}
	}
	if p.confirmSpaceRequestsGone {
		// The cache's view reclaim looked at: byTarget and byClaim, of the tier it deletes.
		has, err := c.serverHasSpaceRequests(ctx, s, unitSelectors(s.claimName), isOfTier)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("%w: a SpaceRequest of DeploymentTarget %s/%s", errCacheBehind, s.namespace, TargetName(s.claimName))
		}
	}
	if t := p.updateTarget; t != nil {
		var err error
		if last, err = targets.Update(ctx, t, update); err != nil {
			if apierrors.IsNotFound(err) {
				return nil // gone: its delete event brings the unit back
			}
			return fmt.Errorf("updating DeploymentTarget %s/%s: %w", t.Namespace, t.Name, err)
		}
	}
	if (p.markAvailable || p.failTarget) && last != nil {
		upd := last.DeepCopy()
		if p.failTarget {
			upd.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseFailed
		} else {
			upd.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseAvailable
		}
		if _, err := targets.UpdateStatus(ctx, upd, update); ignoreNotFound(err) != nil {
			return fmt.Errorf("updating the status of DeploymentTarget %s/%s: %w", upd.Namespace, upd.Name, err)
		}
	}
	// Labelled last: a SpaceRequest labelled for a target that does not exist would be an
	// orphan of the target's reclaim.
	for _, sr := range p.labelSpaceRequests {
		if _, err := srs.Update(ctx, sr, update); ignoreNotFound(err) != nil {
			return fmt.Errorf("labelling SpaceRequest %s/%s: %w", sr.GetNamespace(), sr.GetName(), err)
		}
	}
	if p.condition != nil && s.claim != nil {
		upd := s.claim.DeepCopy()
		meta.SetStatusCondition(&upd.Status.Conditions, *p.condition)
		_, err := c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(s.namespace).UpdateStatus(ctx, upd, update)
		if ignoreNotFound(err) != nil {
			return fmt.Errorf("updating the status of DeploymentTargetClaim %s/%s: %w", s.namespace, s.claim.Name, err)
		}
	}
	c.recordEvents(s, p.events)
	return nil
}

// recordEvents records evs on the claim, else the target, else the SpaceRequest.
func (c *Controller) recordEvents(s state, evs []framework.Event) {
	switch {
	case s.claim != nil && (s.claim.DeletionTimestamp == nil || s.dt == nil):
		framework.RecordEvents(c.recorder, s.claim, evs)
	case s.dt != nil:
		framework.RecordEvents(c.recorder, s.dt, evs)
	case len(s.byClaim) > 0:
		framework.RecordEvents(c.recorder, s.byClaim[0], evs)
	case len(s.byTarget) > 0:
		framework.RecordEvents(c.recorder, s.byTarget[0], evs)
	}
}

// reportFailure reports a failed write on the claim (provisioning.ReportFailure).
func (c *Controller) reportFailure(ctx context.Context, s state, cause error) {
	provisioning.ReportFailure(ctx, c.gitops, c.recorder, s.claim, cause, c.now())
}
