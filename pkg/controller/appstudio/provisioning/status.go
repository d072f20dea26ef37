package provisioning

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// ConditionProvisioned is a claim's condition of its provisioner: True once its target is
// provisioned, False with the reason while it cannot be. The reference's ErrorOccurred is the
// binder's, which rewrites it on every sync of the claim: two writers of one condition would
// undo each other.
const ConditionProvisioned = "Provisioned"

// ReasonProvisioningFailed: a write of the provisioner failed for another reason than a stale
// cache.
const ReasonProvisioningFailed = "ProvisioningFailed"

// fieldManager is the field manager of the agent's writes.
const fieldManager = "gitops-service-agent"

// Condition is the Provisioned condition to write on claim, nil when the claim has it already
// (for this generation).
func Condition(claim *appstudiov1alpha1.DeploymentTargetClaim, status metav1.ConditionStatus, reason, message string,
	now time.Time) *metav1.Condition {
	if old := meta.FindStatusCondition(claim.Status.Conditions, ConditionProvisioned); old != nil &&
		old.Status == status && old.Reason == reason && old.Message == message && old.ObservedGeneration == claim.Generation {
		return nil
	}
	return &metav1.Condition{Type: ConditionProvisioned, Status: status, Reason: reason, Message: message,
		ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(now)}
}

// ReportFailure sets claim's Provisioned condition to a failed write, with a Warning Event,
// so that no failure is a silent stall; the caller returns the error to its queue, which
// retries. A conflict or an object that exists already only means a stale cache, and a claim
// gone or going has no one to tell.
func ReportFailure(ctx context.Context, gitops versioned.Interface, recorder record.EventRecorder,
	claim *appstudiov1alpha1.DeploymentTargetClaim, cause error, now time.Time) {
	if apierrors.IsConflict(cause) || apierrors.IsAlreadyExists(cause) || claim == nil || claim.DeletionTimestamp != nil {
		return
	}
	msg := framework.Redact(cause.Error())
	if old := meta.FindStatusCondition(claim.Status.Conditions, ConditionProvisioned); old != nil &&
		old.Status == metav1.ConditionFalse && old.Reason == ReasonProvisioningFailed && old.Message == msg {
		return
	}
	upd := claim.DeepCopy()
	meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{Type: ConditionProvisioned, Status: metav1.ConditionFalse,
		Reason: ReasonProvisioningFailed, Message: msg, ObservedGeneration: claim.Generation, LastTransitionTime: metav1.NewTime(now)})
	if _, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(claim.Namespace).UpdateStatus(ctx, upd,
		metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		klog.V(4).InfoS("could not report a failure on the claim", "claim", klog.KObj(claim), "err", err)
		return
	}
	recorder.Event(claim, corev1.EventTypeWarning, ReasonProvisioningFailed, msg)
}

// MissingAccess asks the API server, by SelfSubjectAccessReviews, which of the rights the
// agent lacks, as kubectl auth can-i names them ("create serviceaccounts/token deployer").
func MissingAccess(ctx context.Context, kube kubernetes.Interface, rights []authorizationv1.ResourceAttributes) ([]string, error) {
	var missing []string
	for _, attrs := range rights {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("asking for the agent's rights: %w", err)
		}
		if !got.Status.Allowed {
			missing = append(missing, describe(attrs))
		}
	}
	return missing, nil
}

func describe(a authorizationv1.ResourceAttributes) string {
	resource := a.Resource
	if a.Group != "" {
		resource += "." + a.Group
	}
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Name != "" {
		resource += " " + a.Name
	}
	return a.Verb + " " + resource
}

// Lacks is the error of a provisioner that lacks rights.
func Lacks(provisioner, what string, missing []string) error {
	return fmt.Errorf("the %s lacks %s, in every namespace: %s", provisioner, what, strings.Join(missing, ", "))
}
