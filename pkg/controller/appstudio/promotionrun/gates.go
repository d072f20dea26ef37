package promotionrun

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongate"
)

// Event reasons of gates.
const (
	EventRejected               = "PromotionRejected"
	EventRolledBack             = "RolledBack"
	EventHeld                   = "EnvironmentHeld"
	EventVerificationStarted    = "VerificationStarted"
	EventVerificationNotCreated = "VerificationJobNotCreated"
)

// gates is what the controller sees of an Environment's PromotionGate and EnvironmentHold for
// one automated run.
type gates struct {
	// gate and hold are the Environment's, nil when it has none.
	gate *appstudiov1alpha1.PromotionGate
	hold *appstudiov1alpha1.EnvironmentHold
	// approvals are the run's PromotionApprovals for the Environment.
	approvals []*appstudiov1alpha1.PromotionApproval
	// job is the verification Job the run's entry in the gate's status names, nil when it
	// names none or the Job does not exist; jobErr, why it could not be read.
	job    *batchv1.Job
	jobErr error
	// rollbackTo is the Snapshot a rollback of the run's entry goes back to
	// (promotiongate.RollbackTarget), nil when there is none or it is missing.
	rollbackTo *appstudiov1alpha1.Snapshot
	// environment is the Environment, for its Events; nil when missing.
	environment *appstudiov1alpha1.Environment
	// live tells whether a PromotionRun of the namespace, by name and UID, still exists: a
	// gate's entries of runs that are gone are dropped when it is written. Nil keeps them.
	live func(run string, uid types.UID) bool
}

// objectEvent is an Event to record on another object than the PromotionRun.
type objectEvent struct {
	object metav1.Object
	event
}

// gatePass is one automated step's passage through its Environment's gates in a pass: the
// run's entry in the gate's status as it was, and as this pass leaves it.
type gatePass struct {
	g     gates
	was   *appstudiov1alpha1.GatedPromotion
	entry appstudiov1alpha1.GatedPromotion
}

func openGate(run *appstudiov1alpha1.PromotionRun, g gates) *gatePass {
	gp := &gatePass{g: g, entry: appstudiov1alpha1.GatedPromotion{PromotionRun: run.Name, PromotionRunUID: run.UID,
		Application: run.Spec.Application, Snapshot: run.Spec.Snapshot, Phase: appstudiov1alpha1.GatePhaseWaiting}}
	if g.gate != nil {
		if e, ok := promotiongate.EntryOf(g.gate.Status, run.Name, run.UID); ok {
			gp.was, gp.entry = &e, *e.DeepCopy()
			gp.entry.PromotionRunUID, gp.entry.Application = run.UID, run.Spec.Application
		}
	}
	return gp
}

// gated tells whether the step has anything to do with gates.
func (gp *gatePass) gated() bool { return gp.g.gate != nil || gp.g.hold != nil }

// set sets the entry's phase and message; a final phase ends it now.
func (gp *gatePass) set(phase appstudiov1alpha1.GatePhase, message string, now metav1.Time) {
	gp.entry.Phase, gp.entry.Message = phase, message
	if promotiongate.Final(phase) && gp.entry.CompletionTime == nil {
		gp.entry.CompletionTime = now.DeepCopy()
	}
}

// record adds the gate's status write to p when the entry changed.
func (gp *gatePass) record(p *plan) {
	if gp.g.gate == nil || (gp.was != nil && apiequality.Semantic.DeepEqual(*gp.was, gp.entry)) {
		return
	}
	g := gp.g.gate.DeepCopy()
	g.Status = promotiongate.Prune(promotiongate.Record(g.Status, gp.entry), gp.g.live)
	p.gates = append(p.gates, g)
}

// stopGates ends the entries of run not ended yet in the gates of the Environments s observed
// (the walk's current level), as this pass leaves them: the run ends, superseded or failed,
// and those steps with it.
func stopGates(p *plan, s state, message string, now metav1.Time) {
	for _, env := range slices.Sorted(maps.Keys(s.targets)) {
		gate := s.targets[env].gates.gate
		if gate == nil {
			continue
		}
		i := slices.IndexFunc(p.gates, func(g *appstudiov1alpha1.PromotionGate) bool { return g.Name == gate.Name })
		if i >= 0 {
			gate = p.gates[i]
		}
		e, ok := promotiongate.EntryOf(gate.Status, s.run.Name, s.run.UID)
		if !ok || promotiongate.Final(e.Phase) {
			continue
		}
		e.Phase, e.Message, e.CompletionTime = appstudiov1alpha1.GatePhaseStopped, message, now.DeepCopy()
		g := gate.DeepCopy()
		g.Status = promotiongate.Prune(promotiongate.Record(g.Status, e), s.targets[env].gates.live)
		if i >= 0 {
			p.gates[i] = g
		} else {
			p.gates = append(p.gates, g)
		}
	}
}

// degradedDeployments names the GitOpsDeployments of binding whose health is Degraded, sorted.
func degradedDeployments(binding *appstudiov1alpha1.SnapshotEnvironmentBinding, deployments map[string]*managedv1alpha1.GitOpsDeployment) []string {
	var names []string
	for _, d := range binding.Status.GitOpsDeployments {
		if gd := deployments[d.GitOpsDeployment]; gd != nil && gd.Status.Health.Status == managedv1alpha1.HealthStatusCodeDegraded {
			names = append(names, gd.Name)
		}
	}
	sort.Strings(names)
	return names
}

// jobNamespace is where the verification Job of a promotion through binding runs: the
// namespace its GitOpsDeployments deploy into, the tenant's own, where its deployer is; or
// why it cannot run, when they deploy through a ManagedEnvironment (another cluster, or a
// DeploymentTarget's namespace, where the agent has no deployer identity).
func jobNamespace(run *appstudiov1alpha1.PromotionRun, binding *appstudiov1alpha1.SnapshotEnvironmentBinding,
	deployments map[string]*managedv1alpha1.GitOpsDeployment) (string, string) {
	for _, d := range binding.Status.GitOpsDeployments {
		if gd := deployments[d.GitOpsDeployment]; gd != nil && gd.Spec.Destination.Environment != "" {
			return "", fmt.Sprintf("a verification Job runs in the tenant's own namespace, and GitOpsDeployment %s deploys through "+
				"GitOpsDeploymentManagedEnvironment %s, where the service has no deployer identity", gd.Name, gd.Spec.Destination.Environment)
		}
	}
	return run.Namespace, ""
}

// atEntry is the part of the step before its Environment is entered: whether it waits
// (or was rejected) at the entry gates. It returns false when the step goes on into the
// Environment, which the gates let it (or it was entered already).
func (gp *gatePass) atEntry(p *plan, run *appstudiov1alpha1.PromotionRun, t target, binding *appstudiov1alpha1.SnapshotEnvironmentBinding,
	entering bool, st *appstudiov1alpha1.PromotionRunStatus, env string, number int32, now metav1.Time) (held bool, events []event) {
	if !gp.gated() || !entering || gp.entry.EnteredTime != nil {
		return false, nil
	}
	d := promotiongate.Decide(gp.g.gate, gp.g.hold, gp.g.approvals, run.Name, run.UID, now.Time)
	gp.entry.Approvers, gp.entry.Override = d.Approvers, d.Override
	if d.Rejected == "" && d.Wait == "" {
		gp.set(appstudiov1alpha1.GatePhaseDeploying, "", now)
		gp.entry.EnteredTime = now.DeepCopy()
		if t.binding != nil {
			gp.entry.PreviousSnapshot = t.binding.Spec.Snapshot
		}
		return false, nil
	}
	e, started := startStep(st, env, number, now)
	if started {
		events = append(events, event{corev1.EventTypeNormal, EventStepStarted,
			fmt.Sprintf("Step %d started: promoting Snapshot %s into Environment %s", e.Step, run.Spec.Snapshot, env)})
	}
	if d.Rejected != "" {
		gp.set(appstudiov1alpha1.GatePhaseRejected, d.Rejected, now)
		events = append(events, step{e: e}.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, d.Rejected, now)...)
		events = append(events, event{corev1.EventTypeWarning, EventRejected, d.Rejected})
		gp.record(p)
		return true, events
	}
	gp.set(appstudiov1alpha1.GatePhaseWaiting, d.Wait, now)
	e.DisplayStatus = d.Wait
	p.later(d.RecheckAfter)
	gp.record(p)
	return true, events
}

// rollBack rolls the step's Environment back to the Snapshot it ran before, for reason, and
// holds it: the binding pointed back (unless it is already), the EnvironmentHold made, the
// step failed, Events on the run and the Environment. It is carried out again, the same, if
// the pass that decided it did not finish: the gate's status records it first.
func (gp *gatePass) rollBack(p *plan, run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot,
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding, sp step, env, reason string, now metav1.Time) []event {
	msg := gp.entry.Message
	if gp.entry.Phase != appstudiov1alpha1.GatePhaseRolledBack {
		prev := ""
		if gp.g.gate != nil {
			prev = promotiongate.RollbackTarget(gp.g.gate.Status, gp.entry)
		}
		switch {
		case prev == "":
			msg = reason + "; nothing to roll back to: Environment " + env + " ran no Snapshot of Application " + run.Spec.Application + " before"
		case gp.g.rollbackTo == nil:
			msg = reason + "; cannot roll back: Snapshot " + prev + ", which Environment " + env + " ran before, does not exist"
		default:
			msg = reason + "; rolled back to Snapshot " + prev
		}
		msg += fmt.Sprintf("; Environment %s is held (kubectl delete environmenthold %s releases it)", env, env)
		gp.set(appstudiov1alpha1.GatePhaseRolledBack, msg, now)
		if e := gp.g.environment; e != nil {
			p.objectEvents = append(p.objectEvents, objectEvent{e, event{corev1.EventTypeWarning, EventRolledBack,
				fmt.Sprintf("PromotionRun %s of Snapshot %s: %s", run.Name, run.Spec.Snapshot, msg)}})
		}
	}
	gp.record(p)
	gp.carryOutRollback(p, run, snapshot, binding, env, now)
	events := sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, msg, now)
	return append(events, event{corev1.EventTypeWarning, EventRolledBack, msg})
}

// carryOutRollback adds to p what a rollback recorded in the gate still needs: the binding
// pointed back, the hold made.
func (gp *gatePass) carryOutRollback(p *plan, run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot,
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding, env string, now metav1.Time) {
	prev := gp.g.rollbackTo
	if prev != nil && binding != nil && binding.Spec.Snapshot != prev.Name {
		p.writes = append(p.writes, pointAt(binding, prev, snapshot, now))
	}
	if gp.g.hold == nil {
		snap := ""
		if prev != nil {
			snap = prev.Name
		}
		p.holds = append(p.holds, &appstudiov1alpha1.EnvironmentHold{
			ObjectMeta: metav1.ObjectMeta{Name: env, Namespace: run.Namespace},
			Spec:       appstudiov1alpha1.EnvironmentHoldSpec{Reason: gp.entry.Message, Snapshot: snap, PromotionRun: run.Name},
		})
	}
}

// carryOutRollbacks adds to p what the rollbacks recorded for s's run in the gates of the
// Environments it observed still need: a run that ends (superseded) still leaves each
// Environment it rolled back where the rollback put it.
func carryOutRollbacks(p *plan, s state, now metav1.Time) {
	for _, env := range slices.Sorted(maps.Keys(s.targets)) {
		t := s.targets[env]
		gp := openGate(s.run, t.gates)
		if gp.was != nil && gp.was.Phase == appstudiov1alpha1.GatePhaseRolledBack {
			gp.carryOutRollback(p, s.run, s.snapshot, t.binding, env, now)
		}
	}
}

// ended replays how the step's passage through the gate ended, when the gate's status says
// it did but the run's status does not (the pass that ended it stopped before it wrote the
// run's): the step is not entered again (a rolled back Environment would be pointed at the
// Snapshot once more), its ending is carried out again and written.
func (gp *gatePass) ended(p *plan, run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot,
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding, st *appstudiov1alpha1.PromotionRunStatus, env string, number int32,
	now metav1.Time) (bool, []event) {
	if gp.was == nil || !promotiongate.Final(gp.was.Phase) {
		return false, nil
	}
	e, _ := startStep(st, env, number, now)
	sp := step{e: e}
	switch gp.entry.Phase {
	case appstudiov1alpha1.GatePhaseRolledBack:
		return true, gp.rollBack(p, run, snapshot, binding, sp, env, gp.entry.Message, now)
	case appstudiov1alpha1.GatePhasePassed:
		return true, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, msgSucceeded+"; "+gp.entry.Message, now)
	}
	return true, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, gp.entry.Message, now)
}

// atExit decides a deployed step at its Environment's exit gates (soak time, verification),
// or replays how its passage ended. handled is false when the gates have nothing to say: the
// step then ends as an ungated one does.
func (gp *gatePass) atExit(p *plan, run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot,
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding, t target, sp step, env string, now metav1.Time) (handled bool, events []event) {
	if !promotiongate.HasExitGates(gp.g.gate) || (sp.waiting != "" && gp.entry.HealthyTime == nil) {
		return false, nil
	}
	ns, problem := jobNamespace(run, binding, t.deployments)
	if problem != "" && gp.g.gate.Spec.Verification != nil && gp.entry.Verification == nil && sp.waiting == "" {
		gp.entry.HealthyTime = now.DeepCopy()
		return true, gp.rollBack(p, run, snapshot, binding, sp, env, "the verification cannot run: "+problem, now)
	}
	x := promotiongate.DecideExit(gp.g.gate, gp.entry, promotiongate.Deployed{Running: sp.waiting == "", Degraded: degradedDeployments(binding, t.deployments)},
		gp.g.job, gp.g.jobErr, ns, now.Time)
	gp.entry = x.Entry
	if x.CreateJob {
		p.jobs = append(p.jobs, promotiongate.Job(gp.g.gate, gp.entry, ns))
	}
	switch {
	case x.RollBack != "":
		return true, gp.rollBack(p, run, snapshot, binding, sp, env, x.RollBack, now)
	case x.Wait != "":
		gp.entry.Message = x.Wait
		sp.e.DisplayStatus = x.Wait
		p.later(x.RecheckAfter)
		gp.record(p)
		return true, nil
	}
	gp.set(appstudiov1alpha1.GatePhasePassed, msgPassed(gp.g.gate, gp.entry), now)
	gp.record(p)
	return true, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, msgSucceeded+"; "+gp.entry.Message, now)
}

// msgPassed says which exit gates a promotion passed.
func msgPassed(gate *appstudiov1alpha1.PromotionGate, e appstudiov1alpha1.GatedPromotion) string {
	var passed []string
	if s := gate.Spec.SoakTime; s != nil && s.Duration > 0 {
		passed = append(passed, "stayed Healthy for "+s.Duration.String())
	}
	if v := e.Verification; v != nil {
		passed = append(passed, "verification Job "+v.Job+" succeeded")
	}
	return "Passed the gates of Environment " + gate.Name + ": " + strings.Join(passed, ", ")
}

// later asks for a look after d, unless one comes sooner.
func (p *plan) later(d time.Duration) {
	if d > 0 && (p.recheckAfter == 0 || d < p.recheckAfter) {
		p.recheckAfter = d
	}
}
