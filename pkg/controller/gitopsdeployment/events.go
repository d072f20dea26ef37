package gitopsdeployment

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Kubernetes Events the agent records on the tenant's objects, which is all a tenant sees of
// Argo CD in `kubectl describe`. Each is decided by a pure function from the status the agent
// last wrote and the one it is writing (deploymentEvents; a SyncRun's are the SyncRun
// controller's, pkg/controller/syncrun, a ManagedEnvironment's the ManagedEnvironment
// controller's, pkg/controller/managedenvironment, and a RepositoryCredential's the
// RepositoryCredential controller's, pkg/controller/repositorycredential), and recorded only once
// that write succeeded: a write that fails or conflicts records nothing, and its retry,
// deciding from the same old status, records the Events once. An unchanged status is never written, so an agent that restarts
// records nothing for what it finds as it was.
//
// Messages carry no credentials: no Secret data, and URLs lose their userinfo (redact).

// Event reasons on a GitOpsDeployment.
const (
	// EventSyncStarted: Argo CD began an operation (a new operationState, by its startedAt).
	EventSyncStarted = "SyncStarted"
	// EventSyncSucceeded: the operation ended with phase Succeeded.
	EventSyncSucceeded = "SyncSucceeded"
	// EventSyncFailed (Warning): the operation ended with phase Failed or Error.
	EventSyncFailed = "SyncFailed"
	// EventHealthDegraded (Warning): health became Degraded.
	EventHealthDegraded = "HealthDegraded"
	// EventHealthRecovered: health went from Degraded back to Healthy.
	EventHealthRecovered = "HealthRecovered"
)

// event is a Kubernetes Event to record on an object once its status is written.
type event = framework.Event

var normalEvent, warningEvent = framework.NormalEvent, framework.WarningEvent

// recordEvents records evs on obj; nothing when the Controller has no recorder (tests).
func (c *Controller) recordEvents(obj runtime.Object, evs []event) {
	if c.recorder != nil {
		framework.RecordEvents(c.recorder, obj, evs)
	}
}

// deploymentEvents are the Events of a GitOpsDeployment whose status goes from old to new;
// wasDegraded says that its health was Degraded since it was last Healthy, before old.
func deploymentEvents(old, new managedv1alpha1.GitOpsDeploymentStatus, wasDegraded bool) []event {
	var evs []event
	if op := new.OperationState; op != nil {
		prev := old.OperationState
		started := prev == nil || !prev.StartedAt.Equal(&op.StartedAt)
		if started {
			by := "initiated by Argo CD"
			switch ib := op.Operation.InitiatedBy; {
			case ib.Automated:
				by = "automated sync policy"
			case ib.Username != "":
				by = "initiated by " + ib.Username // gitops-service for a SyncRun's
			}
			evs = append(evs, normalEvent(EventSyncStarted, "Argo CD started a sync to %s (%s)", revisionOf(op, false), by))
		}
		if started || prev.Phase != op.Phase {
			switch op.Phase {
			case managedv1alpha1.OperationPhaseSucceeded:
				evs = append(evs, normalEvent(EventSyncSucceeded, "Argo CD synced %s: %s", revisionOf(op, true), op.Message))
			case managedv1alpha1.OperationPhaseFailed, managedv1alpha1.OperationPhaseError:
				evs = append(evs, warningEvent(EventSyncFailed, "Argo CD's sync to %s ended with phase %s: %s", revisionOf(op, true), op.Phase, op.Message))
			}
		}
	}
	oh, nh := old.Health.Status, new.Health.Status
	switch {
	case oh == nh:
	case nh == managedv1alpha1.HealthStatusCodeDegraded:
		// Not Missing: Argo CD reports it for every resource added in Git until the sync
		// creates it, so it would warn at each such commit.
		msg := fmt.Sprintf("Health of the deployed resources is %s (was %s)", nh, healthName(oh))
		if new.Health.Message != "" {
			msg += ": " + new.Health.Message
		}
		evs = append(evs, warningEvent(EventHealthDegraded, "%s", msg))
	case nh == managedv1alpha1.HealthStatusCodeHealthy && (oh == managedv1alpha1.HealthStatusCodeDegraded || wasDegraded):
		evs = append(evs, normalEvent(EventHealthRecovered, "Health of the deployed resources is Healthy again (was %s)", healthName(oh)))
	}
	return evs
}

// revisionOf names the revision of an operation: the one it synced, once known (result), or
// the one it was asked for.
func revisionOf(op *managedv1alpha1.OperationState, result bool) string {
	rev := ""
	if result && op.SyncResult != nil {
		rev = op.SyncResult.Revision
	}
	if rev == "" && op.Operation.Sync != nil {
		rev = op.Operation.Sync.Revision
	}
	if rev == "" {
		return "the target revision"
	}
	return "revision " + rev
}

func healthName(h managedv1alpha1.HealthStatusCode) string {
	if h == "" {
		return "unknown"
	}
	return string(h)
}
