package syncrun

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Kubernetes Events the controller records on a GitOpsDeploymentSyncRun (its sync also shows on
// the GitOpsDeployment, whose Events are the GitOpsDeployment controller's). planSyncRuns
// decides them from the SyncRun's last written status, and they are recorded only once the
// status write that carries them succeeded: a write that fails or conflicts records nothing,
// and its retry records them once.
const (
	// EventSyncRequested: the agent set the sync operation on the deployment's Application.
	EventSyncRequested = "SyncRequested"
	// EventSyncRefused (Warning): the SyncRun will not be synced (automated deployment, or a
	// deployment created after it).
	EventSyncRefused = "SyncRefused"
	// EventGitOpsDeploymentNotFound (Warning): the SyncRun's deployment does not exist (yet).
	EventGitOpsDeploymentNotFound = "GitOpsDeploymentNotFound"
	// EventSyncSucceeded: the SyncRun's operation ended with phase Succeeded (the same reason as
	// on the GitOpsDeployment).
	EventSyncSucceeded = "SyncSucceeded"
	// EventSyncFailed (Warning): the SyncRun's operation ended otherwise.
	EventSyncFailed = "SyncFailed"
)

// event is a Kubernetes Event to record on a SyncRun once its status is written.
type event = framework.Event

var normalEvent, warningEvent = framework.NormalEvent, framework.WarningEvent

// recordEvents records evs on obj; nothing when the controller has no recorder (tests).
func (c *Controller) recordEvents(obj runtime.Object, evs []event) {
	framework.RecordEvents(c.recorder, obj, evs)
}
