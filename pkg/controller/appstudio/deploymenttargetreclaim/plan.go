package deploymenttargetreclaim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

type (
	claimT  = appstudiov1alpha1.DeploymentTargetClaim
	targetT = appstudiov1alpha1.DeploymentTarget
	classT  = appstudiov1alpha1.DeploymentTargetClass
)

// DeletionTimeout is how long after its deletion a target may wait for the finalizers of
// others (its provisioner's) before it is marked Failed: the 2 minutes after which the
// original marked a target Failed whose SpaceRequest could not be terminated.
const DeletionTimeout = 2 * time.Minute

// The messages of the target's ErrorOccurred condition; the first two are the original's.
const (
	msgInternalError           = "unexpected internal error occurred in DT controller"
	msgUnexpectedReclaimPolicy = "unexpected reclaim policy value on DeploymentTargetClass"
)

func msgDeletionTimedOut(finalizers []string) string {
	return fmt.Sprintf("DeploymentTarget was not deleted within %s of its deletion: the finalizers %s remain, whose owners have not "+
		"removed what they provisioned for it", DeletionTimeout, strings.Join(finalizers, ", "))
}

// Event reasons.
const (
	EventReleased                = "Released"
	EventDeleted                 = "Deleted"
	EventDeletionTimedOut        = "DeletionTimedOut"
	EventUnexpectedReclaimPolicy = "UnexpectedReclaimPolicy"
	EventInternalError           = "InternalError"
)

// state is what the controller sees of one target key.
type state struct {
	// target is nil once the target is gone.
	target *targetT
	// class is the target's DeploymentTargetClass, nil when it does not exist.
	class *classT
	// claim is the claim the target's claimRef names, nil when it names none or the claim
	// does not exist.
	claim *claimT
}

type verb string

const (
	verbUpdate       verb = "update"       // metadata and spec
	verbUpdateStatus verb = "updateStatus" // status
	verbDelete       verb = "delete"
)

// action is one write of the target.
type action struct {
	verb   verb
	target *targetT
}

type event struct{ eventType, reason, message string }

func (e event) String() string { return e.eventType + " " + e.reason + " " + e.message }

// plan is the writes of one target, in order (a delete is the last), the Events to record on
// it, and when to look at it again (0: when something changes).
type plan struct {
	actions      []action
	events       []event
	requeueAfter time.Duration
}

type planner struct {
	plan
	now metav1.Time
}

// write plans the writes that turn cur into what mutate makes of it: an update when its
// metadata or spec change, then a status update when its status does.
func (p *planner) write(cur *targetT, mutate func(*targetT)) *targetT {
	upd := cur.DeepCopy()
	mutate(upd)
	if !apiequality.Semantic.DeepEqual(cur.ObjectMeta, upd.ObjectMeta) || !apiequality.Semantic.DeepEqual(cur.Spec, upd.Spec) {
		o := upd.DeepCopy()
		o.Status = *cur.Status.DeepCopy()
		p.actions = append(p.actions, action{verb: verbUpdate, target: o})
	}
	if !apiequality.Semantic.DeepEqual(cur.Status, upd.Status) {
		p.actions = append(p.actions, action{verb: verbUpdateStatus, target: upd.DeepCopy()})
	}
	return upd
}

func (p *planner) event(eventType, reason, format string, args ...interface{}) {
	p.events = append(p.events, event{eventType, reason, fmt.Sprintf(format, args...)})
}

// planTarget decides, from what the controller sees, what to write for one target. It is pure,
// so that every rule is tested without a cluster. The rules are the original's (reference
// §3.10), with the reclaim half of Kubernetes' PersistentVolume controller (syncVolume) where
// the issue asks for more:
//
//   - A live target gets the finalizer dt.appstudio.redhat.com/finalizer.
//   - Its class must exist; when it does not, nothing is done (ErrorOccurred False/Success, as
//     the original returned). Its reclaimPolicy must be Delete or Retain, otherwise
//     ErrorOccurred "unexpected reclaim policy value on DeploymentTargetClass".
//   - A target whose claim is released, that is whose claimRef names a claim that is gone, or
//     a claim whose binding completed with another target, is reclaimed: Retain releases it
//     (claimRef cleared, phase Released), so that a claim can bind it again; Delete marks it
//     Released and deletes it. A target that was never bound and that no provisioner made,
//     whose claimRef its maker set for a claim still to come (a PV's pre-binding), waits for
//     that claim. Of a claim bound elsewhere, Delete deletes only a target its provisioner made
//     (the provisioned-by annotation), as the PV controller deletes only dynamically
//     provisioned volumes; a user's target is released.
//   - A claim being deleted is the binder's: it hands its target back itself.
//   - A target being deleted loses the finalizer at once: what was provisioned for it is its
//     provisioner's to remove, under a finalizer of the provisioner's own, which holds the
//     target meanwhile. A target still held DeletionTimeout after its deletion becomes Failed,
//     with the finalizers that remain in its ErrorOccurred condition.
//
// Every sync of a live target sets its ErrorOccurred condition: True with reason
// ErrorOccurred and the problem, or False with reason Success.
func planTarget(s state, now metav1.Time) plan {
	t := s.target
	if t == nil {
		return plan{}
	}
	p := &planner{now: now}
	if t.DeletionTimestamp != nil {
		p.terminating(t)
		return p.plan
	}
	if !slices.Contains(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer) {
		t = p.write(t, func(t *targetT) {
			t.Finalizers = append(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer)
		})
	}
	class, claim := s.class, claimOf(t, s.claim)
	switch {
	case class == nil:
	case class.Spec.ReclaimPolicy != appstudiov1alpha1.ReclaimPolicyDelete && class.Spec.ReclaimPolicy != appstudiov1alpha1.ReclaimPolicyRetain:
		old := t.Status.Conditions
		t = p.write(t, func(t *targetT) { setErrorOccurred(&t.Status.Conditions, msgUnexpectedReclaimPolicy, now) })
		if !apiequality.Semantic.DeepEqual(old, t.Status.Conditions) {
			p.event("Warning", EventUnexpectedReclaimPolicy, "%s %s: %q", msgUnexpectedReclaimPolicy, class.Name, class.Spec.ReclaimPolicy)
		}
		return p.plan
	case t.Spec.ClaimRef != "" && isReleased(t, claim):
		why := "its DeploymentTargetClaim " + t.Spec.ClaimRef + " is gone"
		if claim != nil {
			why = "its DeploymentTargetClaim " + t.Spec.ClaimRef + " is bound to DeploymentTarget " + claim.Spec.TargetName
		}
		if class.Spec.ReclaimPolicy == appstudiov1alpha1.ReclaimPolicyDelete && (claim == nil || isProvisioned(t)) {
			p.write(t, func(t *targetT) {
				t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseReleased
				setErrorOccurred(&t.Status.Conditions, "", now)
			})
			p.actions = append(p.actions, action{verb: verbDelete, target: t})
			p.event("Normal", EventDeleted, "Deleting: %s and DeploymentTargetClass %s has reclaimPolicy Delete", why, class.Name)
			return p.plan
		}
		t = p.write(t, func(t *targetT) {
			t.Spec.ClaimRef = ""
			delete(t.Annotations, appstudiov1alpha1.AnnClaimUID)
			t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseReleased
		})
		p.event("Normal", EventReleased, "Released: %s and DeploymentTargetClass %s has reclaimPolicy %s", why, class.Name, class.Spec.ReclaimPolicy)
	}
	p.write(t, func(t *targetT) { setErrorOccurred(&t.Status.Conditions, "", now) })
	return p.plan
}

// claimOf is the claim that t's claimRef names, as the state holds it; nil when that claim is
// gone, which it also is when the claim of that name has another UID than the one the binder
// recorded: that one is a later claim.
func claimOf(t *targetT, claim *claimT) *claimT {
	if claim != nil && !targetindex.Claims(t, claim) {
		return nil
	}
	return claim
}

// isReleased tells whether the claim that t's claimRef names (nil: gone) no longer claims t.
func isReleased(t *targetT, claim *claimT) bool {
	if claim == nil {
		switch t.Status.Phase {
		case appstudiov1alpha1.DeploymentTargetPhaseBound, appstudiov1alpha1.DeploymentTargetPhaseReleased:
			return true
		}
		return isProvisioned(t)
	}
	if claim.DeletionTimestamp != nil {
		return false
	}
	_, complete := claim.Annotations[appstudiov1alpha1.AnnBindCompleted]
	return complete && claim.Spec.TargetName != "" && claim.Spec.TargetName != t.Name
}

func isProvisioned(t *targetT) bool {
	_, ok := t.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned]
	return ok
}

// terminating is a target being deleted.
func (p *planner) terminating(t *targetT) {
	if slices.Contains(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer) {
		t = p.write(t, func(t *targetT) {
			t.Finalizers = framework.Without(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer)
		})
	}
	if len(t.Finalizers) == 0 || t.Status.Phase == appstudiov1alpha1.DeploymentTargetPhaseFailed {
		return // gone once written, or reported
	}
	if deadline := t.DeletionTimestamp.Add(DeletionTimeout); p.now.Time.Before(deadline) {
		p.requeueAfter = deadline.Sub(p.now.Time)
		return
	}
	others := append([]string(nil), t.Finalizers...)
	sort.Strings(others)
	msg := msgDeletionTimedOut(others)
	p.write(t, func(t *targetT) {
		t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseFailed
		setErrorOccurred(&t.Status.Conditions, msg, p.now)
	})
	p.event("Warning", EventDeletionTimedOut, "%s", msg)
}

// setErrorOccurred sets the ErrorOccurred condition for the problem msg ("": none).
func setErrorOccurred(conds *[]metav1.Condition, msg string, now metav1.Time) {
	c := metav1.Condition{
		Type:   appstudiov1alpha1.DeploymentTargetConditionErrorOccurred,
		Status: metav1.ConditionFalse, Reason: appstudiov1alpha1.DeploymentTargetReasonSuccess,
		LastTransitionTime: now,
	}
	if msg != "" {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, appstudiov1alpha1.DeploymentTargetReasonErrorOccurred, msg
	}
	meta.SetStatusCondition(conds, c)
}
