// Package deploymenttargetreclaim is the DeploymentTarget reclaim controller: a target whose
// claim is gone, or bound to another target, is reclaimed per the reclaimPolicy of its
// DeploymentTargetClass (Retain releases it for another claim, Delete deletes it), and a
// target whose deletion is held too long by its provisioner becomes Failed (reference §3.10;
// the reclaim half of Kubernetes' PersistentVolume controller). The rules are in planTarget.
//
// The binder (deploymenttargetbinder) hands back the target of a claim deleted under its
// finalizer; this controller handles the rest: a claim that went without it, a stale claimRef,
// and the target's own deletion.
//
// What a provisioner made for a target (a namespace, its credentials) is the provisioner's to
// remove: it holds the target with a finalizer of its own while it does. This controller only
// watches the time that takes; its finalizer, dt.appstudio.redhat.com/finalizer, guards
// nothing else and goes as soon as the target is deleted.
package deploymenttargetreclaim

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

	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "deploymenttargetreclaim"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// Informer indexes, named after the controller: other controllers share the informers.
const (
	// byClaimRef: targets by the "namespace/name" of the claim they claim (shared with the
	// other controllers of claims and targets, targetindex).
	byClaimRef = targetindex.TargetsByClaimRef
	// byClass: targets by their class name.
	byClass = "deploymenttargetreclaim.appstudio/class"
)

// Controller reclaims DeploymentTargets.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder

	targets     appstudiolisters.DeploymentTargetLister
	targetIndex cache.Indexer
	claims      appstudiolisters.DeploymentTargetClaimLister
	classes     appstudiolisters.DeploymentTargetClassLister

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers.
func New(
	targets appstudioinformers.DeploymentTargetInformer,
	claims appstudioinformers.DeploymentTargetClaimInformer,
	classes appstudioinformers.DeploymentTargetClassInformer,
	gitops versioned.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:      gitops,
		recorder:    recorder,
		targets:     targets.Lister(),
		targetIndex: targets.Informer().GetIndexer(),
		claims:      claims.Lister(),
		classes:     classes.Lister(),
		now:         time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)

	if err := targetindex.Add(targets.Informer(), cache.Indexers{byClaimRef: targetindex.ClaimRefOfTarget, byClass: classOfTarget}); err != nil {
		return nil, err
	}
	// Finalizers, annotations and deletion matter as much as the spec; the controller's own
	// status writes come back as no-op syncs.
	if err := c.Watch(targets.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	if err := c.Watch(claims.Informer(), framework.OnChange(c.onClaim)); err != nil {
		return nil, err
	}
	if err := c.Watch(classes.Informer(), framework.OnChange(c.onClass)); err != nil {
		return nil, err
	}
	return c, nil
}

func classOfTarget(obj interface{}) ([]string, error) {
	t, ok := obj.(*targetT)
	if !ok || t.Spec.DeploymentTargetClassName == "" {
		return nil, nil
	}
	return []string{string(t.Spec.DeploymentTargetClassName)}, nil
}

// onClaim queues the targets that claim a claim.
func (c *Controller) onClaim(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	targets, _ := c.targetIndex.ByIndex(byClaimRef, key)
	for _, t := range targets {
		c.Enqueue(t)
	}
}

// onClass queues the targets of a class.
func (c *Controller) onClass(obj interface{}) {
	class, ok := framework.UnwrapTombstone(obj).(*classT)
	if !ok {
		return
	}
	targets, _ := c.targetIndex.ByIndex(byClass, class.Name)
	for _, t := range targets {
		c.Enqueue(t)
	}
}

// sync reclaims one target key.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(ctx, namespace, name)
	if err != nil || s.target == nil {
		return err // a target gone leaves nothing to reclaim
	}
	p := planTarget(s, metav1.NewTime(c.now()))
	if err := c.act(ctx, s, p); err != nil {
		c.reportInternalError(ctx, namespace, name, err)
		return err
	}
	if p.requeueAfter > 0 {
		// The deletion timeout: no event marks it.
		c.Queue.AddAfter(key, p.requeueAfter)
	}
	return nil
}

// observe gathers the state of one target from the informers' caches; the claim from the
// server when the cache has none that claims the target. Reclaiming a target whose claim is
// gone deletes or releases it, so "gone" must not be a cache that lags behind the binder (which
// may run in another agent): a claim made again under the name and bound since would lose its
// target.
func (c *Controller) observe(ctx context.Context, namespace, name string) (state, error) {
	var s state
	var err error
	if s.target, err = framework.OrNil(c.targets.DeploymentTargets(namespace).Get(name)); err != nil || s.target == nil {
		return s, err
	}
	if class := s.target.Spec.DeploymentTargetClassName; class != "" {
		if s.class, err = framework.OrNil(c.classes.Get(string(class))); err != nil {
			return s, err
		}
	}
	if ref := s.target.Spec.ClaimRef; ref != "" {
		if s.claim, err = framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(ref)); err != nil {
			return s, err
		}
		if s.claim == nil || !targetindex.Claims(s.target, s.claim) {
			if s.claim, err = framework.OrNil(c.gitops.AppStudioV1alpha1().DeploymentTargetClaims(namespace).Get(ctx, ref, metav1.GetOptions{})); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// act carries out p's writes in order, each after the previous (its resourceVersion), then
// records its Events. A target found gone is left.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	targets := c.gitops.AppStudioV1alpha1().DeploymentTargets(s.target.Namespace)
	var last *targetT
	for _, a := range p.actions {
		obj := a.target.DeepCopy()
		if last != nil {
			obj.ResourceVersion = last.ResourceVersion
		}
		var err error
		switch a.verb {
		case verbUpdate:
			last, err = targets.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		case verbUpdateStatus:
			last, err = targets.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
		case verbDelete:
			// Of the target as decided on: one the binder has bound again since is not deleted.
			opts := framework.PreconditionUID(obj.UID)
			opts.Preconditions.ResourceVersion = &obj.ResourceVersion
			err = targets.Delete(ctx, obj.Name, opts)
		}
		if apierrors.IsNotFound(err) {
			return nil // its delete event brings the key back
		}
		if err != nil {
			return fmt.Errorf("%s of DeploymentTarget %s/%s: %w", a.verb, obj.Namespace, obj.Name, err)
		}
	}
	for _, e := range p.events {
		c.recorder.Event(s.target, e.eventType, e.reason, e.message)
	}
	if len(p.actions) > 0 {
		klog.V(4).InfoS("reconciled DeploymentTarget", "target", klog.KObj(s.target), "writes", len(p.actions))
	}
	return nil
}

// reportInternalError sets the target's ErrorOccurred condition to the reference's generic
// message when a write failed for another reason than a stale cache; the error itself goes
// back to the queue, which retries.
func (c *Controller) reportInternalError(ctx context.Context, namespace, name string, cause error) {
	if apierrors.IsConflict(cause) || apierrors.IsNotFound(cause) {
		return
	}
	t, err := framework.OrNil(c.targets.DeploymentTargets(namespace).Get(name))
	if err != nil || t == nil {
		return
	}
	upd := t.DeepCopy()
	setErrorOccurred(&upd.Status.Conditions, msgInternalError, metav1.NewTime(c.now()))
	if _, err := c.gitops.AppStudioV1alpha1().DeploymentTargets(namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		klog.V(4).InfoS("could not report an internal error on the target", "target", klog.KObj(t), "err", err)
		return
	}
	c.recorder.Event(t, corev1.EventTypeWarning, EventInternalError, msgInternalError)
}
