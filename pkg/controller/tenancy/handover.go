package tenancy

import (
	"context"
	"fmt"
	"slices"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions/application/v1alpha1"
	argolisters "github.com/argoproj/argo-cd/v2/pkg/client/listers/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// HandoverName is the hand-over controller's name in logs and metrics.
const HandoverName = "handover"

// releaseRecheck is Handover.recheck's default.
const releaseRecheck = 2 * time.Second

// step is what the hand-over does next for one placement, as this instance sees it.
type step int

const (
	// stay: another instance acts, or nothing is to be done.
	stay step = iota
	// take: the tenant is placed here and nobody holds it.
	take
	// release: the tenant is held here but placed elsewhere, or its placement is being
	// deleted; once this instance's Argo CD holds none of its Applications, it lets it go.
	release
	// guard: the tenant is held here without HeldFinalizer (taken by an agent from before it).
	guard
	// unblock: a deleted placement that nobody holds keeps HeldFinalizer (its releaser stopped
	// between its two writes); anyone may remove it.
	unblock
)

// decide is the hand-over's next step for p on instance.
func decide(p *managedv1alpha1.TenantPlacement, instance string) step {
	held := p.Status.Instance == instance
	switch {
	case p.DeletionTimestamp != nil && held:
		return release
	case p.DeletionTimestamp != nil:
		if p.Status.Instance == "" && slices.Contains(p.Finalizers, HeldFinalizer) {
			return unblock
		}
		return stay
	case p.Status.Instance == "" && p.Spec.Instance == instance:
		return take
	case held && p.Spec.Instance != instance && p.Spec.Instance != "":
		return release
	case held && !slices.Contains(p.Finalizers, HeldFinalizer):
		return guard
	default:
		return stay
	}
}

// Handover takes the tenants placed on its instance that nobody holds, and releases those
// placed elsewhere (or whose placement is deleted) once the Argo CD controllers have removed
// their Applications, which they do as soon as Tenants.Holds turns false, without deleting
// what the Applications deployed. The server refuses to move status.instance from one
// instance straight to another, and HeldFinalizer keeps a deleted placement until its holder
// has released it, so the new instance cannot take a tenant before the old one has let it go:
// no Application is synced by two instances.
type Handover struct {
	*framework.Controller
	tenants       *Tenants
	instance      string
	argoNamespace string
	placements    listers.TenantPlacementLister
	applications  argolisters.ApplicationLister
	gitops        versioned.Interface
	argo          argoclient.Interface
	recorder      record.EventRecorder
	// recheck is how soon a release looks again at Applications still being removed, in case
	// the event of the last one's deletion was missed.
	recheck time.Duration
	now     func() time.Time
}

// NewHandover wires the hand-over of the tenants of tenants' instance: every placement event
// queues its placement, and the deletion of one of the instance's Applications queues its
// tenant's.
func NewHandover(tenants *Tenants, argoNamespace string, placements managedinformers.TenantPlacementInformer,
	applications argoinformers.ApplicationInformer, gitops versioned.Interface, argo argoclient.Interface,
	recorder record.EventRecorder) (*Handover, error) {
	h := &Handover{
		tenants:       tenants,
		instance:      tenants.instance,
		argoNamespace: argoNamespace,
		placements:    placements.Lister(),
		applications:  applications.Lister(),
		gitops:        gitops,
		argo:          argo,
		recorder:      recorder,
		recheck:       releaseRecheck,
		now:           time.Now,
	}
	h.Controller = framework.NewController(HandoverName, h.sync)
	if err := h.Watch(placements.Informer(), h.Handler()); err != nil {
		return nil, err
	}
	if err := h.Watch(applications.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj interface{}) {
		if app, ok := framework.UnwrapTombstone(obj).(*argov1alpha1.Application); ok && app.Labels[argocd.LabelDeploymentNamespace] != "" {
			h.Add(app.Labels[argocd.LabelDeploymentNamespace])
		}
	}}); err != nil {
		return nil, err
	}
	return h, nil
}

// Run hands tenants over with workers workers until ctx is done.
func (h *Handover) Run(ctx context.Context, workers int) { h.Controller.Run(ctx, workers) }

func (h *Handover) sync(ctx context.Context, name string) error {
	p, err := h.placements.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	switch decide(p, h.instance) {
	case take:
		// The finalizer first: a placement deleted once taken must wait for the release.
		p, err = h.setFinalizer(ctx, p, true)
		if err != nil || p == nil {
			return err
		}
		_, err = h.writeStatus(ctx, p, h.instance, "", "Taken", "instance "+h.instance+" holds the tenant")
		return err
	case guard:
		_, err = h.setFinalizer(ctx, p, true)
		return err
	case unblock:
		_, err = h.setFinalizer(ctx, p, false)
		return err
	case release:
		return h.release(ctx, p)
	}
	return nil
}

// release lets the tenant of p go once none of its Applications is left on this instance.
// It holds the tenant's lock throughout, so that no reconcile that saw the tenant held writes
// an Application between the check and the release.
func (h *Handover) release(ctx context.Context, p *managedv1alpha1.TenantPlacement) error {
	mu := h.tenants.lock(p.Name)
	mu.Lock()
	defer mu.Unlock()
	left, err := h.applicationsLeft(ctx, p.Name)
	if err != nil {
		return err
	}
	if left > 0 {
		h.Queue.AddAfter(p.Name, h.recheck)
		msg := fmt.Sprintf("instance %s is removing the tenant's %d Application(s) before it lets it go", h.instance, left)
		if p.Status.Message == msg {
			return nil
		}
		_, err := h.writeStatus(ctx, p, h.instance, msg, "", "")
		return err
	}
	msg := fmt.Sprintf("released by instance %s; waiting for instance %s to take it", h.instance, p.Spec.Instance)
	if p.DeletionTimestamp != nil || p.Spec.Instance == "" {
		msg = "released by instance " + h.instance
	}
	written, err := h.writeStatus(ctx, p, "", msg, "Released", msg)
	if err != nil || written == nil {
		return err
	}
	// The finalizer goes with the hold; the next holder puts it back.
	_, err = h.setFinalizer(ctx, written, false)
	return err
}

// applicationsLeft counts the Applications of the tenant on this instance's Argo CD: from the
// cache while it shows some, else from the server, which alone can say there are none (an
// Application written moments ago may not be in the cache yet, and would otherwise be synced
// by two instances at once).
func (h *Handover) applicationsLeft(ctx context.Context, namespace string) (int, error) {
	selector := labels.SelectorFromSet(labels.Set{argocd.LabelDeploymentNamespace: namespace})
	if cached, err := h.applications.Applications(h.argoNamespace).List(selector); err == nil && len(cached) > 0 {
		return len(cached), nil
	}
	apps, err := h.argo.ArgoprojV1alpha1().Applications(h.argoNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return 0, fmt.Errorf("listing the Applications of tenant %s: %w", namespace, err)
	}
	return len(apps.Items), nil
}

// setFinalizer adds or removes HeldFinalizer, with the resourceVersion read; it returns the
// placement written (nil when it is gone).
func (h *Handover) setFinalizer(ctx context.Context, p *managedv1alpha1.TenantPlacement, want bool) (*managedv1alpha1.TenantPlacement, error) {
	if slices.Contains(p.Finalizers, HeldFinalizer) == want {
		return p, nil
	}
	upd := p.DeepCopy()
	if want {
		upd.Finalizers = append(upd.Finalizers, HeldFinalizer)
	} else {
		upd.Finalizers = slices.DeleteFunc(upd.Finalizers, func(f string) bool { return f == HeldFinalizer })
	}
	written, err := h.gitops.ManagedGitopsV1alpha1().TenantPlacements().Update(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("setting the finalizer of tenant %s: %w", p.Name, err)
	}
	return written, nil
}

// writeStatus writes status.instance and the message, with the resourceVersion read: a
// placement moved again meanwhile conflicts, and is decided again. A reason records an Event.
// It returns the placement written (nil when it is gone).
func (h *Handover) writeStatus(ctx context.Context, p *managedv1alpha1.TenantPlacement, holder, message, reason, event string) (*managedv1alpha1.TenantPlacement, error) {
	upd := p.DeepCopy()
	upd.Status.Message = message
	if upd.Status.Instance != holder {
		now := metav1.NewTime(h.now())
		upd.Status.Instance, upd.Status.LastTransitionTime = holder, &now
	}
	written, err := h.gitops.ManagedGitopsV1alpha1().TenantPlacements().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("writing the holder of tenant %s: %w", p.Name, err)
	}
	if reason != "" {
		klog.InfoS("tenant handed over", "tenant", p.Name, "instance", h.instance, "reason", reason)
		h.recorder.Event(written, corev1.EventTypeNormal, reason, event)
	}
	return written, nil
}
