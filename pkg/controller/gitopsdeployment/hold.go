package gitopsdeployment

import (
	"context"
	"fmt"
	"strconv"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
)

// A GitOpsDeploymentHold keeps the GitOpsDeployment of the same name at its revision (a
// rollback) until it is deleted. The hold overrides the deployment's targetRevision in the
// Application, not in the deployment's spec: the spec stays the tenant's (or the promotion
// controller's, for a binding's deployment), so a new commit under automated sync, or a
// promotion rewriting the spec, changes nothing until the hold is released.

// watchHolds queues the deployment of the same name on every event of a hold.
func (c *Controller) watchHolds(holds managedinformers.GitOpsDeploymentHoldInformer) error {
	c.holds = holds.Lister()
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Add(key)
		}
	}
	return c.Watch(holds.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
}

// hold returns the hold in effect for depl: nil when there is none, or it is being deleted.
func (c *Controller) hold(namespace, name string) (*managedv1alpha1.GitOpsDeploymentHold, error) {
	if c.holds == nil {
		return nil, nil
	}
	h, err := c.holds.GitOpsDeploymentHolds(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if h.DeletionTimestamp != nil {
		return nil, nil
	}
	return h, nil
}

// targetRevision is the revision the Application deploys: the hold's while there is one,
// else the deployment's own.
func targetRevision(depl *managedv1alpha1.GitOpsDeployment, hold *managedv1alpha1.GitOpsDeploymentHold) string {
	if hold != nil && hold.Spec.Revision != "" {
		return hold.Spec.Revision
	}
	return depl.Spec.Source.TargetRevision
}

// heldMessage tells who held the deployment at which revision, when and why. The user is
// quoted (Go syntax): the DeploymentRecord controller reads it back from the condition, to name
// who rolled back in the record of the sync (pkg/controller/deploymentrecord, heldBy).
func heldMessage(h *managedv1alpha1.GitOpsDeploymentHold) string {
	msg := "Held at revision " + h.Spec.Revision
	if h.Spec.DeploymentRecord != "" {
		msg += " (DeploymentRecord " + h.Spec.DeploymentRecord + ")"
	}
	who := "an unknown user"
	if h.Spec.HeldBy != "" {
		who = strconv.Quote(h.Spec.HeldBy)
	}
	msg += " by " + who
	if !h.CreationTimestamp.IsZero() {
		msg += " since " + h.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	if h.Spec.Reason != "" {
		msg += ": " + h.Spec.Reason
	}
	return msg + "; delete GitOpsDeploymentHold " + h.Name + " to release it"
}

// heldCondition sets the Held condition while hold is in effect and removes it once released:
// a released deployment is as if it had never been held.
func heldCondition(conds []managedv1alpha1.GitOpsDeploymentCondition, hold *managedv1alpha1.GitOpsDeploymentHold, now metav1.Time) []managedv1alpha1.GitOpsDeploymentCondition {
	typ := managedv1alpha1.GitOpsDeploymentConditionHeld
	if hold == nil {
		if findCondition(conds, typ) == nil {
			return conds
		}
		out := make([]managedv1alpha1.GitOpsDeploymentCondition, 0, len(conds)-1)
		for _, c := range conds {
			if c.Type != typ {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusTrue,
		managedv1alpha1.GitOpsDeploymentReasonRolledBack, heldMessage(hold), now)
}

// holdStatus is what a hold's status should say: it holds once the deployment's Application is
// at its revision.
func holdStatus(hold *managedv1alpha1.GitOpsDeploymentHold, depl *managedv1alpha1.GitOpsDeployment, app *argov1alpha1.Application) managedv1alpha1.GitOpsDeploymentHoldStatus {
	st := managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: hold.Generation}
	switch {
	case depl == nil:
		st.Message = "No GitOpsDeployment " + hold.Name + " in the namespace"
	case app == nil || app.Spec.Source == nil:
		st.Message = "The GitOpsDeployment's Argo CD Application is not there yet"
	case app.Spec.Source.TargetRevision != hold.Spec.Revision:
		st.Message = "The GitOpsDeployment's Argo CD Application is not at " + hold.Spec.Revision + " yet"
	default:
		st.Holding = true
		st.Message = "Holding at " + hold.Spec.Revision
	}
	return st
}

// updateHoldStatus writes the hold's status when it changed.
func (c *Controller) updateHoldStatus(ctx context.Context, hold *managedv1alpha1.GitOpsDeploymentHold,
	depl *managedv1alpha1.GitOpsDeployment, app *argov1alpha1.Application, newCommit *newCommitDecision) error {
	if hold == nil {
		return nil
	}
	st := holdStatus(hold, depl, app)
	// baseRevision stays what it was first found for this spec, whatever this reconcile could
	// resolve (a deployment gone, the repo-server down); a changed spec or a Manual hold drops it.
	// The write is guarded by the hold's resourceVersion, so a base taken for one spec is never
	// written under a newer one's generation.
	st.BaseRevision = holdBase(hold)
	if newCommit != nil {
		st.BaseRevision = newCommit.Base
		st.Message += "; " + newCommit.Note
	}
	if apiequality.Semantic.DeepEqual(st, hold.Status) {
		return nil
	}
	upd := hold.DeepCopy()
	upd.Status = st
	_, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(hold.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of GitOpsDeploymentHold %s/%s: %w", hold.Namespace, hold.Name, err)
	}
	return nil
}
