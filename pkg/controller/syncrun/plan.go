package syncrun

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// syncRunWorld is what the agent sees of one GitOpsDeployment key: its SyncRuns, the
// deployment (nil while there is none) and the Applications made for that key (the
// deployment's own, and any left of an earlier deployment of the same name).
type syncRunWorld struct {
	runs         []*managedv1alpha1.GitOpsDeploymentSyncRun
	deployment   *managedv1alpha1.GitOpsDeployment
	applications []*argov1alpha1.Application
}

// syncRunStatus is a SyncRun's new conditions.
type syncRunStatus struct {
	run        *managedv1alpha1.GitOpsDeploymentSyncRun
	conditions []managedv1alpha1.GitOpsDeploymentSyncRunCondition
	// ended is the SyncRun's own operation, when the conditions are its outcome.
	ended *argov1alpha1.OperationState
	// events are recorded on the SyncRun once the conditions are written.
	events []event
}

// syncRunPlan is what to do about one key, in this order: terminate the operations of deleted
// SyncRuns, write the statuses, then either ask for a refresh or start an operation (never
// both, and at most one of each per pass).
type syncRunPlan struct {
	terminate []*argov1alpha1.Application
	statuses  []syncRunStatus
	// automated is set when a SyncRun is refused because the deployment is not manual.
	automated bool
	// app is the deployment's Application, which refresh and start act on.
	app     *argov1alpha1.Application
	refresh *managedv1alpha1.GitOpsDeploymentSyncRun
	start   *managedv1alpha1.GitOpsDeploymentSyncRun
	// nudge is the next request for app's operation, which Argo CD has not started long
	// enough after the agent's last request (stalledStart): the agent writes it on app.
	nudge *syncRequest
	// recheck is when to decide again though nothing changed (0: only when something does).
	recheck time.Duration
}

// syncStartGrace is how long Argo CD may take to start an operation the agent set before the
// agent writes the Application again. Argo CD looks at an Application's operation after each
// pass of its refresh queue, which every update of the Application makes, and starts one in
// well under a second; once (an e2e run, Argo CD 2.14) it had not started one 60 s later, and
// started it at once when the next update of the Application came. Without one, the next pass
// is Argo CD's periodic refresh, up to 3 minutes away. The grace doubles with each nudge, up to
// maxNudgeInterval, so that an Argo CD that never starts it is not written every 15 s.
const (
	syncStartGrace   = 15 * time.Second
	maxNudgeInterval = 3 * time.Minute
)

// syncRequest is what AnnotationSyncRunRequested says: the SyncRun whose operation the agent
// last asked Argo CD for, when, and how many times it has nudged Argo CD since it set it.
type syncRequest struct {
	run    types.UID
	at     time.Time
	nudges int
}

func (r syncRequest) String() string {
	return fmt.Sprintf("%s %s %d", r.run, r.at.UTC().Format(time.RFC3339Nano), r.nudges)
}

func parseSyncRequest(s string) (syncRequest, bool) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return syncRequest{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, f[1])
	n, nerr := strconv.Atoi(f[2])
	if err != nil || nerr != nil || n < 0 {
		return syncRequest{}, false
	}
	return syncRequest{run: types.UID(f[0]), at: at, nudges: n}, true
}

// nudgeAfter is how long after the agent's last request it nudges Argo CD, with nudges made.
func nudgeAfter(nudges int) time.Duration {
	d := syncStartGrace
	for i := 0; i < nudges && d < maxNudgeInterval; i++ {
		d *= 2
	}
	return min(d, maxNudgeInterval)
}

// planSyncRuns decides, from what the agent sees, what to do about the SyncRuns of one
// deployment. It is pure, so every decision can be tested without a cluster.
//
// A SyncRun is, in turn:
//   - waiting: no operation names it yet. It waits for the deployment (while there is none: a
//     SyncRun may be created just before its deployment), for its Application, for earlier
//     SyncRuns (creation order, then name) and for any other operation on the Application.
//   - refreshing: first in line, with the Application free; the agent asked Argo CD for a
//     refresh on its behalf and waits for Argo CD to finish it.
//   - running: the Application's operation names it.
//   - finished: its ErrorOccurred condition holds its outcome: False on success, True with a
//     message when the sync failed or was refused. A finished SyncRun is never synced again.
//
// A SyncRun is refused for good (finished with an error) when its deployment is not manual, or
// when its deployment was created after it: a SyncRun never carries over to a new deployment
// of the same name.
func planSyncRuns(w syncRunWorld, now metav1.Time) syncRunPlan {
	var plan syncRunPlan
	depl := w.deployment

	live := map[types.UID]bool{}
	var runs []*managedv1alpha1.GitOpsDeploymentSyncRun
	for _, r := range w.runs {
		if r.DeletionTimestamp == nil {
			live[r.UID] = true
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		ti, tj := runs[i].CreationTimestamp, runs[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return runs[i].Name < runs[j].Name
	})

	for _, app := range w.applications {
		// A running operation started for a SyncRun that is gone is stopped. One only
		// requested is left until Argo CD has started it (and its state names it): Argo CD
		// terminates only what runs.
		if app.Operation == nil {
			continue
		}
		uid := syncRunOf(app.Operation.Info)
		if uid == "" || live[uid] {
			continue
		}
		if st := app.Status.OperationState; st != nil && st.Phase == phaseRunning && syncRunOf(st.Operation.Info) == uid {
			plan.terminate = append(plan.terminate, app)
		}
	}

	if depl != nil {
		for _, app := range w.applications {
			if app.Labels[argocd.LabelDeploymentUID] == string(depl.UID) && app.DeletionTimestamp == nil {
				plan.app = app
			}
		}
	}
	app := plan.app
	var running types.UID
	var done *argov1alpha1.OperationState
	if app != nil {
		if app.Operation != nil {
			running = syncRunOf(app.Operation.Info)
		}
		// The state of a completed operation stays on the Application until the next one
		// starts, even while that next one is only requested.
		if st := app.Status.OperationState; st != nil && st.Phase.Completed() {
			done = st
		}
	}

	var waiting []*managedv1alpha1.GitOpsDeploymentSyncRun
	for _, r := range runs {
		if syncRunFinished(r) {
			continue
		}
		var want *managedv1alpha1.GitOpsDeploymentSyncRunCondition
		var ended *argov1alpha1.OperationState
		var evs []event
		switch {
		case depl == nil:
			want = syncRunError(syncRunMissingDeployment(r))
			evs = append(evs, warningEvent(EventGitOpsDeploymentNotFound, "%s", want.Message))
		case r.UID == running:
			// Running: nothing to report until it ends.
		case done != nil && r.UID == syncRunOf(done.Operation.Info):
			want, ended = syncRunOutcome(done), done
			evs = append(evs, syncRunOutcomeEvent(r, done))
		case r.CreationTimestamp.Before(&depl.CreationTimestamp):
			want = syncRunError(syncRunDeploymentNewer(r))
			evs = append(evs, warningEvent(EventSyncRefused, "%s", want.Message))
		case depl.Spec.Type != managedv1alpha1.GitOpsDeploymentSpecTypeManual:
			want = syncRunError(syncRunAutomated(r))
			evs = append(evs, warningEvent(EventSyncRefused, "%s", want.Message))
			plan.automated = true
		default:
			waiting = append(waiting, r)
		}
		if conds, changed := syncRunConditions(r.Status.Conditions, want, now); changed {
			plan.statuses = append(plan.statuses, syncRunStatus{run: r, conditions: conds, ended: ended, events: evs})
		}
	}

	if running != "" {
		// Whether its SyncRun still exists or not: the next SyncRun waits for it either way.
		plan.nudge, plan.recheck = stalledStart(app, running, now)
	}
	if app == nil || app.Operation != nil || len(waiting) == 0 {
		return plan
	}
	next := waiting[0]
	switch {
	case app.Annotations[AnnotationSyncRunRefresh] != string(next.UID):
		plan.refresh = next
	case app.Annotations[annotationArgoRefresh] != "":
		// Argo CD removes the annotation once it has refreshed; that update brings us back.
	default:
		plan.start = next
	}
	return plan
}

// stalledStart decides about the operation set on app for the SyncRun run: nothing once Argo CD
// has started it (its operationState names run); otherwise the agent's next request once
// nudgeAfter has passed since its last, and when to look again. An operation without the
// agent's request for it (set by an agent before the request was written) is left alone.
func stalledStart(app *argov1alpha1.Application, run types.UID, now metav1.Time) (*syncRequest, time.Duration) {
	if st := app.Status.OperationState; st != nil && syncRunOf(st.Operation.Info) == run {
		return nil, 0
	}
	last, ok := parseSyncRequest(app.Annotations[AnnotationSyncRunRequested])
	if !ok || last.run != run {
		return nil, 0
	}
	wait := nudgeAfter(last.nudges)
	if app.Annotations[annotationArgoRefresh] != "" {
		// A refresh Argo CD has not done yet: its pass of the refresh queue is still to come.
		return nil, wait
	}
	// A request ahead of this agent's clock (another agent's, with a clock ahead) counts as now.
	if waited := max(0, now.Sub(last.at)); waited < wait {
		return nil, wait - waited
	}
	next := syncRequest{run: run, at: now.Time, nudges: last.nudges + 1}
	return &next, nudgeAfter(next.nudges)
}

// syncRunFinished tells whether a SyncRun's outcome is recorded. Every ErrorOccurred condition
// the agent writes is final except the one for a deployment that does not exist (yet).
func syncRunFinished(r *managedv1alpha1.GitOpsDeploymentSyncRun) bool {
	c := findSyncRunCondition(r.Status.Conditions)
	if c == nil {
		return false
	}
	switch c.Status {
	case managedv1alpha1.GitOpsConditionStatusFalse:
		return true
	case managedv1alpha1.GitOpsConditionStatusTrue:
		return c.Message != syncRunMissingDeployment(r)
	}
	return false
}

// syncRunOutcome is the condition a completed operation leaves: the reference's success (False,
// empty reason and message), or the error with Argo CD's message.
func syncRunOutcome(st *argov1alpha1.OperationState) *managedv1alpha1.GitOpsDeploymentSyncRunCondition {
	if st.Phase == phaseSucceeded {
		return &managedv1alpha1.GitOpsDeploymentSyncRunCondition{
			Type:   managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred,
			Status: managedv1alpha1.GitOpsConditionStatusFalse,
		}
	}
	return syncRunError(fmt.Sprintf("the sync operation ended with phase %s: %s", st.Phase, st.Message))
}

// syncRunOutcomeEvent is the Event of run's completed operation.
func syncRunOutcomeEvent(run *managedv1alpha1.GitOpsDeploymentSyncRun, st *argov1alpha1.OperationState) event {
	rev := run.Spec.RevisionID
	if st.SyncResult != nil && st.SyncResult.Revision != "" {
		rev = st.SyncResult.Revision
	}
	if rev == "" {
		rev = "its target revision"
	} else {
		rev = "revision " + rev
	}
	if st.Phase == phaseSucceeded {
		return normalEvent(EventSyncSucceeded, "Argo CD synced GitOpsDeployment %s to %s: %s", run.Spec.GitopsDeploymentName, rev, st.Message)
	}
	return warningEvent(EventSyncFailed, "Argo CD's sync of GitOpsDeployment %s to %s ended with phase %s: %s",
		run.Spec.GitopsDeploymentName, rev, st.Phase, st.Message)
}

func syncRunError(msg string) *managedv1alpha1.GitOpsDeploymentSyncRunCondition {
	return &managedv1alpha1.GitOpsDeploymentSyncRunCondition{
		Type:    managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred,
		Status:  managedv1alpha1.GitOpsConditionStatusTrue,
		Reason:  managedv1alpha1.SyncRunReasonErrorOccurred,
		Message: msg,
	}
}

// syncRunConditions is the conditions list with the ErrorOccurred condition set to want (nil:
// none), and whether that changes anything. An unchanged condition keeps its timestamp.
func syncRunConditions(cur []managedv1alpha1.GitOpsDeploymentSyncRunCondition, want *managedv1alpha1.GitOpsDeploymentSyncRunCondition, now metav1.Time) ([]managedv1alpha1.GitOpsDeploymentSyncRunCondition, bool) {
	c := findSyncRunCondition(cur)
	if want == nil {
		if c == nil {
			return cur, false
		}
		var out []managedv1alpha1.GitOpsDeploymentSyncRunCondition
		for _, x := range cur {
			if x.Type != managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred {
				out = append(out, x)
			}
		}
		return out, true
	}
	if c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
		return cur, false
	}
	nc := *want
	nc.LastTransitionTime = &now
	var out []managedv1alpha1.GitOpsDeploymentSyncRunCondition
	for _, x := range cur {
		if x.Type != managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred {
			out = append(out, x)
		}
	}
	return append(out, nc), true
}

func findSyncRunCondition(conds []managedv1alpha1.GitOpsDeploymentSyncRunCondition) *managedv1alpha1.GitOpsDeploymentSyncRunCondition {
	for i := range conds {
		if conds[i].Type == managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred {
			return &conds[i]
		}
	}
	return nil
}
