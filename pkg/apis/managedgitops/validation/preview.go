package validation

import (
	"strings"
	"unicode"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// ValidateDeploymentPreview checks a DeploymentPreview on create.
func ValidateDeploymentPreview(obj *gitops.DeploymentPreview) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("gitOpsDeploymentName"), obj.Spec.GitOpsDeploymentName, true)...)
	return append(errs, validateRevision(specPath.Child("revision"), obj.Spec.Revision)...)
}

// ValidateDeploymentPreviewUpdate checks a DeploymentPreview on update: its spec never changes,
// since its status is the rendering of that spec (a new question is a new preview).
func ValidateDeploymentPreviewUpdate(obj, old *gitops.DeploymentPreview) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.GitOpsDeploymentName, old.Spec.GitOpsDeploymentName,
		specPath.Child("gitOpsDeploymentName"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Revision, old.Spec.Revision, specPath.Child("revision"))...)
}

// ValidateDeploymentPreviewStatusUpdate checks the agent's write of a preview's status.
func ValidateDeploymentPreviewStatusUpdate(obj, old *gitops.DeploymentPreview) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	st := &obj.Status
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("phase"), st.Phase, false,
		gitops.DeploymentPreviewPending, gitops.DeploymentPreviewRendered, gitops.DeploymentPreviewFailed)...)
	if st.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("observedGeneration"), st.ObservedGeneration, "must not be negative"))
	}
	if len(st.Revision) > MaxHoldRevisionLength {
		errs = append(errs, field.TooLong(statusPath.Child("revision"), "", MaxHoldRevisionLength))
	}
	return errs
}

// validateRevision checks a branch, tag or commit as a hold's revision is checked, but optional.
func validateRevision(p *field.Path, rev string) field.ErrorList {
	switch {
	case len(rev) > MaxHoldRevisionLength:
		return field.ErrorList{field.TooLong(p, "", MaxHoldRevisionLength)}
	case strings.IndexFunc(rev, unicode.IsSpace) >= 0:
		return field.ErrorList{field.Invalid(p, rev, "must not contain whitespace")}
	}
	return nil
}
