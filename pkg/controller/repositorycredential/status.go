package repositorycredential

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// credentialOutcome is what checking a GitOpsDeploymentRepositoryCredential found: a
// RepositoryCredentialReason*, RepositoryCredentialUpToDate when the credentials work, and for
// a repository that does not exist, git's words.
type credentialOutcome struct {
	Reason string
	Detail string
}

var credentialValid = credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonRepositoryCredentialUpToDate}

func (o credentialOutcome) valid() bool { return o == credentialValid }

// outcomeOfLsRemote classifies the result of lsRemote as the original did: an error saying
// "not found" means the repository does not exist, any other failure means the credentials are
// wrong. An error that is not git's (no git binary, no temporary folder) is the agent's, to be
// retried, and comes back as an error.
func outcomeOfLsRemote(err error) (credentialOutcome, error) {
	switch {
	case err == nil:
		return credentialValid, nil
	case !errors.Is(err, errGitFailed):
		return credentialOutcome{}, err
	case strings.Contains(err.Error(), "not found"):
		detail := strings.TrimPrefix(err.Error(), errGitFailed.Error()+": ")
		return credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonInvalidRepositoryURL, Detail: detail}, nil
	default:
		return credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonInvalidCredentials}, nil
	}
}

// credentialConditions are the three conditions of the reference's matrix (§1.3) for an
// outcome: ErrorOccurred, ValidRepositoryURL and ValidRepositoryCredential, in that order.
func credentialConditions(spec managedv1alpha1.RepositoryCredentialSpec, o credentialOutcome) []metav1.Condition {
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	const (
		errType   = managedv1alpha1.RepositoryCredentialConditionErrorOccurred
		urlType   = managedv1alpha1.RepositoryCredentialConditionValidRepositoryURL
		credType  = managedv1alpha1.RepositoryCredentialConditionValidRepositoryCredential
		validURL  = managedv1alpha1.RepositoryCredentialReasonValidRepositoryURL
		upToDate  = managedv1alpha1.RepositoryCredentialReasonRepositoryCredentialUpToDate
		badCreds  = managedv1alpha1.RepositoryCredentialReasonInvalidCredentials
		urlExists = "Repository %s exists"
	)
	// The Secret problems and a missing repository make all three say the same.
	same := func(msg string) []metav1.Condition {
		return []metav1.Condition{
			cond(errType, metav1.ConditionTrue, o.Reason, msg),
			cond(urlType, metav1.ConditionFalse, o.Reason, msg),
			cond(credType, metav1.ConditionFalse, o.Reason, msg),
		}
	}
	switch o.Reason {
	case managedv1alpha1.RepositoryCredentialReasonSecretNotSpecified:
		return same("Secret field is missing value")
	case managedv1alpha1.RepositoryCredentialReasonSecretNotFound:
		return same("Secret specified not found")
	case managedv1alpha1.RepositoryCredentialReasonSecretInvalidType:
		return same("Secret has an invalid type, must be " + managedv1alpha1.RepositoryCredentialSecretType)
	case managedv1alpha1.RepositoryCredentialReasonInvalidRepositoryURL:
		return same("Repository does not exist: " + o.Detail)
	case badCreds:
		msg := fmt.Sprintf("Repository Credentials provided %s for Repository %s are invalid", spec.Secret, spec.Repository)
		return []metav1.Condition{
			cond(errType, metav1.ConditionTrue, badCreds, msg),
			cond(urlType, metav1.ConditionTrue, validURL, fmt.Sprintf(urlExists, spec.Repository)),
			cond(credType, metav1.ConditionFalse, badCreds, msg),
		}
	default:
		return []metav1.Condition{
			cond(errType, metav1.ConditionFalse, upToDate, "RepositoryCredentials are Valid"),
			cond(urlType, metav1.ConditionTrue, validURL, fmt.Sprintf(urlExists, spec.Repository)),
			cond(credType, metav1.ConditionTrue, upToDate,
				fmt.Sprintf("Repository Credentials provided %s for Repository %s are valid", spec.Secret, spec.Repository)),
		}
	}
}

// withCredentialConditions is cur with the conditions of an outcome set. A condition whose
// status does not change keeps its transition time, so an unchanged outcome gives back an equal
// list and costs no write.
func withCredentialConditions(cur []metav1.Condition, spec managedv1alpha1.RepositoryCredentialSpec, o credentialOutcome,
	generation int64, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(cur))
	for i := range cur {
		cur[i].DeepCopyInto(&out[i])
	}
	for _, c := range credentialConditions(spec, o) {
		c.ObservedGeneration, c.LastTransitionTime = generation, now
		meta.SetStatusCondition(&out, c)
	}
	return out
}
