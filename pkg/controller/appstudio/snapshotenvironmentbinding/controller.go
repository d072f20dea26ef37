// Package snapshotenvironmentbinding is the SnapshotEnvironmentBinding controller: each
// appstudio.redhat.com SnapshotEnvironmentBinding gets one GitOpsDeployment per component that
// application-service reports in the binding's status.components, deployed to the binding's
// Environment, and the binding's status reports how they are deployed (reference §3.6).
//
// Deletion needs no finalizer on the binding, as for the Environment controller: each
// GitOpsDeployment carries its binding's name in its controller ownerReference, and the
// informer delivers every one of them as an add when the controller starts, so one whose
// binding is gone is deleted then, whether the binding went while the controller ran or
// while it did not. The aggregated API has no garbage collector of its own; where a
// kube-controller-manager collects garbage through it, the two deletions agree.
package snapshotenvironmentbinding

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/environment"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/appstudio/v1alpha1"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
	managedlisters "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "snapshotenvironmentbindings"

// fieldManager is the field manager of the controller's writes.
const fieldManager = "gitops-service-agent"

// Event reasons, besides the problems' (the Reconciled condition's reasons), which are Warnings.
const (
	EventGitOpsDeploymentCreated = "GitOpsDeploymentCreated"
	EventGitOpsDeploymentUpdated = "GitOpsDeploymentUpdated"
	EventGitOpsDeploymentDeleted = "GitOpsDeploymentDeleted"
	// The Warnings of failed writes, as Kubernetes' controllers name them.
	EventFailedCreate = "FailedCreate"
	EventFailedUpdate = "FailedUpdate"
	EventFailedDelete = "FailedDelete"
	// EventBindingDeleted: the orphan rule deleted the binding.
	EventBindingDeleted = "BindingDeleted"
)

// Informer indexes, named after the controller: other controllers share the informers.
const (
	// byEnvironment and byApplication: bindings by the "namespace/name" of what they name.
	byEnvironment = "snapshotenvironmentbinding.appstudio/environment"
	byApplication = "snapshotenvironmentbinding.appstudio/application"
	// byOwner: GitOpsDeployments by the binding that controls them.
	byOwner = "snapshotenvironmentbinding.appstudio/owner"
)

// Controller reconciles SnapshotEnvironmentBindings into GitOpsDeployments.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder

	bindings     appstudiolisters.SnapshotEnvironmentBindingLister
	bindingIndex cache.Indexer
	applications appstudiolisters.ApplicationLister
	environments appstudiolisters.EnvironmentLister
	claims       appstudiolisters.DeploymentTargetClaimLister
	targets      appstudiolisters.DeploymentTargetLister
	// follower follows a claim or a target to the Environments that use it.
	follower        *targetindex.Follower
	deployments     managedlisters.GitOpsDeploymentLister
	deploymentIndex cache.Indexer

	now func() time.Time
}

// New wires the controller's handlers and indexes into the informers.
func New(
	bindings appstudioinformers.SnapshotEnvironmentBindingInformer,
	applications appstudioinformers.ApplicationInformer,
	environments appstudioinformers.EnvironmentInformer,
	claims appstudioinformers.DeploymentTargetClaimInformer,
	targets appstudioinformers.DeploymentTargetInformer,
	deployments managedinformers.GitOpsDeploymentInformer,
	gitops versioned.Interface,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		gitops:          gitops,
		recorder:        recorder,
		bindings:        bindings.Lister(),
		bindingIndex:    bindings.Informer().GetIndexer(),
		applications:    applications.Lister(),
		environments:    environments.Lister(),
		claims:          claims.Lister(),
		targets:         targets.Lister(),
		deployments:     deployments.Lister(),
		deploymentIndex: deployments.Informer().GetIndexer(),
		now:             time.Now,
	}
	c.Controller = framework.NewController(Name, c.sync)
	var err error
	if c.follower, err = targetindex.NewFollower(environments.Informer(), claims.Informer(), targets.Informer()); err != nil {
		return nil, err
	}
	for _, ix := range []struct {
		informer cache.SharedIndexInformer
		indexers cache.Indexers
	}{
		{bindings.Informer(), cache.Indexers{byEnvironment: environmentOfBinding, byApplication: applicationOfBinding}},
		{deployments.Informer(), cache.Indexers{byOwner: ownerOfDeployment}},
	} {
		if err := ix.informer.AddIndexers(ix.indexers); err != nil {
			return nil, err
		}
	}

	// Every change of a binding may matter: application-service writes its status.components
	// and gitopsRepoConditions.
	if err := c.Watch(bindings.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	// Only an Application's existence matters (the orphan rule).
	if err := c.Watch(applications.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onApplication,
		DeleteFunc: c.onApplication,
	}); err != nil {
		return nil, err
	}
	if err := c.Watch(environments.Informer(), framework.OnGenerationChange(c.onEnvironment)); err != nil {
		return nil, err
	}
	// A claim's binding shows in its status too.
	if err := c.Watch(claims.Informer(), framework.OnChange(c.onClaim)); err != nil {
		return nil, err
	}
	if err := c.Watch(targets.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onTarget,
		UpdateFunc: func(old, obj interface{}) {
			if old.(*appstudiov1alpha1.DeploymentTarget).Generation != obj.(*appstudiov1alpha1.DeploymentTarget).Generation {
				c.onTarget(old) // a claimRef it no longer has
				c.onTarget(obj)
			}
		},
		DeleteFunc: c.onTarget,
	}); err != nil {
		return nil, err
	}
	// The GitOpsDeployment controller rewrites their status often; only their spec, labels,
	// owners, and the sync, health and ResourcesReady reason that the binding's status copies
	// matter here.
	if err := c.Watch(deployments.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: c.onDeployment,
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*managedv1alpha1.GitOpsDeployment), obj.(*managedv1alpha1.GitOpsDeployment)
			if o.Generation != n.Generation || o.Status.Sync != n.Status.Sync || o.Status.Health.Status != n.Status.Health.Status ||
				o.Status.ResourcesNotReady() != n.Status.ResourcesNotReady() ||
				!apiequality.Semantic.DeepEqual(o.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) {
				c.onDeployment(old) // an owner it no longer has
				c.onDeployment(obj)
			}
		},
		DeleteFunc: c.onDeployment,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func environmentOfBinding(obj interface{}) ([]string, error) {
	b, ok := obj.(*appstudiov1alpha1.SnapshotEnvironmentBinding)
	if !ok || b.Spec.Environment == "" {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.Environment}, nil
}

func applicationOfBinding(obj interface{}) ([]string, error) {
	b, ok := obj.(*appstudiov1alpha1.SnapshotEnvironmentBinding)
	if !ok || b.Spec.Application == "" {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.Application}, nil
}

func ownerOfDeployment(obj interface{}) ([]string, error) {
	d, ok := obj.(*managedv1alpha1.GitOpsDeployment)
	if !ok {
		return nil, nil
	}
	if owner := metav1.GetControllerOf(d); owner != nil && isBindingKind(*owner) {
		return []string{d.Namespace + "/" + owner.Name}, nil
	}
	return nil, nil
}

// enqueueBindings queues the bindings that index holds under key.
func (c *Controller) enqueueBindings(index, key string) {
	bindings, _ := c.bindingIndex.ByIndex(index, key)
	for _, b := range bindings {
		c.Enqueue(b)
	}
}

func (c *Controller) onApplication(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.enqueueBindings(byApplication, key)
	}
}

func (c *Controller) onEnvironment(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.enqueueBindings(byEnvironment, key)
	}
}

func (c *Controller) onClaim(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		for _, env := range c.follower.EnvironmentsOfClaim(key) {
			c.onEnvironment(env)
		}
	}
}

// onTarget queues the bindings through the claims that the target claims or that name it.
func (c *Controller) onTarget(obj interface{}) {
	for _, env := range c.follower.EnvironmentsOfTarget(obj) {
		c.onEnvironment(env)
	}
}

// onDeployment queues the binding that controls a GitOpsDeployment.
func (c *Controller) onDeployment(obj interface{}) {
	d, ok := framework.UnwrapTombstone(obj).(*managedv1alpha1.GitOpsDeployment)
	if !ok {
		return
	}
	keys, _ := ownerOfDeployment(d)
	for _, k := range keys {
		c.Add(k)
	}
}

// sync makes the GitOpsDeployments of one binding key match the binding, and reports in the
// binding's status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.observe(key, namespace, name)
	if err != nil {
		return err
	}
	p := planBinding(s, metav1.NewTime(c.now()))
	if err := c.act(ctx, s, p); err != nil {
		return err
	}
	if p.requeueAfter > 0 {
		c.Queue.AddAfter(key, p.requeueAfter)
	}
	return nil
}

// observe gathers the state of one binding from the informers' caches.
func (c *Controller) observe(key, namespace, name string) (state, error) {
	s := state{namespace: namespace, name: name, deployments: map[string]*managedv1alpha1.GitOpsDeployment{}}
	owned, err := c.deploymentIndex.ByIndex(byOwner, key)
	if err != nil {
		return s, err
	}
	for _, obj := range owned {
		d := obj.(*managedv1alpha1.GitOpsDeployment)
		s.deployments[d.Name] = d
	}
	if s.binding, err = framework.OrNil(c.bindings.SnapshotEnvironmentBindings(namespace).Get(name)); err != nil || s.binding == nil {
		return s, err
	}
	b := s.binding
	for _, comp := range b.Status.Components {
		dname := DeploymentName(b.Name, b.Spec.Application, b.Spec.Environment, comp.Name)
		if _, ok := s.deployments[dname]; ok {
			continue
		}
		d, err := framework.OrNil(c.deployments.GitOpsDeployments(namespace).Get(dname))
		if err != nil {
			return s, err
		}
		if d != nil {
			s.deployments[dname] = d
		}
	}
	if s.application, err = framework.OrNil(c.applications.Applications(namespace).Get(b.Spec.Application)); err != nil {
		return s, err
	}
	if s.environment, err = framework.OrNil(c.environments.Environments(namespace).Get(b.Spec.Environment)); err != nil || s.environment == nil {
		return s, err
	}
	claimName := s.environment.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	if claimName == "" {
		return s, nil
	}
	if s.claim, err = framework.OrNil(c.claims.DeploymentTargetClaims(namespace).Get(claimName)); err != nil || s.claim == nil {
		return s, err
	}
	candidates, err := c.targetCandidates(s.claim)
	if err != nil {
		return s, err
	}
	s.target, _ = environment.BoundTarget(s.claim, candidates)
	return s, nil
}

// targetCandidates are the DeploymentTargets of claim's namespace that it names or that claim
// it.
func (c *Controller) targetCandidates(claim *appstudiov1alpha1.DeploymentTargetClaim) ([]*appstudiov1alpha1.DeploymentTarget, error) {
	var out []*appstudiov1alpha1.DeploymentTarget
	if claim.Spec.TargetName != "" {
		t, err := framework.OrNil(c.targets.DeploymentTargets(claim.Namespace).Get(claim.Spec.TargetName))
		if err != nil || t == nil {
			return nil, err
		}
		return append(out, t), nil
	}
	return c.follower.TargetsClaimedBy(claim)
}

// act carries out p for the binding of s, recording an Event on it for each write.
func (c *Controller) act(ctx context.Context, s state, p plan) error {
	ns := s.namespace
	if p.deleteBinding {
		return c.deleteOrphan(ctx, s.binding)
	}
	if s.binding == nil && len(p.delete) > 0 {
		// Deleting is for good: a binding missing from a cache that lags behind the
		// GitOpsDeployments' must be gone from the API too. Its add event brings the key back.
		b, err := framework.OrNil(c.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, s.name, metav1.GetOptions{}))
		if err != nil || b != nil {
			return err
		}
	}

	deployments := c.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
	var errs []error
	for _, d := range p.delete {
		err := deployments.Delete(ctx, d.Name, framework.PreconditionUID(d.UID))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, c.failed(s.binding, EventFailedDelete, "deleting", ns, d.Name, err))
			continue
		}
		klog.V(2).InfoS("deleted a GitOpsDeployment of a binding", "binding", klog.KRef(ns, s.name), "gitopsDeployment", d.Name)
		c.event(s.binding, corev1.EventTypeNormal, EventGitOpsDeploymentDeleted, "Deleted GitOpsDeployment %s", d.Name)
	}
	for _, d := range p.create {
		if _, err := deployments.Create(ctx, d, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			errs = append(errs, c.failed(s.binding, EventFailedCreate, "creating", ns, d.Name, err))
			continue
		}
		c.event(s.binding, corev1.EventTypeNormal, EventGitOpsDeploymentCreated, "Created GitOpsDeployment %s for component %s",
			d.Name, d.Labels[appstudiov1alpha1.ComponentLabel])
	}
	for _, d := range p.update {
		if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
			errs = append(errs, c.failed(s.binding, EventFailedUpdate, "updating", ns, d.Name, err))
			continue
		}
		c.event(s.binding, corev1.EventTypeNormal, EventGitOpsDeploymentUpdated, "Updated GitOpsDeployment %s for component %s",
			d.Name, d.Labels[appstudiov1alpha1.ComponentLabel])
	}
	if len(errs) > 0 {
		// The status would report GitOpsDeployments that are not as it says.
		return utilerrors.NewAggregate(errs)
	}

	if p.status != nil {
		upd := s.binding.DeepCopy()
		upd.Status = *p.status
		_, err := c.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
		if apierrors.IsNotFound(err) {
			return nil // its delete event brings the key back
		}
		if err != nil {
			return fmt.Errorf("updating the status of SnapshotEnvironmentBinding %s/%s: %w", ns, s.name, err)
		}
		if p.problem != nil {
			c.event(s.binding, corev1.EventTypeWarning, p.problem.reason, "%s", p.problem.message)
		}
	}
	return nil
}

// deleteOrphan deletes b, whose Application is missing from the cache, once the API confirms
// that the Application is gone: a binding is not deleted for a cache that lags.
func (c *Controller) deleteOrphan(ctx context.Context, b *appstudiov1alpha1.SnapshotEnvironmentBinding) error {
	app, err := framework.OrNil(c.gitops.AppStudioV1alpha1().Applications(b.Namespace).Get(ctx, b.Spec.Application, metav1.GetOptions{}))
	if err != nil || app != nil {
		return err // the Application's add event brings the binding back
	}
	err = c.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(b.Namespace).Delete(ctx, b.Name, framework.PreconditionUID(b.UID))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting SnapshotEnvironmentBinding %s/%s: %w", b.Namespace, b.Name, err)
	}
	klog.V(2).InfoS("deleted a binding whose Application does not exist", "binding", klog.KObj(b), "application", b.Spec.Application)
	c.event(b, corev1.EventTypeNormal, EventBindingDeleted, "Deleted: Application %s does not exist", b.Spec.Application)
	return nil
}

// failed is the error of a failed write of GitOpsDeployment name, recorded as a Warning on b
// unless it only means that the cache lags behind the API.
func (c *Controller) failed(b *appstudiov1alpha1.SnapshotEnvironmentBinding, reason, verb, ns, name string, err error) error {
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) {
		c.event(b, corev1.EventTypeWarning, reason, "Error %s GitOpsDeployment %s: %v", verb, name, err)
	}
	return fmt.Errorf("%s GitOpsDeployment %s/%s: %w", verb, ns, name, err)
}

// event records an Event on b; none once b is gone.
func (c *Controller) event(b *appstudiov1alpha1.SnapshotEnvironmentBinding, eventType, reason, format string, args ...interface{}) {
	if b != nil {
		c.recorder.Eventf(b, eventType, reason, format, args...)
	}
}
