package promotionrun

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
)

// Event reasons of automated promotion.
const (
	EventSuperseded   = "Superseded"
	EventGraphInvalid = "PromotionGraphInvalid"
)

func msgSuperseded(run, snapshot string) string {
	return "Superseded by PromotionRun " + run + " of the newer Snapshot " + snapshot + "."
}

func msgAutomatedSucceeded(snapshot string, envs []string) string {
	return "Promoted Snapshot " + snapshot + " into Environments " + strings.Join(envs, ", ")
}

// planAutomated decides an automated PromotionRun: it walks the Environment graph from
// spec.automatedPromotion.initialEnvironment (promotiongraph.Next), one level at a time, each
// step as a manual promotion deploys (stepInto) with its own timeout from its start. The run
// succeeds when the walk has no step left, and fails with its first failed step, or when the
// walk cannot begin (its Environment is missing or in a cycle).
//
// Automated runs of an application do not queue behind each other as manual ones do: a run
// of a newer Snapshot supersedes an older one, which stops where it is (its steps in progress
// fail, saying by which run), and runs of the same Snapshot from different roots go side by
// side. They still wait for an earlier manual run, and a later manual run waits for them.
func planAutomated(s state, now metav1.Time) plan {
	var p plan
	run := s.run
	st := run.Status.DeepCopy()
	write, fail := p.writers(run, st, now)

	if newer := newerAutomated(run, s.siblings, s.snapshotCreated); newer != nil {
		msg := msgSuperseded(newer.Name, newer.Spec.Snapshot)
		carryOutRollbacks(&p, s, now)
		stopGates(&p, s, msg, now)
		events := stopSteps(st, msg, now)
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure
		setErrorCondition(st, msg, now)
		return write(append(events, event{corev1.EventTypeWarning, EventSuperseded, msg})...)
	}
	if first := earliestActive(run, manualRuns(s.siblings)); first != nil {
		return fail(EventActivePromotionExists, msgActivePromotion, fmt.Sprintf(
			"PromotionRun %s of Application %s is still active; an automated promotion waits for a manual one", first.Name, run.Spec.Application))
	}

	initial := run.Spec.AutomatedPromotion.InitialEnvironment
	walk := promotiongraph.Next(s.graph, initial, stepResults(st))
	if walk.Problem != "" {
		stopGates(&p, s, walk.Problem, now)
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure
		setErrorCondition(st, walk.Problem, now)
		return write(event{corev1.EventTypeWarning, EventGraphInvalid, walk.Problem})
	}
	numbers := map[string]int32{}
	for _, start := range walk.Start {
		numbers[start.Environment] = start.Number
	}

	if st.PromotionStartTime.IsZero() {
		st.PromotionStartTime = now
	}
	var events []event
	var active []string
	// unreadable is the first step that waits on an unreadable pointing record (reportWaiting).
	var unreadable step
	waitingOnDeployments := len(walk.Active) > 0
	// A problem that keeps a step from going on (its Snapshot deleted, its binding's name
	// taken) is reported and waited on, as for a manual run, but only for a timeout: an
	// unattended run must not hold its application's manual runs for ever.
	stuck := func(reason, problem string) plan {
		if since, ok := reportedSince(st, problem); ok {
			if deadline := since.Add(Timeout); now.Time.Before(deadline) {
				p.recheckAfter = deadline.Sub(now.Time)
			} else {
				msg := problem + " " + msgTimedOut
				stopGates(&p, s, msg, now)
				events := stopSteps(st, msg, now)
				st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure
				setErrorCondition(st, msg, now)
				p.writes, p.recheckAfter = nil, 0
				return write(append(events, event{corev1.EventTypeWarning, EventPromotionFailed, msg})...)
			}
		} else {
			p.recheckAfter = Timeout
		}
		recheck := p.recheckAfter
		pl := fail(reason, problem, problem)
		pl.recheckAfter = recheck
		return pl
	}
	for _, env := range walk.Active {
		t := s.targets[env]
		binding, w, problem, reason := bindingFor(run, s.snapshot, env, t)
		if problem != "" {
			return stuck(reason, problem)
		}
		gp := openGate(run, t.gates)
		if done, evs := gp.ended(&p, run, s.snapshot, binding, st, env, numbers[env], now); done {
			events = append(events, evs...)
			waitingOnDeployments = false
			continue
		}
		entering := w.createBinding != nil || binding.Spec.Snapshot != run.Spec.Snapshot
		if held, evs := gp.atEntry(&p, run, t, binding, entering, st, env, numbers[env], now); held {
			events = append(events, evs...)
			waitingOnDeployments = false
			continue
		}
		sp := stepInto(run, s.snapshot, env, numbers[env], binding, w, t, st, now)
		if sp.problem != "" {
			return stuck(sp.problemReason, sp.problem)
		}
		p.writes = append(p.writes, sp.write)
		active = append(active, sp.binding)
		events = append(events, sp.started...)
		if entering {
			// Entered now, perhaps after waiting at its gates or a hold: the step's time, and
			// its timeout, run from here (a hold has no gate status to keep the entry in).
			sp.e.StartTime = now.DeepCopy()
		}
		if handled, evs := gp.atExit(&p, run, s.snapshot, sp.bindingObject, t, sp, env, now); handled {
			events = append(events, evs...)
			waitingOnDeployments = false
			continue
		}
		// Each step has its timeout from its own start (from the moment its gates let it in):
		// a long walk is not one deadline.
		deadline := sp.e.StartTime.Add(Timeout)
		if gp.entry.EnteredTime != nil {
			deadline = gp.entry.EnteredTime.Add(Timeout)
		}
		switch {
		case !now.Time.Before(deadline):
			gp.set(appstudiov1alpha1.GatePhaseStopped, msgTimedOut, now)
			events = append(events, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, msgTimedOut, now)...)
		case sp.waiting != "":
			sp.e.DisplayStatus = sp.waiting
			waitingOnDeployments = waitingOnDeployments && sp.onDeployments
			if sp.unreadable != nil && unreadable.unreadable == nil {
				unreadable = sp
			}
			if left := deadline.Sub(now.Time); p.recheckAfter == 0 || left < p.recheckAfter {
				p.recheckAfter = left
			}
			if gp.gated() {
				gp.set(appstudiov1alpha1.GatePhaseDeploying, sp.waiting, now)
			}
		default:
			gp.set(appstudiov1alpha1.GatePhasePassed, "", now)
			events = append(events, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, msgSucceeded, now)...)
		}
		gp.record(&p)
	}
	if len(active) > 0 {
		st.ActiveBindings = active
	}

	// Where the walk stands after this pass: a level that just succeeded starts the next in the
	// pass that this status write brings.
	after := promotiongraph.Next(s.graph, initial, stepResults(st))
	switch {
	case after.Done && after.Failed:
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure
		msg := failedStepMessage(st)
		// The level's other steps stop where they are: the run no longer follows them.
		stopGates(&p, s, "Stopped: "+msg, now)
		events = append(events, stopSteps(st, "Stopped: "+msg, now)...)
		setErrorCondition(st, msg, now)
		p.recheckAfter = 0
		events = append(events, event{corev1.EventTypeWarning, EventPromotionFailed, msg})
	case after.Done:
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultSuccess
		clearErrorCondition(st, now)
		var envs []string
		for _, e := range st.EnvironmentStatus {
			envs = append(envs, e.EnvironmentName)
		}
		events = append(events, event{corev1.EventTypeNormal, EventPromotionSucceeded, msgAutomatedSucceeded(run.Spec.Snapshot, envs)})
	case len(after.Start) > 0:
		st.State = appstudiov1alpha1.PromotionRunStateActive
		clearErrorCondition(st, now)
	default:
		st.State = appstudiov1alpha1.PromotionRunStateActive
		if waitingOnDeployments {
			st.State = appstudiov1alpha1.PromotionRunStateWaiting
		}
		events = append(events, reportWaiting(st, unreadable, now)...)
	}
	return write(events...)
}

// stepResults reads the walk's results off the run's steps.
func stepResults(st *appstudiov1alpha1.PromotionRunStatus) map[string]promotiongraph.Result {
	results := map[string]promotiongraph.Result{}
	for _, e := range st.EnvironmentStatus {
		switch e.Status {
		case appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess:
			results[e.EnvironmentName] = promotiongraph.Succeeded
		case appstudiov1alpha1.PromotionRunEnvironmentStatusFailed:
			results[e.EnvironmentName] = promotiongraph.Failed
		default:
			results[e.EnvironmentName] = promotiongraph.InProgress
		}
	}
	return results
}

// stopSteps fails the steps still in progress with msg, and returns their Events.
func stopSteps(st *appstudiov1alpha1.PromotionRunStatus, msg string, now metav1.Time) []event {
	var events []event
	for i := range st.EnvironmentStatus {
		if e := &st.EnvironmentStatus[i]; e.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress {
			events = append(events, step{e: e}.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, msg, now)...)
		}
	}
	return events
}

// reportedSince is when st's ErrorOccurred condition began reporting message, if it does.
func reportedSince(st *appstudiov1alpha1.PromotionRunStatus, message string) (metav1.Time, bool) {
	for _, c := range st.Conditions {
		if c.Type == appstudiov1alpha1.PromotionRunConditionErrorOccurred && c.Status == appstudiov1alpha1.PromotionRunConditionStatusTrue &&
			c.Message == message && c.LastTransitionTime != nil {
			return *c.LastTransitionTime, true
		}
	}
	return metav1.Time{}, false
}

// failedStepMessage says which step failed and why.
func failedStepMessage(st *appstudiov1alpha1.PromotionRunStatus) string {
	for _, e := range st.EnvironmentStatus {
		if e.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusFailed {
			return fmt.Sprintf("Step %d (Environment %s) failed: %s", e.Step, e.EnvironmentName, e.DisplayStatus)
		}
	}
	return "Promotion failed."
}

// isAutomated tells an automated PromotionRun from a manual one.
func isAutomated(run *appstudiov1alpha1.PromotionRun) bool {
	return run.Spec.AutomatedPromotion.InitialEnvironment != ""
}

// newerAutomated is the automated PromotionRun, of run's application and initial Environment,
// that promotes a newer Snapshot than run's (the newest such), or nil. Newer is the Snapshot's
// age (snapshotCreated; a Snapshot gone is unknown and supersedes nothing), not the run's: a run
// made late for an older Snapshot must not stop the newest. Snapshots of the same second are
// told apart by their runs' order. Runs from other initial Environments walk other trees and
// are left alone.
func newerAutomated(run *appstudiov1alpha1.PromotionRun, siblings []*appstudiov1alpha1.PromotionRun,
	snapshotCreated map[string]metav1.Time) *appstudiov1alpha1.PromotionRun {
	if _, ok := snapshotCreated[run.Spec.Snapshot]; !ok {
		return nil
	}
	newer := func(a, b *appstudiov1alpha1.PromotionRun) bool { // a's Snapshot is newer than b's
		ta, tb := snapshotCreated[a.Spec.Snapshot], snapshotCreated[b.Spec.Snapshot]
		if !ta.Equal(&tb) {
			return tb.Before(&ta)
		}
		return createdBefore(b, a)
	}
	var newest *appstudiov1alpha1.PromotionRun
	for _, o := range siblings {
		if o.Namespace != run.Namespace || o.Spec.Application != run.Spec.Application || o.Name == run.Name || !isAutomated(o) ||
			o.Spec.AutomatedPromotion.InitialEnvironment != run.Spec.AutomatedPromotion.InitialEnvironment ||
			o.Spec.Snapshot == run.Spec.Snapshot {
			continue
		}
		if _, known := snapshotCreated[o.Spec.Snapshot]; !known || !newer(o, run) {
			continue
		}
		if newest == nil || newer(o, newest) {
			newest = o
		}
	}
	return newest
}

// manualRuns are the manual PromotionRuns among runs.
func manualRuns(runs []*appstudiov1alpha1.PromotionRun) []*appstudiov1alpha1.PromotionRun {
	var out []*appstudiov1alpha1.PromotionRun
	for _, r := range runs {
		if !isAutomated(r) {
			out = append(out, r)
		}
	}
	return out
}
