package validation

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// Bounds of a GitOpsDeploymentHold.
const (
	// MaxHoldRevisionLength bounds spec.revision: a SHA-256 commit is 64 characters, a branch
	// or tag name rarely more than a few dozen; Argo CD has no bound of its own.
	MaxHoldRevisionLength = 255
	// MaxHoldReasonLength bounds spec.reason, in characters.
	MaxHoldReasonLength = 1024
)

// ValidateGitOpsDeploymentHold checks a GitOpsDeploymentHold on create. It is named after the
// GitOpsDeployment it holds, so the same name rule applies.
func ValidateGitOpsDeploymentHold(obj *gitops.GitOpsDeploymentHold) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	return append(errs, validateGitOpsDeploymentHoldSpec(&obj.Spec)...)
}

// ValidateGitOpsDeploymentHoldUpdate checks a GitOpsDeploymentHold on update: the revision and
// reason may change (held elsewhere, a better reason); heldBy is kept by the strategy.
func ValidateGitOpsDeploymentHoldUpdate(obj, old *gitops.GitOpsDeploymentHold) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateGitOpsDeploymentHoldSpec(&obj.Spec)...)
}

// ValidateGitOpsDeploymentHoldStatusUpdate checks the agent's write of a hold's status.
func ValidateGitOpsDeploymentHoldStatusUpdate(obj, old *gitops.GitOpsDeploymentHold) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	if obj.Status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("observedGeneration"), obj.Status.ObservedGeneration, "must not be negative"))
	}
	if len(obj.Status.BaseRevision) > MaxHoldRevisionLength {
		errs = append(errs, field.TooLong(statusPath.Child("baseRevision"), "", MaxHoldRevisionLength))
	}
	return errs
}

func validateGitOpsDeploymentHoldSpec(spec *gitops.GitOpsDeploymentHoldSpec) field.ErrorList {
	var errs field.ErrorList
	rev := specPath.Child("revision")
	switch {
	case spec.Revision == "":
		errs = append(errs, field.Required(rev, "the commit to hold the deployment at"))
	case len(spec.Revision) > MaxHoldRevisionLength:
		errs = append(errs, field.TooLong(rev, "", MaxHoldRevisionLength))
	case strings.IndexFunc(spec.Revision, unicode.IsSpace) >= 0:
		errs = append(errs, field.Invalid(rev, spec.Revision, "must not contain whitespace"))
	}
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("deploymentRecord"), spec.DeploymentRecord, false)...)
	if utf8.RuneCountInString(spec.Reason) > MaxHoldReasonLength {
		e := field.TooLong(specPath.Child("reason"), "", MaxHoldReasonLength)
		e.Detail = fmt.Sprintf("must have at most %d characters", MaxHoldReasonLength)
		errs = append(errs, e)
	}
	switch spec.ReleaseOn {
	case "", gitops.HoldReleaseManual, gitops.HoldReleaseNewCommit:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("releaseOn"), spec.ReleaseOn,
			[]string{string(gitops.HoldReleaseManual), string(gitops.HoldReleaseNewCommit)}))
	}
	return errs
}
