package managedenvironment

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Kubernetes Events the controller records on a GitOpsDeploymentManagedEnvironment, which is
// all a tenant sees of its cluster's answer in `kubectl describe`. environmentEvents decides
// them from the conditions last written and those being written, and they are recorded only
// once that write succeeded: a write that fails or conflicts records nothing, and its retry,
// deciding from the same old status, records them once. An unchanged status is never written,
// so an agent that restarts records nothing for what it finds as it was. The other problems of
// an environment are Warnings with their condition's reason.
const (
	// EventCredentialsRejected (Warning): the cluster (UnableToValidateClusterCredentials) did
	// not accept the credentials, or could not be reached with them (the same reason as
	// repositorycredential.EventCredentialsRejected, for a Git host).
	EventCredentialsRejected = "CredentialsRejected"
	// EventCredentialsAccepted: the cluster accepted the environment's credentials after a
	// problem had been reported.
	EventCredentialsAccepted = "CredentialsAccepted"
)

// event is a Kubernetes Event to record on an environment once its status is written.
type event = framework.Event

var normalEvent, warningEvent = framework.NormalEvent, framework.WarningEvent

// recordEvents records evs on obj; nothing when the controller has no recorder (tests).
func (e *Controller) recordEvents(obj runtime.Object, evs []event) {
	framework.RecordEvents(e.recorder, obj, evs)
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
