// Package deploymenttargetbinder is the DeploymentTargetClaim binder: it binds each
// appstudio.redhat.com DeploymentTargetClaim to a DeploymentTarget, as Kubernetes' PersistentVolume
// binder binds claims to volumes, and hands the target back when the claim is deleted
// (reference §3.9). The rules are in planClaim.
//
// It provisions nothing: a claim that no target matches gets the provisioner annotation
// (provisioner.appstudio.redhat.com/dt-provisioner=<class>) and waits, Pending, for the
// provisioner of its class to create a target whose claimRef names it; the binder then binds
// that target. The DeploymentTarget side of a claim that is gone (the reclaim policy of a
// target whose claim vanished without the binder's finalizer, a stale claimRef, a target's own
// deletion) is the deploymenttargetreclaim controller's.
package deploymenttargetbinder

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "deploymenttargetbinder"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// Informer indexes, named after the controller: other controllers share the informers.
const (
	// byTarget: claims by the "namespace/name" of the target they name (shared with the
	// other controllers of claims and targets, targetindex).
	byTarget = targetindex.ClaimsByTarget
	// byClass: claims by their class name.
	byClass = "deploymenttargetbinder.appstudio/class"
	// byNamespacedClass: claims and targets by "namespace/class".
	byNamespacedClass = "deploymenttargetbinder.appstudio/namespacedClass"
	// byClaimRef: targets by the "namespace/name" of the claim they claim (shared, targetindex).
	byClaimRef = targetindex.TargetsByClaimRef
)

// Controller binds DeploymentTargetClaims to DeploymentTargets.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder

	claims      appstudiolisters.DeploymentTargetClaimLister
	claimIndex  cache.Indexer
	targets     appstudiolisters.DeploymentTargetLister
	targetIndex cache.Indexer
	classes     appstudiolisters.DeploymentTargetClassLister

	// spaceRequests tells whether the cluster serves the SpaceRequest API (discovery, asked
	// at most once a SpaceRequestRecheck; the Dev Sandbox provisioner asks on its own, so the
	// two may disagree for up to that long).
	spaceRequests func() bool

	now func() time.Time
}

// New wires the binder's handlers and indexes into the informers.
func New(
	claims appstudioinformers.DeploymentTargetClaimInformer,
	targets appstudioinformers.DeploymentTargetInformer,
	classes appstudioinformers.DeploymentTargetClassInformer,
	gitops versioned.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:      gitops,
		recorder:    recorder,
		claims:      claims.Lister(),
		claimIndex:  claims.Informer().GetIndexer(),
		targets:     targets.Lister(),
		targetIndex: targets.Informer().GetIndexer(),
		classes:     classes.Lister(),
		now:         time.Now,
	}
	c.spaceRequests = spacerequest.Served(gitops.Discovery(), c.now)
	c.Controller = framework.NewController(Name, c.sync)

	if err := targetindex.Add(claims.Informer(), cache.Indexers{
		byTarget: targetindex.TargetOfClaim, byClass: classOfClaim, byNamespacedClass: namespacedClassOfClaim,
	}); err != nil {
		return nil, err
	}
	if err := targetindex.Add(targets.Informer(), cache.Indexers{
		byClaimRef: targetindex.ClaimRefOfTarget, byNamespacedClass: namespacedClassOfTarget,
	}); err != nil {
		return nil, err
	}
	// Every change of a claim, its annotations and finalizers as much as its spec, is the
	// binder's business; its own status writes come back as no-op syncs.
	if err := c.Watch(claims.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	if err := c.Watch(targets.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onTarget,
		UpdateFunc: func(old, obj interface{}) {
			c.onTarget(old) // a claimRef or name it no longer has
			c.onTarget(obj)
		},
		DeleteFunc: c.onTarget,
	}); err != nil {
		return nil, err
	}
	if err := c.Watch(classes.Informer(), framework.OnChange(c.onClass)); err != nil {
		return nil, err
	}
	return c, nil
}

func classOfClaim(obj interface{}) ([]string, error) {
	claim, ok := obj.(*claimT)
	if !ok || claim.Spec.DeploymentTargetClassName == "" {
		return nil, nil
	}
	return []string{string(claim.Spec.DeploymentTargetClassName)}, nil
}

func namespacedClassOfClaim(obj interface{}) ([]string, error) {
	claim, ok := obj.(*claimT)
	if !ok || claim.Spec.DeploymentTargetClassName == "" {
		return nil, nil
	}
	return []string{claim.Namespace + "/" + string(claim.Spec.DeploymentTargetClassName)}, nil
}

func namespacedClassOfTarget(obj interface{}) ([]string, error) {
	t, ok := obj.(*targetT)
	if !ok || t.Spec.DeploymentTargetClassName == "" {
		return nil, nil
	}
	return []string{t.Namespace + "/" + string(t.Spec.DeploymentTargetClassName)}, nil
}

// onTarget queues the claims a target's change may matter to: the claim it claims, the claims
// that name it, and, when it is free to be bound, the claims of its class that wait for one.
func (c *Controller) onTarget(obj interface{}) {
	t, ok := framework.UnwrapTombstone(obj).(*targetT)
	if !ok {
		return
	}
	if t.Spec.ClaimRef != "" {
		c.Add(t.Namespace + "/" + t.Spec.ClaimRef)
	}
	naming, _ := c.claimIndex.ByIndex(byTarget, t.Namespace+"/"+t.Name)
	for _, claim := range naming {
		c.Enqueue(claim)
	}
	if t.Spec.ClaimRef != "" || t.Spec.DeploymentTargetClassName == "" {
		return
	}
	waiting, _ := c.claimIndex.ByIndex(byNamespacedClass, t.Namespace+"/"+string(t.Spec.DeploymentTargetClassName))
	for _, obj := range waiting {
		if claim := obj.(*claimT); claim.Spec.TargetName == "" && !isBindCompleted(claim) {
			c.Enqueue(claim)
		}
	}
}

// onClass queues the claims of a class.
func (c *Controller) onClass(obj interface{}) {
	class, ok := framework.UnwrapTombstone(obj).(*classT)
	if !ok {
		return
	}
	claims, _ := c.claimIndex.ByIndex(byClass, class.Name)
	for _, claim := range claims {
		c.Enqueue(claim)
	}
}

// sync binds one claim key.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(namespace, name)
	if err != nil {
		return err
	}
	p := planClaim(s, metav1.NewTime(c.now()))
	if err := c.act(ctx, s, p); err != nil {
		c.reportInternalError(ctx, namespace, name, err)
		return err
	}
	if p.requeueAfter > 0 {
		c.Queue.AddAfter(key, p.requeueAfter)
	}
	return nil
}

// observe gathers the state of one claim from the informers' caches.
func (c *Controller) observe(namespace, name string) (state, error) {
	s := state{spaceRequestsServed: c.spaceRequests()}
	var err error
	if s.claim, err = framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(name)); err != nil || s.claim == nil {
		return s, err
	}
	seen := map[string]bool{}
	add := func(objs []interface{}) {
		for _, obj := range objs {
			if t := obj.(*targetT); !seen[t.Name] {
				seen[t.Name] = true
				s.targets = append(s.targets, t)
			}
		}
	}
	if s.claim.Spec.TargetName != "" {
		t, err := framework.OrNil(c.targets.DeploymentTargets(namespace).Get(s.claim.Spec.TargetName))
		if err != nil {
			return s, err
		}
		if t != nil {
			add([]interface{}{t})
		}
	}
	claiming, err := c.targetIndex.ByIndex(byClaimRef, namespace+"/"+name)
	if err != nil {
		return s, err
	}
	add(claiming)
	if class := s.claim.Spec.DeploymentTargetClassName; class != "" && s.claim.Spec.TargetName == "" && !isBindCompleted(s.claim) {
		sameClass, err := c.targetIndex.ByIndex(byNamespacedClass, namespace+"/"+string(class))
		if err != nil {
			return s, err
		}
		add(sameClass)
	}

	s.classes = map[appstudiov1alpha1.DeploymentTargetClassName]*classT{}
	names := []appstudiov1alpha1.DeploymentTargetClassName{s.claim.Spec.DeploymentTargetClassName}
	for _, t := range s.targets {
		names = append(names, t.Spec.DeploymentTargetClassName)
	}
	for _, n := range names {
		if _, done := s.classes[n]; done || n == "" {
			continue
		}
		class, err := framework.OrNil(c.classes.Get(string(n)))
		if err != nil {
			return s, err
		}
		if class != nil {
			s.classes[n] = class
		}
	}
	return s, nil
}

// act carries out p's writes in order, then records its Events. A write of an object builds
// on the previous write of that object (its resourceVersion), and a write after a target's
// deletion on the target as it now is: deletion changes it. A target found gone is left.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	type written struct {
		last    *targetT // the result of the last write
		gone    bool     // found gone: its other writes are left
		refetch bool     // deleted: the next write reads it first
	}
	targets := map[string]*written{}
	var lastClaim *claimT
	for _, a := range p.actions {
		if a.target != nil {
			w := targets[a.target.Name]
			if w == nil {
				w = &written{}
				targets[a.target.Name] = w
			}
			if w.gone {
				continue
			}
			if err := c.writeTarget(ctx, a, w.last, w.refetch, func(got *targetT, gone, refetch bool) {
				w.last, w.gone, w.refetch = got, gone, refetch
			}); err != nil {
				return err
			}
			continue
		}
		claims := c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(a.claim.Namespace)
		obj := a.claim.DeepCopy()
		if lastClaim != nil {
			obj.ResourceVersion = lastClaim.ResourceVersion
		}
		var err error
		switch a.verb {
		case verbUpdate:
			lastClaim, err = claims.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		case verbUpdateStatus:
			lastClaim, err = claims.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		}
		if apierrors.IsNotFound(err) {
			return nil // its delete event brings the key back
		}
		if err != nil {
			return fmt.Errorf("%s of DeploymentTargetClaim %s/%s: %w", a.verb, obj.Namespace, obj.Name, err)
		}
	}
	for _, e := range p.events {
		c.recorder.Event(s.claim, e.eventType, e.reason, e.message)
	}
	if len(p.actions) > 0 {
		klog.V(4).InfoS("synced DeploymentTargetClaim", "claim", klog.KObj(s.claim), "writes", len(p.actions))
	}
	return nil
}

// writeTarget carries out one write of a target, after last (the result of the previous
// write of it, nil when none) or, when refetch, after its deletion, on the target as the
// server now has it; done gets the outcome.
func (c *Controller) writeTarget(ctx context.Context, a action, last *targetT, refetch bool, done func(got *targetT, gone, refetch bool)) error {
	t := a.target
	targets := c.gitops.AppStudioV1alpha1().DeploymentTargets(t.Namespace)
	obj := t.DeepCopy()
	switch {
	case refetch:
		fresh, err := framework.OrNil(targets.Get(ctx, t.Name, metav1.GetOptions{}))
		if err != nil {
			return fmt.Errorf("reading DeploymentTarget %s/%s: %w", t.Namespace, t.Name, err)
		}
		if fresh == nil || fresh.UID != t.UID {
			done(nil, true, false)
			return nil
		}
		if a.verb == verbUpdate {
			fresh.Spec = obj.Spec
		} else {
			fresh.Status = obj.Status
		}
		obj = fresh
	case last != nil:
		obj.ResourceVersion = last.ResourceVersion
	}
	var got *targetT
	var err error
	switch a.verb {
	case verbUpdate:
		got, err = targets.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
	case verbUpdateStatus:
		got, err = targets.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
	case verbDelete:
		err = targets.Delete(ctx, t.Name, framework.PreconditionUID(t.UID))
	}
	if apierrors.IsNotFound(err) {
		done(nil, true, false)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s of DeploymentTarget %s/%s: %w", a.verb, t.Namespace, t.Name, err)
	}
	done(got, false, a.verb == verbDelete)
	return nil
}

// reportInternalError sets the claim's ErrorOccurred condition to the reference's generic
// message when a write failed for another reason than a stale cache; the error itself goes
// back to the queue, which retries.
func (c *Controller) reportInternalError(ctx context.Context, namespace, name string, cause error) {
	if apierrors.IsConflict(cause) || apierrors.IsNotFound(cause) {
		return
	}
	claim, err := framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(name))
	if err != nil || claim == nil || claim.DeletionTimestamp != nil {
		return
	}
	upd := claim.DeepCopy()
	setErrorOccurred(&upd.Status.Conditions, &problem{EventInternalError, msgInternalError}, metav1.NewTime(c.now()))
	if _, err := c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		klog.V(4).InfoS("could not report an internal error on the claim", "claim", klog.KObj(claim), "err", err)
		return
	}
	c.recorder.Event(claim, corev1.EventTypeWarning, EventInternalError, msgInternalError)
}
