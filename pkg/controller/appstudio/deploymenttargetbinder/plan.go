package deploymenttargetbinder

import (
	"fmt"
	"slices"
	"sort"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

type (
	claimT  = appstudiov1alpha1.DeploymentTargetClaim
	targetT = appstudiov1alpha1.DeploymentTarget
	classT  = appstudiov1alpha1.DeploymentTargetClass
)

// The messages of the claim's ErrorOccurred condition, as the original binder wrote them
// (reference §3.9).
const (
	msgInternalError       = "unexpected internal error occurred in DTC controller"
	msgAlreadyClaimed      = "DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed"
	msgTargetMismatch      = "DeploymentTarget does not match the specified DeploymentTargetClaim: "
	msgBoundFailed         = "failed to process bound DeploymentTargetClaim: "
	msgClassOfTargetAbsent = "unable to locate matching DTClass for DT"

	// The mismatches of a target with a claim (doesDTMatchDTC), the last beyond the original.
	mismatchOtherClaim  = "DeploymentTarget already references another DeploymentTargetClaim via DeploymentTarget's .spec.claimRef field"
	mismatchClass       = "deploymentTargetClassName does not match"
	mismatchPhase       = "DeploymentTarget is not in Available phase"
	mismatchCredentials = "DeploymentTarget does not have cluster credentials"
	mismatchDeleting    = "DeploymentTarget is being deleted"

	// The conflicts of checkForBindingConflict.
	conflictClaimedByOther = "DeploymentTarget has a claimRef to another DeploymentTargetClaim"
	conflictTargetsOther   = "DeploymentTargetClaim targets a DeploymentTarget that is already claimed"
)

func msgClassNotFound(claim, class string) string {
	return fmt.Sprintf("DeploymentTargetClaim %s does not have a matching DeploymentTargetClass %s: the resource could not be found on the cluster", claim, class)
}

func msgLost(claim *claimT) string {
	return msgBoundFailed + fmt.Sprintf("DeploymentTarget not found for a bounded DeploymentTargetClaim %s in namespace %s", claim.Name, claim.Namespace)
}

func msgMultipleBound(claim *claimT) string {
	return msgBoundFailed + fmt.Sprintf("multiple DeploymentTargets found for a bounded DeploymentTargetClaim %s", claim.Name)
}

func mismatch(t *targetT, claim *claimT, why string) string {
	return fmt.Sprintf("DeploymentTarget %s does not match DeploymentTargetClaim %s in namespace %s: %s", t.Name, claim.Name, claim.Namespace, why)
}

func conflict(claim *claimT, t *targetT, why string) string {
	return fmt.Sprintf("cannot bind DeploymentTargetClaim %s with target %q to DeploymentTarget %s with claim ref %q: %s",
		claim.Name, claim.Spec.TargetName, t.Name, t.Spec.ClaimRef, why)
}

// Event reasons. Problems are Warnings with the reason of their kind; the claim's condition
// keeps the reference's reasons (ErrorOccurred/Success).
const (
	EventBound                 = "Bound"
	EventWaitingForProvisioner = "WaitingForProvisioner"
	EventTargetReleased        = "TargetReleased"
	EventTargetDeleted         = "TargetDeleted"

	EventClaimLost       = "ClaimLost"
	EventAlreadyClaimed  = "AlreadyClaimed"
	EventTargetMismatch  = "TargetMismatch"
	EventBindingConflict = "BindingConflict"
	EventClassNotFound   = "ClassNotFound"
	// EventNoSpaceRequestAPI: a Dev Sandbox class, and no SpaceRequest API on the cluster.
	EventNoSpaceRequestAPI = "SpaceRequestAPINotServed"
	EventInternalError     = "InternalError"
)

// state is what the binder sees of one claim key.
type state struct {
	// claim is nil once the claim is gone.
	claim *claimT
	// targets are the DeploymentTargets of the claim's namespace that matter to it: the one it
	// names, those that claim it, and those of its class. Any order; no duplicates.
	targets []*targetT
	// classes are the DeploymentTargetClasses of the claim and of those targets, by name;
	// a name missing is a class that does not exist.
	classes map[appstudiov1alpha1.DeploymentTargetClassName]*classT
	// spaceRequestsServed tells whether the cluster serves the SpaceRequest API, through which
	// a Dev Sandbox class's targets are provisioned.
	spaceRequestsServed bool
}

// verb is what an action does to its object.
type verb string

const (
	verbUpdate       verb = "update"       // metadata and spec
	verbUpdateStatus verb = "updateStatus" // status
	verbDelete       verb = "delete"
)

// action is one write, of a target or of the claim.
type action struct {
	verb   verb
	target *targetT
	claim  *claimT
}

// event is an Event to record on the claim once the writes are done.
type event struct{ eventType, reason, message string }

func (e event) String() string { return e.eventType + " " + e.reason + " " + e.message }

// plan is the writes for one claim, in the order they are made, and the Events to record.
type plan struct {
	actions []action
	events  []event
	// requeueAfter is when to look again: a claim waiting for an API that no event announces.
	requeueAfter time.Duration
}

// problem is what goes wrong: the ErrorOccurred condition's message and the Warning's reason.
type problem struct{ eventReason, message string }

type planner struct {
	plan
	now metav1.Time
	// boundTarget is the name of the target the claim is bound to, once known.
	boundTarget string
}

// writeTarget plans the writes that turn cur into what mutate makes of it: an update when its
// metadata or spec change, then a status update when its status does. It returns the result.
func (p *planner) writeTarget(cur *targetT, mutate func(*targetT)) *targetT {
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

// writeClaim is writeTarget for the claim.
func (p *planner) writeClaim(cur *claimT, mutate func(*claimT)) *claimT {
	upd := cur.DeepCopy()
	mutate(upd)
	if !apiequality.Semantic.DeepEqual(cur.ObjectMeta, upd.ObjectMeta) || !apiequality.Semantic.DeepEqual(cur.Spec, upd.Spec) {
		o := upd.DeepCopy()
		o.Status = *cur.Status.DeepCopy()
		p.actions = append(p.actions, action{verb: verbUpdate, claim: o})
	}
	if !apiequality.Semantic.DeepEqual(cur.Status, upd.Status) {
		p.actions = append(p.actions, action{verb: verbUpdateStatus, claim: upd.DeepCopy()})
	}
	return upd
}

func (p *planner) event(eventType, reason, format string, args ...interface{}) {
	p.events = append(p.events, event{eventType, reason, fmt.Sprintf(format, args...)})
}

// planClaim decides, from what the binder sees, what to write for one claim. It is pure, so
// that every rule is tested without a cluster. The rules are the original binder's (reference
// §3.9), in the decision structure of Kubernetes' PersistentVolume binder:
//
//   - The claim always gets the finalizer binder.appstudio.redhat.com/finalizer.
//   - A deleted claim that is bound (bind-complete and phase Bound) hands its target back: the
//     target gets dt.appstudio.redhat.com/finalizer, is deleted when its class's reclaimPolicy
//     is Delete, and in any case loses its claimRef and becomes Released; then the claim's
//     finalizer goes.
//   - A bound claim (bind-complete) keeps the provisioner annotation in line with its class
//     name, is Lost once its target is gone, and otherwise target and claim are both Bound.
//   - A claim with no targetName binds the best matching target of its class (bound by the
//     controller, which sets targetName), or, when none matches and it has a class, gets the
//     provisioner annotation and waits, Pending, for the class's provisioner to make a target
//     that claims it; once annotated it only binds a target that claims it.
//   - A claim with a targetName waits, Pending, for that target to exist; binds it when it
//     claims the claim, or claims nothing and matches; and reports it when it is claimed by
//     another claim or does not match.
//
// Binding writes the target first (claimRef, phase Bound) and then the claim (targetName,
// annotations, phase Bound), as the PV binder does: a binder stopped between the two finds on
// its next sync a target that claims the claim, which it prefers to any other, and finishes.
//
// Every sync that sees the claim sets its ErrorOccurred condition: True with reason
// ErrorOccurred and the problem, or False with reason Success.
func planClaim(s state, now metav1.Time) plan {
	claim := s.claim
	if claim == nil {
		return plan{}
	}
	p := &planner{now: now}
	if claim.DeletionTimestamp != nil {
		p.release(s)
		return p.plan
	}
	if !slices.Contains(claim.Finalizers, appstudiov1alpha1.FinalizerBinder) {
		claim = p.writeClaim(claim, func(c *claimT) {
			c.Finalizers = append(c.Finalizers, appstudiov1alpha1.FinalizerBinder)
		})
	}

	var phase appstudiov1alpha1.DeploymentTargetClaimPhase
	var pr *problem
	switch {
	case isBindCompleted(claim):
		claim, phase, pr = p.syncBound(s, claim)
	case claim.Spec.TargetName == "":
		claim, phase, pr = p.syncUnboundAny(s, claim)
	default:
		claim, phase, pr = p.syncUnboundNamed(s, claim)
	}
	p.finish(claim, phase, pr)
	return p.plan
}

// finish plans the claim's status: its phase and its ErrorOccurred condition, with the Events
// of their changes.
func (p *planner) finish(claim *claimT, phase appstudiov1alpha1.DeploymentTargetClaimPhase, pr *problem) {
	old := claim.Status
	claim = p.writeClaim(claim, func(c *claimT) {
		c.Status.Phase = phase
		setErrorOccurred(&c.Status.Conditions, pr, p.now)
	})
	if old.Phase != phase {
		switch phase {
		case appstudiov1alpha1.DeploymentTargetClaimPhaseBound:
			p.event("Normal", EventBound, "Bound to DeploymentTarget %s", p.boundTarget)
		case appstudiov1alpha1.DeploymentTargetClaimPhaseLost:
			p.event("Warning", EventClaimLost, "%s", pr.message)
			return
		}
	}
	if pr != nil && !apiequality.Semantic.DeepEqual(old.Conditions, claim.Status.Conditions) {
		p.event("Warning", pr.eventReason, "%s", pr.message)
	}
}

// setErrorOccurred sets the ErrorOccurred condition for pr (nil: none).
func setErrorOccurred(conds *[]metav1.Condition, pr *problem, now metav1.Time) {
	c := metav1.Condition{
		Type:   appstudiov1alpha1.DeploymentTargetConditionErrorOccurred,
		Status: metav1.ConditionFalse, Reason: appstudiov1alpha1.DeploymentTargetReasonSuccess,
		LastTransitionTime: now,
	}
	if pr != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, appstudiov1alpha1.DeploymentTargetReasonErrorOccurred, pr.message
	}
	meta.SetStatusCondition(conds, c)
}

// syncBound is a claim whose binding completed (reference: handleBoundedDeploymentTargetClaim;
// PV: syncBoundClaim).
func (p *planner) syncBound(s state, claim *claimT) (*claimT, appstudiov1alpha1.DeploymentTargetClaimPhase, *problem) {
	if v, ok := claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner]; ok && v != string(claim.Spec.DeploymentTargetClassName) {
		claim = p.writeClaim(claim, func(c *claimT) {
			if c.Spec.DeploymentTargetClassName == "" {
				delete(c.Annotations, appstudiov1alpha1.AnnTargetProvisioner)
			} else {
				c.Annotations[appstudiov1alpha1.AnnTargetProvisioner] = string(c.Spec.DeploymentTargetClassName)
			}
		})
	}
	t, pr, lost := boundTarget(s, claim)
	if lost {
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhaseLost, pr
	}
	if pr != nil {
		// The original reports and leaves the phase; so does this binder.
		return claim, claim.Status.Phase, pr
	}
	// A target that lost its claimRef (someone cleared it) is bound again, as the PV binder
	// does with a volume that came unbound.
	p.boundTarget = t.Name
	p.writeTarget(t, func(t *targetT) {
		claimFor(t, claim)
		t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseBound
	})
	return claim, appstudiov1alpha1.DeploymentTargetClaimPhaseBound, nil
}

// boundTarget is the target bound to a claim whose binding completed: the one it names
// (which must not claim another claim), or else the only one that claims it. lost says that
// there is none.
func boundTarget(s state, claim *claimT) (t *targetT, pr *problem, lost bool) {
	if name := claim.Spec.TargetName; name != "" {
		t = findTarget(s.targets, name)
		if t == nil {
			return nil, &problem{EventClaimLost, msgLost(claim)}, true
		}
		if why := bindingConflict(claim, t); why != "" {
			return nil, &problem{EventBindingConflict, msgBoundFailed + why}, false
		}
		return t, nil, false
	}
	for _, c := range sortedTargets(s.targets) {
		if !targetindex.Claims(c, claim) {
			continue
		}
		if t != nil {
			return nil, &problem{EventBindingConflict, msgMultipleBound(claim)}, false
		}
		t = c
	}
	if t == nil {
		return nil, &problem{EventClaimLost, msgLost(claim)}, true
	}
	return t, nil, false
}

// syncUnboundAny is a claim that names no target (reference: findMatchingDTForDTC and
// handleDynamicDTCProvisioning; PV: syncUnboundClaim with an empty volumeName).
func (p *planner) syncUnboundAny(s state, claim *claimT) (*claimT, appstudiov1alpha1.DeploymentTargetClaimPhase, *problem) {
	if t := bestMatch(s.targets, claim); t != nil {
		return p.bind(claim, t, true)
	}
	className := claim.Spec.DeploymentTargetClassName
	if className == "" {
		// Nothing can provision a target for a claim of no class: it waits for one to match.
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending, nil
	}
	class := s.classes[className]
	if class == nil {
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending,
			&problem{EventClassNotFound, msgClassNotFound(claim.Name, string(className))}
	}
	if claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner] != string(className) {
		claim = p.writeClaim(claim, func(c *claimT) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[appstudiov1alpha1.AnnTargetProvisioner] = string(className)
		})
		p.event("Normal", EventWaitingForProvisioner, "Waiting for a DeploymentTarget of class %s to be provisioned by %s",
			className, class.Spec.Provisioner)
	}
	if class.Spec.Provisioner == appstudiov1alpha1.ProvisionerDevSandbox && !s.spaceRequestsServed {
		// Nothing here fakes a sandbox operator: say why nothing will come, and look again
		// now and then, as the API's arrival is no event of the informers'.
		p.requeueAfter = SpaceRequestRecheck
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending,
			&problem{EventNoSpaceRequestAPI, msgNoSpaceRequestAPI(claim.Name, string(className))}
	}
	return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending, nil
}

// SpaceRequestRecheck is how often a claim of a Dev Sandbox class looks again for the
// SpaceRequest API while the cluster does not serve it.
const SpaceRequestRecheck = spacerequest.Recheck

func msgNoSpaceRequestAPI(claim, class string) string {
	return fmt.Sprintf("DeploymentTargetClaim %s has class %s of provisioner %s, which makes targets through SpaceRequests "+
		"(toolchain.dev.openshift.com/v1alpha1), and this cluster does not serve that API: no DeploymentTarget will be provisioned "+
		"until a Dev Sandbox operator is installed; use a class of provisioner %s, or name a target", claim, class,
		appstudiov1alpha1.ProvisionerDevSandbox, appstudiov1alpha1.ProvisionerNamespace)
}

// bestMatch is the target that a claim naming none binds, nil when none matches. A claim
// waiting for a provisioner (it has the provisioner annotation) binds only a target that
// claims it. "Best", where the reference (which took the first of the list) is silent: a
// target that already claims the claim (one the provisioner made for it, or one this binder
// bound before it was stopped between its two writes), then the first by name.
func bestMatch(targets []*targetT, claim *claimT) *targetT {
	_, dynamic := claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner]
	var best *targetT
	for _, t := range sortedTargets(targets) {
		if dynamic && !targetindex.Claims(t, claim) {
			continue
		}
		if doesTargetMatchClaim(t, claim) != "" {
			continue
		}
		if best == nil || (targetindex.Claims(t, claim) && !targetindex.Claims(best, claim)) {
			best = t
		}
	}
	return best
}

// syncUnboundNamed is a claim that names its target and whose binding has not completed
// (PV: syncUnboundClaim with a volumeName).
func (p *planner) syncUnboundNamed(s state, claim *claimT) (*claimT, appstudiov1alpha1.DeploymentTargetClaimPhase, *problem) {
	t := findTarget(s.targets, claim.Spec.TargetName)
	switch {
	case t == nil:
		// Waiting for the target to be created.
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending, nil
	case targetindex.Claims(t, claim):
		// Target and claim name each other.
		return p.bind(claim, t, false)
	case t.Spec.ClaimRef != "":
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending, &problem{EventAlreadyClaimed, msgAlreadyClaimed}
	}
	if why := doesTargetMatchClaim(t, claim); why != "" {
		return claim, appstudiov1alpha1.DeploymentTargetClaimPhasePending, &problem{EventTargetMismatch, msgTargetMismatch + why}
	}
	return p.bind(claim, t, false)
}

// bind binds t and claim: the target first, then the claim.
func (p *planner) bind(claim *claimT, t *targetT, byController bool) (*claimT, appstudiov1alpha1.DeploymentTargetClaimPhase, *problem) {
	p.boundTarget = t.Name
	p.writeTarget(t, func(t *targetT) {
		claimFor(t, claim)
		t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseBound
	})
	claim = p.writeClaim(claim, func(c *claimT) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		if byController {
			c.Spec.TargetName = t.Name
			c.Annotations[appstudiov1alpha1.AnnBoundByController] = appstudiov1alpha1.AnnBinderValueTrue
		}
		c.Annotations[appstudiov1alpha1.AnnBindCompleted] = appstudiov1alpha1.AnnBinderValueTrue
	})
	return claim, appstudiov1alpha1.DeploymentTargetClaimPhaseBound, nil
}

// release is a deleted claim (reference: handleDTCDeletion). A target that claims another
// claim is not this claim's to hand back: only the claim's finalizer goes.
func (p *planner) release(s state) {
	claim := s.claim
	if !slices.Contains(claim.Finalizers, appstudiov1alpha1.FinalizerBinder) {
		return
	}
	if isBindCompleted(claim) && claim.Status.Phase == appstudiov1alpha1.DeploymentTargetClaimPhaseBound {
		if t, pr, _ := boundTarget(s, claim); t != nil && pr == nil {
			class := s.classes[t.Spec.DeploymentTargetClassName]
			if class == nil {
				// The finalizer stays until the class is back (or the target gone): the
				// policy decides between deleting and keeping the target.
				p.finish(claim, claim.Status.Phase, &problem{EventClassNotFound, msgClassOfTargetAbsent})
				return
			}
			if t.DeletionTimestamp == nil {
				// A terminating object takes no new finalizer.
				t = p.writeTarget(t, func(t *targetT) {
					if !slices.Contains(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer) {
						t.Finalizers = append(t.Finalizers, appstudiov1alpha1.DeploymentTargetFinalizer)
					}
				})
				if class.Spec.ReclaimPolicy == appstudiov1alpha1.ReclaimPolicyDelete {
					p.actions = append(p.actions, action{verb: verbDelete, target: t})
					p.event("Normal", EventTargetDeleted, "Deleted DeploymentTarget %s: its class %s has reclaimPolicy Delete", t.Name, class.Name)
				}
			}
			// Deleted first, so that no other claim can bind it between the two writes.
			p.writeTarget(t, func(t *targetT) {
				t.Spec.ClaimRef = ""
				delete(t.Annotations, appstudiov1alpha1.AnnClaimUID)
				t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseReleased
			})
			p.event("Normal", EventTargetReleased, "Released DeploymentTarget %s", t.Name)
		}
	}
	p.writeClaim(claim, func(c *claimT) { c.Finalizers = framework.Without(c.Finalizers, appstudiov1alpha1.FinalizerBinder) })
}

// doesTargetMatchClaim is why t cannot be bound to claim, "" when it can (reference:
// doesDTMatchDTC): the same class, no other claim, Available (or no phase yet), credentials, no
// binding conflict. Beyond the original: a target being deleted does not match; a target that
// already claims the claim matches when Bound (the binder bound it and was stopped before it
// wrote the claim); a Released target whose claimRef is cleared (its class's Retain policy
// released it) matches, so that it can be bound again, as the issue asks.
func doesTargetMatchClaim(t *targetT, claim *claimT) string {
	if t.Spec.ClaimRef != "" && !targetindex.Claims(t, claim) {
		return mismatch(t, claim, mismatchOtherClaim)
	}
	if t.Spec.DeploymentTargetClassName != claim.Spec.DeploymentTargetClassName {
		return mismatch(t, claim, mismatchClass)
	}
	if t.DeletionTimestamp != nil {
		return mismatch(t, claim, mismatchDeleting)
	}
	switch t.Status.Phase {
	case "", appstudiov1alpha1.DeploymentTargetPhaseAvailable:
	case appstudiov1alpha1.DeploymentTargetPhaseBound:
		if !targetindex.Claims(t, claim) {
			return mismatch(t, claim, mismatchPhase)
		}
	case appstudiov1alpha1.DeploymentTargetPhaseReleased:
		if t.Spec.ClaimRef != "" {
			return mismatch(t, claim, mismatchPhase)
		}
	default:
		return mismatch(t, claim, mismatchPhase)
	}
	if t.Spec.KubernetesClusterCredentials == (appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{}) {
		return mismatch(t, claim, mismatchCredentials)
	}
	return bindingConflict(claim, t)
}

// bindingConflict is the conflict between claim and t, "" when none (reference:
// checkForBindingConflict), one of four:
//  1. the claim names t, which claims another claim;
//  2. the claim names no target, and t claims another claim;
//  3. t claims the claim, which names another target;
//  4. t claims no claim, and the claim names another target.
func bindingConflict(claim *claimT, t *targetT) string {
	if claim.Spec.TargetName == t.Name || claim.Spec.TargetName == "" {
		if t.Spec.ClaimRef != "" && !targetindex.Claims(t, claim) {
			return conflict(claim, t, conflictClaimedByOther)
		}
	}
	if targetindex.Claims(t, claim) || t.Spec.ClaimRef == "" {
		if claim.Spec.TargetName != "" && claim.Spec.TargetName != t.Name {
			return conflict(claim, t, conflictTargetsOther)
		}
	}
	return ""
}

// claimFor makes t claim claim, by name and UID.
func claimFor(t *targetT, claim *claimT) {
	t.Spec.ClaimRef = claim.Name
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[appstudiov1alpha1.AnnClaimUID] = string(claim.UID)
}

func isBindCompleted(claim *claimT) bool {
	_, ok := claim.Annotations[appstudiov1alpha1.AnnBindCompleted]
	return ok
}

func findTarget(targets []*targetT, name string) *targetT {
	for _, t := range targets {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func sortedTargets(targets []*targetT) []*targetT {
	out := append([]*targetT(nil), targets...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
