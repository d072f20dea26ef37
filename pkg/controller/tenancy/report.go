package tenancy

import (
	"context"
	"fmt"
	"time"

	argolisters "github.com/argoproj/argo-cd/v2/pkg/client/listers/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// HeartbeatInterval is how often the serving agent reports on its instance. The placement
// controller stops placing tenants on an instance not heard of for a few intervals.
const HeartbeatInterval = 10 * time.Second

// Reasons of the Ready condition.
const (
	ReasonAgentReporting = "AgentReporting"
)

// Reporter writes its instance's status while its agent serves it: Ready, the serving agent,
// a heartbeat, and the load (tenants held, Applications kept).
type Reporter struct {
	instance, identity string
	argoNamespace      string
	gitops             versioned.Interface
	placements         listers.TenantPlacementLister
	applications       argolisters.ApplicationLister
	interval           time.Duration
	now                func() time.Time
}

// NewReporter reports on instance as identity, the agent's name in the Leases.
func NewReporter(instance, identity, argoNamespace string, gitops versioned.Interface, placements listers.TenantPlacementLister,
	applications argolisters.ApplicationLister) *Reporter {
	return &Reporter{instance: instance, identity: identity, argoNamespace: argoNamespace, gitops: gitops,
		placements: placements, applications: applications, interval: HeartbeatInterval, now: time.Now}
}

// Run reports every interval until ctx is done.
func (r *Reporter) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := r.report(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "reporting on the Argo CD instance", "instance", r.instance)
		}
	}, r.interval)
}

func (r *Reporter) report(ctx context.Context) error {
	inst, err := r.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, r.instance, metav1.GetOptions{})
	if err != nil {
		return err
	}
	// Every report is a write: the heartbeat is what tells the placement controller that
	// the instance is served.
	st, err := r.status(inst.Status)
	if err != nil {
		return err
	}
	upd := inst.DeepCopy()
	upd.Status = st
	_, err = r.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	return err
}

// status is the report: the last one with a new heartbeat and load.
func (r *Reporter) status(last managedv1alpha1.ArgoCDInstanceStatus) (managedv1alpha1.ArgoCDInstanceStatus, error) {
	st := *last.DeepCopy()
	placements, err := r.placements.List(labels.Everything())
	if err != nil {
		return st, err
	}
	apps, err := r.applications.Applications(r.argoNamespace).List(labels.Everything())
	if err != nil {
		return st, err
	}
	var tenants, kept int32
	for _, p := range placements {
		if p.Status.Instance == r.instance {
			tenants++
		}
	}
	for _, app := range apps {
		if app.Labels[argocd.LabelDeploymentNamespace] != "" {
			kept++
		}
	}
	now := metav1.NewTime(r.now())
	st.Leader, st.LastHeartbeatTime, st.Tenants, st.Applications = r.identity, &now, tenants, kept
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: managedv1alpha1.ArgoCDInstanceConditionReady,
		Status: metav1.ConditionTrue, Reason: ReasonAgentReporting, Message: "agent " + r.identity + " serves the instance"})
	return st, nil
}

// CheckInstance makes sure the agent is started for an instance that exists and runs in the
// Argo CD namespace the agent drives: an agent serving the wrong instance would remove the
// Argo CD objects of tenants that are not its own. An instance deleted while it still holds
// tenants is let through, to release them (the placement controller has moved them away).
func CheckInstance(ctx context.Context, gitops versioned.Interface, instance, argoNamespace string) error {
	inst, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, instance, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		held, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("status.instance", instance).String(), Limit: 1})
		if err == nil && len(held.Items) > 0 {
			klog.InfoS("the instance is gone but holds tenants: releasing them", "instance", instance)
			return nil
		}
		return fmt.Errorf("--instance %s: no ArgoCDInstance %s (create it: kubectl create -f with kind ArgoCDInstance, spec.namespace %s)",
			instance, instance, argoNamespace)
	}
	if err != nil {
		return fmt.Errorf("--instance %s: %w", instance, err)
	}
	if inst.Spec.Namespace != argoNamespace {
		return fmt.Errorf("--instance %s runs Argo CD in namespace %s, but the agent drives namespace %s (--argocd-namespace)",
			instance, inst.Spec.Namespace, argoNamespace)
	}
	return nil
}
