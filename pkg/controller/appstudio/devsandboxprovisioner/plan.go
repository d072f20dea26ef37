package devsandboxprovisioner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

type (
	claimT  = appstudiov1alpha1.DeploymentTargetClaim
	targetT = appstudiov1alpha1.DeploymentTarget
	classT  = appstudiov1alpha1.DeploymentTargetClass
	srT     = unstructured.Unstructured
)

// ProvisionerName is the provisioner of the DeploymentTargetClasses this controller serves.
const ProvisionerName = appstudiov1alpha1.ProvisionerDevSandbox

// prefix is the prefix of the provisioner's own finalizer and annotations.
const prefix = "devsandbox.provisioner.managed-gitops.redhat.com/"

// Finalizer holds a DeploymentTarget this provisioner made until its SpaceRequest is gone
// (reclaimPolicy Delete) or left (Retain). The reference's dt.appstudio.redhat.com/finalizer
// is the reclaim controller's, which drops it as soon as the target is deleted and then
// waits, DeletionTimeout, for the provisioners' finalizers.
const Finalizer = prefix + "finalizer"

// AnnClass on a SpaceRequest is the class of the claim it was made for: the reclaimPolicy
// that applies to it once claim and target are gone.
const AnnClass = prefix + "class"

// TargetSuffix makes the name of a claim's target: "<claim>-dt", as the original.
const TargetSuffix = "-dt"

// TargetName is the name of the DeploymentTarget made for the claim named claim.
func TargetName(claim string) string { return claim + TargetSuffix }

// StuckAfter is how long after its deletion a SpaceRequest whose space the operator cannot
// delete (Ready reason UnableToTerminate) makes its target Failed: the original's 2 minutes.
const StuckAfter = 2 * time.Minute

// ConditionProvisioned is the claim's condition of this provisioner (provisioning).
const ConditionProvisioned = provisioning.ConditionProvisioned

// Reasons of ConditionProvisioned and of the Events (problems are Warnings).
const (
	ReasonProvisioned        = "Provisioned"
	ReasonProvisioning       = "Provisioning"
	ReasonNameConflict       = "NameConflict"
	ReasonInvalidClaimName   = "InvalidClaimName"
	ReasonBadSpaceRequest    = "UnexpectedSpaceRequestStatus"
	ReasonProvisioningFailed = provisioning.ReasonProvisioningFailed

	EventSpaceRequested      = "SpaceRequested"
	EventProvisioned         = "Provisioned"
	EventDeprovisioning      = "Deprovisioning"
	EventDeprovisioned       = "Deprovisioned"
	EventRetained            = "Retained"
	EventOrphanDeleted       = "OrphanSpaceRequestDeleted"
	EventUnableToTerminate   = "SpaceRequestUnableToTerminate"
	EventClassNotFound       = "ClassNotFound"
	EventNoDevSandboxClasses = "NoDevSandboxClass"
)

// state is what the provisioner sees of one unit, "claim namespace/claim name": the claim,
// the target TargetName(claim) and the SpaceRequests labelled for either.
type state struct {
	namespace, claimName string
	// claim is nil when gone.
	claim *claimT
	// claimClass is the claim's class, nil when there is none: it decides whether the claim
	// is to be provisioned.
	claimClass *classT
	// class decides what becomes of the unit's SpaceRequests: the target's class when there is
	// a target (whatever the class of a claim of the same name), else the claim's, else the
	// one recorded on a SpaceRequest (AnnClass, recordedClass); nil when none exists. classes
	// are all the classes of this provisioner (the original's lookup for an orphan without a
	// record).
	class         *classT
	recordedClass string
	classes       []*classT
	// dt is the DeploymentTarget TargetName(claimName), nil when none.
	dt *targetT
	// byClaim are the SpaceRequests labelled LabelClaim=claimName, byTarget those labelled
	// LabelTarget=TargetName(claimName); by name.
	byClaim, byTarget []*srT
}

// plan is what to write for one unit, in this order: the SpaceRequests, the target, the claim.
type plan struct {
	// createSpaceRequest is made only once the server confirms no SpaceRequest labelled for
	// the claim exists (generateName: the cache may not show the last one made).
	createSpaceRequest *srT
	// labelSpaceRequests get LabelTarget=TargetName.
	labelSpaceRequests []*srT
	// finalizeSpaceRequests get spacerequest.Finalizer before they are deleted.
	finalizeSpaceRequests []*srT
	deleteSpaceRequests   []*srT
	// orphanNeedsNoClaim: delete an orphan only after the server confirms claim and target gone.
	orphanNeedsNoClaim bool

	createTarget  *targetT
	markAvailable bool // the target's status phase, after its creation or on a target with none
	updateTarget  *targetT
	failTarget    bool // status phase Failed
	// confirmSpaceRequestsGone: the server must have no SpaceRequest labelled for the unit
	// before updateTarget (the finalizer's removal) is written.
	confirmSpaceRequestsGone bool

	condition    *metav1.Condition // the claim's, when it changes
	events       []framework.Event
	requeueAfter time.Duration
}

type planner struct {
	plan
	s   state
	now time.Time
}

func (p *planner) event(e framework.Event) { p.events = append(p.events, e) }

func (p *planner) problem(reason, format string, args ...interface{}) {
	p.setCondition(metav1.ConditionFalse, reason, fmt.Sprintf(format, args...), true)
}

func (p *planner) setCondition(status metav1.ConditionStatus, reason, message string, warn bool) {
	claim := p.s.claim
	if claim == nil || claim.DeletionTimestamp != nil {
		if warn {
			p.event(framework.WarningEvent(reason, "%s", message))
		}
		return
	}
	c := provisioning.Condition(claim, status, reason, message, p.now)
	if c == nil {
		return
	}
	p.condition = c
	if warn {
		p.event(framework.WarningEvent(reason, "%s", message))
	}
}

// planUnit decides, from what the provisioner sees of one unit, what to write. It is pure, so
// that every rule is tested without a cluster. The rules are the original's SpaceRequest
// controller and the SpaceRequest half of its DeploymentTarget controller (reference §3.10,
// §3.11):
//
//   - A claim is provisioned when the binder asks for it (Pending, no targetName, not bound,
//     annotation provisioner.appstudio.redhat.com/dt-provisioner = its class) and its class's
//     provisioner is ProvisionerName: a SpaceRequest is made in its namespace (generateName
//     "<claim>-", tierName appstudio-env, label appstudio.openshift.io/dtc=<claim>) unless one
//     labelled for it exists. A claim whose name, or its target's, cannot be a label value
//     (InvalidClaimName), or whose target name is taken by a target that does not claim it
//     (NameConflict: another's, or one of this provisioner's made for another claim or
//     released), is reported on its condition Provisioned and by a Warning instead.
//   - Once that SpaceRequest is Ready with exactly one status.namespaceAccess, the target
//     "<claim>-dt" is made: the claim's class, defaultNamespace = namespaceAccess[0].name,
//     apiURL = status.targetClusterURL, clusterCredentialsSecret = namespaceAccess[0].secretRef,
//     claimRef = the claim, annotation provisioned-by = ProvisionerName, label dt-provisioner,
//     this provisioner's finalizer, phase Available; then the SpaceRequest is labelled
//     appstudio.openshift.io/dt=<target>. The binder binds the target.
//   - A live target of this provisioner keeps its finalizer and its SpaceRequest its label.
//   - A SpaceRequest of tier appstudio-env labelled for a claim that is gone, with no target,
//     is deleted when the reclaimPolicy of the class recorded on it is Delete (the orphan rule);
//     of the only class of this provisioner when none is recorded; it is kept when the class
//     recorded is gone.
//   - A target of this provisioner being deleted, under the target's class (whatever the class
//     of a claim of the same name): Delete gives its SpaceRequests of tier appstudio-env
//     (labelled dt, else dtc) the operator's finalizer and deletes them, and lets the target go
//     once they are gone; a SpaceRequest still there StuckAfter its deletion with Ready reason
//     UnableToTerminate makes the target Failed. Retain leaves the SpaceRequests and lets the
//     target go at once. Without its class the target waits for it.
func planUnit(s state, now time.Time) plan {
	p := &planner{s: s, now: now}
	dt := s.dt
	if dt != nil && !isOurs(dt) {
		if wantsProvisioning(s) {
			p.problem(ReasonNameConflict, "DeploymentTarget %s exists and was not provisioned by %s", dt.Name, ProvisionerName)
		}
		return p.plan
	}
	switch {
	case dt != nil && dt.DeletionTimestamp != nil:
		if wantsProvisioning(s) {
			// Provisioned once the target is gone: its deletion brings the unit back.
			p.setCondition(metav1.ConditionFalse, ReasonProvisioning, fmt.Sprintf("waiting for DeploymentTarget %s, being deleted, to be gone", dt.Name), false)
		}
		p.reclaim()
	case dt != nil:
		if wantsProvisioning(s) && dt.Spec.ClaimRef != s.claim.Name {
			// A target this provisioner made for another claim, or released (a Retain class):
			// the claim would wait for it forever.
			p.problem(ReasonNameConflict, "DeploymentTarget %s, provisioned by %s, exists and does not claim this claim (claimRef %q): delete it, or name the claim otherwise",
				dt.Name, ProvisionerName, dt.Spec.ClaimRef)
		}
		p.maintain()
	case wantsProvisioning(s):
		p.provision()
	default:
		p.collectOrphans()
	}
	return p.plan
}

// isOurs tells whether this provisioner made t.
func isOurs(t *targetT) bool { return provisioning.MadeBy(t, ProvisionerName, Finalizer) }

// wantsProvisioning tells whether the binder asks this provisioner for a target for s.claim.
func wantsProvisioning(s state) bool {
	return provisioning.Wanted(s.claim, s.claimClass, ProvisionerName)
}

// validLabels tells whether the unit's claim and target names can be the values of the
// SpaceRequests' labels LabelClaim and LabelTarget: no SpaceRequest can be labelled for a
// unit whose names cannot, nor a label selector select one.
func validLabels(claimName string) bool {
	return len(validation.IsValidLabelValue(claimName)) == 0 && len(validation.IsValidLabelValue(TargetName(claimName))) == 0
}

// isOfTier tells whether sr is of tier TierAppStudioEnv, the tier of the SpaceRequests made
// for claims: only those are deleted for a target or as orphans (reference §3.10).
func isOfTier(sr *srT) bool { return spacerequest.TierName(sr) == spacerequest.TierAppStudioEnv }

// ofTier are the SpaceRequests of list that are isOfTier.
func ofTier(list []*srT) []*srT {
	var out []*srT
	for _, sr := range list {
		if isOfTier(sr) {
			out = append(out, sr)
		}
	}
	return out
}

// live are the SpaceRequests of list not being deleted.
func live(list []*srT) []*srT {
	var out []*srT
	for _, sr := range list {
		if sr.GetDeletionTimestamp() == nil {
			out = append(out, sr)
		}
	}
	return out
}

// oldest is the SpaceRequest of list made first (then by name), nil when none.
func oldest(list []*srT) *srT {
	out := append([]*srT(nil), list...)
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i].GetCreationTimestamp(), out[j].GetCreationTimestamp()
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return out[i].GetName() < out[j].GetName()
	})
	if len(out) == 0 {
		return nil
	}
	return out[0]
}

// provision requests a space for the claim, and makes its target once the space is ready.
func (p *planner) provision() {
	s := p.s
	claim := s.claim
	if !validLabels(claim.Name) {
		// The SpaceRequest could not be labelled for the claim, nor found again.
		p.problem(ReasonInvalidClaimName, "the claim name %s cannot be provisioned by %s: it and %s must be valid label values (at most %d characters)",
			claim.Name, ProvisionerName, TargetName(claim.Name), validation.LabelValueMaxLength)
		return
	}
	if len(s.byClaim) == 0 {
		p.createSpaceRequest = spacerequest.New(s.namespace, claim.Name+"-", spacerequest.TierAppStudioEnv,
			map[string]string{spacerequest.LabelClaim: claim.Name},
			map[string]string{AnnClass: string(claim.Spec.DeploymentTargetClassName)})
		p.setCondition(metav1.ConditionFalse, ReasonProvisioning, "waiting for the SpaceRequest made for the claim to be Ready", false)
		p.event(framework.NormalEvent(EventSpaceRequested, "Requested a space of tier %s through a SpaceRequest", spacerequest.TierAppStudioEnv))
		return
	}
	sr := oldest(live(s.byClaim))
	if sr == nil {
		// Its delete event brings the unit back.
		p.setCondition(metav1.ConditionFalse, ReasonProvisioning, "waiting for the SpaceRequests of the claim being deleted to be gone", false)
		return
	}
	if !spacerequest.IsReady(sr) {
		p.setCondition(metav1.ConditionFalse, ReasonProvisioning, fmt.Sprintf("waiting for SpaceRequest %s to be Ready", sr.GetName()), false)
		return
	}
	access := spacerequest.Access(sr)
	if len(access) != 1 || access[0].Name == "" || access[0].SecretRef == "" || spacerequest.TargetClusterURL(sr) == "" {
		p.problem(ReasonBadSpaceRequest, "SpaceRequest %s is Ready but does not have exactly one status.namespaceAccess with a name and a secretRef, and a status.targetClusterURL (%d namespaceAccess)",
			sr.GetName(), len(access))
		return
	}
	name := TargetName(claim.Name)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		p.problem(ReasonProvisioningFailed, "the DeploymentTarget name %s is not valid: %v", name, errs)
		return
	}
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{},
			// The claim's UID as the binder records it: a claim made again under the name is
			// another claim, and does not inherit this target.
			Annotations: map[string]string{
				appstudiov1alpha1.AnnDynamicallyProvisioned: string(ProvisionerName),
				appstudiov1alpha1.AnnClaimUID:               string(claim.UID),
			},
			Finalizers: []string{Finalizer}},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: claim.Spec.DeploymentTargetClassName,
			ClaimRef:                  claim.Name,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace:         access[0].Name,
				APIURL:                   spacerequest.TargetClusterURL(sr),
				ClusterCredentialsSecret: access[0].SecretRef,
			},
		},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: appstudiov1alpha1.DeploymentTargetPhaseAvailable},
	}
	if v := claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner]; len(validation.IsValidLabelValue(v)) == 0 {
		t.Labels[appstudiov1alpha1.AnnTargetProvisioner] = v
	}
	p.createTarget = t
	p.markAvailable = true
	p.labelSpaceRequests = p.unlabelled(sr)
	p.setCondition(metav1.ConditionTrue, ReasonProvisioned,
		fmt.Sprintf("DeploymentTarget %s provisioned from SpaceRequest %s, namespace %s", name, sr.GetName(), access[0].Name), false)
	p.event(framework.NormalEvent(EventProvisioned, "Provisioned DeploymentTarget %s from SpaceRequest %s: namespace %s of %s",
		name, sr.GetName(), access[0].Name, spacerequest.TargetClusterURL(sr)))
}

// unlabelled is sr when it lacks the target's label, else nothing.
func (p *planner) unlabelled(sr *srT) []*srT {
	name := TargetName(p.s.claimName)
	if sr == nil || sr.GetDeletionTimestamp() != nil || sr.GetLabels()[spacerequest.LabelTarget] == name {
		return nil
	}
	upd := sr.DeepCopy()
	labels := upd.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[spacerequest.LabelTarget] = name
	upd.SetLabels(labels)
	return []*srT{upd}
}

// maintain keeps a live target of this provisioner: its finalizer, its first phase, and the
// label of the SpaceRequest it was made from.
func (p *planner) maintain() {
	dt := p.s.dt
	if !slices.Contains(dt.Finalizers, Finalizer) {
		upd := dt.DeepCopy()
		upd.Finalizers = append(upd.Finalizers, Finalizer)
		p.updateTarget = upd
	}
	p.markAvailable = dt.Status.Phase == ""
	if len(p.s.byTarget) == 0 {
		p.labelSpaceRequests = p.unlabelled(oldest(live(p.s.byClaim)))
	}
	if claim := p.s.claim; claim != nil && claim.Name == dt.Spec.ClaimRef {
		p.setCondition(metav1.ConditionTrue, ReasonProvisioned, fmt.Sprintf("DeploymentTarget %s provisioned, namespace %s",
			dt.Name, dt.Spec.KubernetesClusterCredentials.DefaultNamespace), false)
	}
}

// reclaim is a target of this provisioner being deleted.
func (p *planner) reclaim() {
	s := p.s
	dt := s.dt
	if !slices.Contains(dt.Finalizers, Finalizer) {
		return
	}
	release := func() {
		upd := dt.DeepCopy()
		upd.Finalizers = framework.Without(upd.Finalizers, Finalizer)
		p.updateTarget = upd
	}
	if s.class == nil {
		// The policy decides between deleting and keeping the space: wait for the class (the
		// reclaim controller marks the target Failed meanwhile).
		p.event(framework.WarningEvent(EventClassNotFound, "DeploymentTargetClass %s not found: the SpaceRequest of DeploymentTarget %s is neither deleted nor kept until it exists",
			dt.Spec.DeploymentTargetClassName, dt.Name))
		return
	}
	if s.class.Spec.ReclaimPolicy == appstudiov1alpha1.ReclaimPolicyRetain {
		release()
		p.event(framework.NormalEvent(EventRetained, "Kept the SpaceRequest of DeploymentTarget %s: reclaimPolicy Retain", dt.Name))
		return
	}
	srs := ofTier(s.byTarget)
	if len(srs) == 0 {
		srs = ofTier(s.byClaim)
	}
	if len(srs) == 0 {
		release()
		p.confirmSpaceRequestsGone = true
		p.event(framework.NormalEvent(EventDeprovisioned, "The SpaceRequest of DeploymentTarget %s is gone", dt.Name))
		return
	}
	for _, sr := range srs {
		if sr.GetDeletionTimestamp() == nil {
			if !slices.Contains(sr.GetFinalizers(), spacerequest.Finalizer) {
				upd := sr.DeepCopy()
				upd.SetFinalizers(append(upd.GetFinalizers(), spacerequest.Finalizer))
				p.finalizeSpaceRequests = append(p.finalizeSpaceRequests, upd)
			}
			p.deleteSpaceRequests = append(p.deleteSpaceRequests, sr)
			p.event(framework.NormalEvent(EventDeprovisioning, "Deleting SpaceRequest %s of DeploymentTarget %s: reclaimPolicy Delete", sr.GetName(), dt.Name))
			continue
		}
		// Its events (the operator's progress, its removal) bring the unit back; only the
		// timer is no event.
		deadline := sr.GetDeletionTimestamp().Add(StuckAfter)
		if p.now.Before(deadline) {
			p.requeue(deadline.Sub(p.now))
			continue
		}
		if ready := spacerequest.Ready(sr); ready != nil && ready.Reason == spacerequest.ReasonUnableToTerminate &&
			dt.Status.Phase != appstudiov1alpha1.DeploymentTargetPhaseFailed && !p.failTarget {
			p.failTarget = true
			p.event(framework.WarningEvent(EventUnableToTerminate, "SpaceRequest %s of DeploymentTarget %s could not be terminated %s after its deletion: %s",
				sr.GetName(), dt.Name, StuckAfter, ready.Message))
		}
	}
}

func (p *planner) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.requeueAfter == 0 || d < p.requeueAfter {
		p.requeueAfter = d
	}
}

// collectOrphans deletes the SpaceRequests (of tier TierAppStudioEnv) of a claim that is gone,
// and of no target, when the class's reclaimPolicy is Delete: the class recorded on them, or
// the only class of this provisioner when none is recorded.
func (p *planner) collectOrphans() {
	s := p.s
	if s.claim != nil {
		return
	}
	srs := ofTier(live(append(append([]*srT(nil), s.byClaim...), s.byTarget...)))
	if len(srs) == 0 {
		return
	}
	class := s.class
	if class == nil && s.recordedClass != "" {
		// The class they were made under is gone: another class's policy does not apply
		// (a Delete class would delete a space kept under a Retain one).
		p.event(framework.WarningEvent(EventClassNotFound, "SpaceRequest %s of DeploymentTargetClaim %s, which is gone: its DeploymentTargetClass %s no longer exists, so it is kept",
			srs[0].GetName(), s.claimName, s.recordedClass))
		return
	}
	if class == nil {
		switch len(s.classes) {
		case 0:
			p.event(framework.WarningEvent(EventNoDevSandboxClasses, "SpaceRequest %s of DeploymentTargetClaim %s, which is gone: no DeploymentTargetClass of provisioner %s says what to do with it",
				srs[0].GetName(), s.claimName, ProvisionerName))
			return
		case 1:
			class = s.classes[0]
		default:
			return // no class recorded and several to choose from: left
		}
	}
	if class.Spec.ReclaimPolicy != appstudiov1alpha1.ReclaimPolicyDelete {
		return
	}
	seen := map[string]bool{}
	for _, sr := range srs {
		if !seen[sr.GetName()] {
			seen[sr.GetName()] = true
			p.deleteSpaceRequests = append(p.deleteSpaceRequests, sr)
			p.event(framework.NormalEvent(EventOrphanDeleted, "Deleting SpaceRequest %s: its DeploymentTargetClaim %s is gone and DeploymentTargetClass %s has reclaimPolicy Delete",
				sr.GetName(), s.claimName, class.Name))
		}
	}
	p.orphanNeedsNoClaim = true
}
