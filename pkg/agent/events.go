package agent

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Kubernetes Events the agent records on the tenant's objects, which is all a tenant sees of
// Argo CD in `kubectl describe`. Each is decided by a pure function from the status the agent
// last wrote and the one it is writing (deploymentEvents, environmentEvents, credentialEvents;
// a SyncRun's are the SyncRun controller's, pkg/controller/syncrun), and recorded only once
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

// Event reasons on a GitOpsDeploymentManagedEnvironment and a
// GitOpsDeploymentRepositoryCredential. The other problems of either are Warnings with their
// condition's reason.
const (
	// EventCredentialsRejected (Warning): the cluster (UnableToValidateClusterCredentials) or
	// the Git host (ls-remote: InvalidCredentials) did not accept the credentials, or could
	// not be reached with them.
	EventCredentialsRejected = "CredentialsRejected"
	// EventCredentialsAccepted: a ManagedEnvironment's cluster accepted its credentials after
	// a problem had been reported.
	EventCredentialsAccepted = "CredentialsAccepted"
	// EventCredentialsValidated: a RepositoryCredential's credentials passed ls-remote after a
	// problem had been reported.
	EventCredentialsValidated = "CredentialsValidated"
)

// event is a Kubernetes Event to record on an object once its status is written.
type event = framework.Event

var normalEvent, warningEvent = framework.NormalEvent, framework.WarningEvent

// recordEvents records evs on obj; nothing when the Agent has no recorder (tests).
func (a *Agent) recordEvents(obj runtime.Object, evs []event) {
	if a.events != nil {
		framework.RecordEvents(a.events.Recorder, obj, evs)
	}
}

// deploymentEvents are the Events of a GitOpsDeployment whose status goes from old to new.
func deploymentEvents(old, new managedv1alpha1.GitOpsDeploymentStatus) []event {
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
	case nh == managedv1alpha1.HealthStatusCodeHealthy && oh == managedv1alpha1.HealthStatusCodeDegraded:
		evs = append(evs, normalEvent(EventHealthRecovered, "Health of the deployed resources is Healthy again (was %s)", oh))
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

// environmentEvents are the Events of a ManagedEnvironment whose conditions go from
// env.Status.Conditions to conds: a new problem of its connection (a Warning; the cluster
// refusing or not answering is EventCredentialsRejected), or success after a problem.
func environmentEvents(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, conds []metav1.Condition) []event {
	typ := managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded
	oc, nc := meta.FindStatusCondition(env.Status.Conditions, typ), meta.FindStatusCondition(conds, typ)
	if nc == nil || (oc != nil && oc.Status == nc.Status && oc.Reason == nc.Reason && oc.Message == nc.Message) {
		return nil
	}
	if nc.Status == metav1.ConditionTrue {
		if oc == nil || oc.Status == metav1.ConditionTrue {
			return nil
		}
		return []event{normalEvent(EventCredentialsAccepted,
			"The cluster accepted the credentials of Secret %s again: the environment is connected", env.Spec.ClusterCredentialsSecret)}
	}
	reason, msg := nc.Reason, nc.Message
	switch managedv1alpha1.ManagedEnvironmentConditionReason(reason) {
	case managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials:
		reason = EventCredentialsRejected
	case managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData:
		// A parser's error may quote the Secret's data.
		if strings.HasPrefix(msg, "unable to parse kubeconfig data:") {
			msg = "unable to parse the kubeconfig data of Secret " + env.Spec.ClusterCredentialsSecret
		}
	}
	return []event{warningEvent(reason, "%s", msg)}
}

// credentialEvents are the Events of a RepositoryCredential checked with outcome o: a new
// problem (a Warning; credentials that ls-remote refused are EventCredentialsRejected), or
// valid credentials after a problem.
func credentialEvents(cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential, o credentialOutcome) []event {
	oc := meta.FindStatusCondition(cred.Status.Conditions, managedv1alpha1.RepositoryCredentialConditionErrorOccurred)
	nc := credentialConditions(cred.Spec, o)[0] // ErrorOccurred
	if oc != nil && oc.Status == nc.Status && oc.Reason == nc.Reason && oc.Message == nc.Message {
		return nil
	}
	repo := anonymousURL(cred.Spec.Repository)
	switch o.Reason {
	case credentialValid.Reason:
		if oc == nil || oc.Status != metav1.ConditionTrue {
			return nil
		}
		return []event{normalEvent(EventCredentialsValidated, "git ls-remote accepted the credentials of Secret %s for repository %s", cred.Spec.Secret, repo)}
	case managedv1alpha1.RepositoryCredentialReasonInvalidCredentials:
		// ls-remote tells no more than that it failed: the host refused the credentials, or
		// could not be reached or trusted (argocd-tls-certs-cm, argocd-ssh-known-hosts-cm).
		return []event{warningEvent(EventCredentialsRejected,
			"git ls-remote of repository %s with the credentials of Secret %s failed: the Git host refused them, or could not be reached or trusted",
			repo, cred.Spec.Secret)}
	case managedv1alpha1.RepositoryCredentialReasonInvalidRepositoryURL:
		return []event{warningEvent(o.Reason, "Repository %s does not exist: %s", repo, o.Detail)}
	default:
		return []event{warningEvent(o.Reason, "%s (Secret %s)", nc.Message, cred.Spec.Secret)}
	}
}
