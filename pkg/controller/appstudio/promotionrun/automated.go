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

	if newer := newerAutomated(run, s.siblings); newer != nil {
		msg := msgSuperseded(newer.Name, newer.Spec.Snapshot)
		var events []event
		for i := range st.EnvironmentStatus {
			if e := &st.EnvironmentStatus[i]; e.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress {
				events = append(events, step{e: e}.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, msg, now)...)
			}
		}
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
	for _, env := range walk.Active {
		t := s.targets[env]
		binding, w, problem, reason := bindingFor(run, s.snapshot, env, t)
		if problem != "" {
			return fail(reason, problem, problem)
		}
		sp := stepInto(run, s.snapshot, env, numbers[env], binding, w, t, st, now)
		if sp.problem != "" {
			return fail(sp.problemReason, sp.problem, sp.problem)
		}
		p.writes = append(p.writes, sp.write)
		active = append(active, sp.binding)
		events = append(events, sp.started...)
		// Each step has its timeout from its own start: a long walk is not one deadline.
		deadline := sp.e.StartTime.Add(Timeout)
		switch {
		case !now.Time.Before(deadline):
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
		default:
			events = append(events, sp.end(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, msgSucceeded, now)...)
		}
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

// newerAutomated is an automated PromotionRun of run's application, of another Snapshot,
// created after run (the newest such), or nil.
func newerAutomated(run *appstudiov1alpha1.PromotionRun, siblings []*appstudiov1alpha1.PromotionRun) *appstudiov1alpha1.PromotionRun {
	var newest *appstudiov1alpha1.PromotionRun
	for _, o := range siblings {
		if o.Namespace != run.Namespace || o.Spec.Application != run.Spec.Application || o.Name == run.Name ||
			!isAutomated(o) || o.Spec.Snapshot == run.Spec.Snapshot || !createdBefore(run, o) {
			continue
		}
		if newest == nil || createdBefore(newest, o) {
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
