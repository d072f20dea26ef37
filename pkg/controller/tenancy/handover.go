package tenancy

import (
	"context"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions/application/v1alpha1"
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

// releaseRecheck is how soon a release looks again at Applications still being removed, in
// case the event of the last one's deletion was missed.
const releaseRecheck = 2 * time.Second

// step is what the hand-over does next for one placement, as this instance sees it.
type step int

const (
	// stay: another instance acts, or nothing is to be done.
	stay step = iota
	// take: the tenant is placed here and nobody holds it.
	take
	// release: the tenant is held here but placed elsewhere; once this instance's Argo CD
	// holds none of its Applications, it lets it go.
	release
)

// decide is the hand-over's next step for p on instance.
func decide(p *managedv1alpha1.TenantPlacement, instance string) step {
	switch {
	case p.Status.Instance == "" && p.Spec.Instance == instance:
		return take
	case p.Status.Instance == instance && p.Spec.Instance != instance:
		return release
	default:
		return stay
	}
}

// Handover takes the tenants placed on its instance that nobody holds, and releases those
// placed elsewhere once the Argo CD controllers have removed their Applications (which they do
// as soon as Tenants.Holds turns false, without deleting what the Applications deployed). The
// server refuses to move status.instance from one instance straight to another, so the new
// instance cannot take a tenant before the old one has let it go: no Application is ever
// synced by two instances.
type Handover struct {
	*framework.Controller
	instance      string
	argoNamespace string
	placements    listers.TenantPlacementLister
	gitops        versioned.Interface
	argo          argoclient.Interface
	recorder      record.EventRecorder
	now           func() time.Time
}

// NewHandover wires the hand-over of instance's tenants: every placement event queues its
// placement, and the deletion of one of the instance's Applications queues its tenant's.
func NewHandover(instance, argoNamespace string, placements managedinformers.TenantPlacementInformer,
	applications argoinformers.ApplicationInformer, gitops versioned.Interface, argo argoclient.Interface,
	recorder record.EventRecorder) (*Handover, error) {
	h := &Handover{
		instance:      instance,
		argoNamespace: argoNamespace,
		placements:    placements.Lister(),
		gitops:        gitops,
		argo:          argo,
		recorder:      recorder,
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
		return h.writeHolder(ctx, p, h.instance, "", "Taken", "instance "+h.instance+" holds the tenant")
	case release:
		left, err := h.applicationsLeft(ctx, name)
		if err != nil {
			return err
		}
		if left {
			h.Queue.AddAfter(name, releaseRecheck)
			return nil
		}
		msg := fmt.Sprintf("released by instance %s; waiting for instance %s to take it", h.instance, p.Spec.Instance)
		return h.writeHolder(ctx, p, "", msg, "Released", msg)
	}
	return nil
}

// applicationsLeft tells whether the instance's Argo CD still has an Application of the
// tenant. It asks the server, not the cache: an Application the cache has not seen yet would
// otherwise be synced by two instances at once.
func (h *Handover) applicationsLeft(ctx context.Context, namespace string) (bool, error) {
	selector := labels.SelectorFromSet(labels.Set{argocd.LabelDeploymentNamespace: namespace}).String()
	apps, err := h.argo.ArgoprojV1alpha1().Applications(h.argoNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("listing the Applications of tenant %s: %w", namespace, err)
	}
	return len(apps.Items) > 0, nil
}

// writeHolder writes status.instance, with the resourceVersion read: a placement moved again
// meanwhile conflicts, and is decided again.
func (h *Handover) writeHolder(ctx context.Context, p *managedv1alpha1.TenantPlacement, holder, message, reason, event string) error {
	upd := p.DeepCopy()
	now := metav1.NewTime(h.now())
	upd.Status.Instance, upd.Status.Message, upd.Status.LastTransitionTime = holder, message, &now
	if _, err := h.gitops.ManagedGitopsV1alpha1().TenantPlacements().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing the holder of tenant %s: %w", p.Name, err)
	}
	klog.InfoS("tenant handed over", "tenant", p.Name, "instance", h.instance, "reason", reason)
	h.recorder.Event(upd, corev1.EventTypeNormal, reason, event)
	return nil
}
