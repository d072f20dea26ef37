package repositorycredential

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Kubernetes Events the controller records on a GitOpsDeploymentRepositoryCredential, which is
// all a tenant sees of the check in `kubectl describe`. credentialEvents decides them from the
// conditions last written and the outcome being written, and they are recorded only once that
// write succeeded: a write that fails or conflicts records nothing, and its retry, deciding
// from the same old status, records them once. An unchanged status is never written, so an
// agent that restarts records nothing for what it finds as it was. The other problems of a
// credential are Warnings with their condition's reason.
//
// Messages carry no credentials: no Secret data, and the repository URL loses its userinfo.
const (
	// EventCredentialsRejected (Warning): the Git host (ls-remote: InvalidCredentials) did not
	// accept the credentials, or could not be reached with them. (A ManagedEnvironment whose
	// cluster refuses its credentials carries the same reason.)
	EventCredentialsRejected = "CredentialsRejected"
	// EventCredentialsValidated: the credentials passed ls-remote after a problem had been
	// reported.
	EventCredentialsValidated = "CredentialsValidated"
)

// event is a Kubernetes Event to record on a credential once its status is written.
type event = framework.Event

var normalEvent, warningEvent = framework.NormalEvent, framework.WarningEvent

// recordEvents records evs on obj; nothing when the controller has no recorder (tests).
func (c *Controller) recordEvents(obj runtime.Object, evs []event) {
	framework.RecordEvents(c.recorder, obj, evs)
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
