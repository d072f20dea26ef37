package syncrun

import (
	"fmt"
	"sort"

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
