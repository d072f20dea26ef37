package deploymentpreview

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/recorddiff"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/deploymentrecord"
)

// DiffREST is the deploymentpreviews/diff subresource: the DeploymentRecordDiff of the
// deploymentrecords/diff subresource, created on the preview (the To side: what Git holds),
// From naming a record of the same deployment (what was deployed). As for records, nothing is
// stored and nothing leaves the server: both sides are the stored, redacted manifests.
type DiffREST struct {
	previews, records rest.Getter
	limits            recorddiff.Limits
}

var _ rest.NamedCreater = &DiffREST{}

var diffKind = schema.GroupKind{Group: gitops.GroupName, Kind: "DeploymentRecordDiff"}

// NewDiffREST returns the diff subresource over the previews' and the records' storage.
func NewDiffREST(previews, records rest.Getter) *DiffREST {
	return &DiffREST{previews: previews, records: records, limits: recorddiff.DefaultLimits}
}

// New implements rest.Storage.
func (r *DiffREST) New() runtime.Object { return &gitops.DeploymentRecordDiff{} }

// Destroy implements rest.Storage: the previews' storage is destroyed with them.
func (r *DiffREST) Destroy() {}

// Create implements rest.NamedCreater: name is the preview diffed to.
func (r *DiffREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	_ *metav1.CreateOptions) (runtime.Object, error) {
	req, ok := obj.(*gitops.DeploymentRecordDiff)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a DeploymentRecordDiff: %T", obj))
	}
	if errs := deploymentrecord.ValidateDiffRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(diffKind, name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	obj, err := r.previews.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	preview, ok := obj.(*gitops.DeploymentPreview)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("not a DeploymentPreview: %T", obj))
	}
	obj, err = r.records.Get(ctx, req.From, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewInvalid(diffKind, name, field.ErrorList{field.NotFound(field.NewPath("from"), req.From)})
	} else if err != nil {
		return nil, err
	}
	from, ok := obj.(*gitops.DeploymentRecord)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("not a DeploymentRecord: %T", obj))
	}
	if from.Spec.GitOpsDeploymentName != preview.Spec.GitOpsDeploymentName {
		return nil, apierrors.NewInvalid(diffKind, name, field.ErrorList{field.Invalid(field.NewPath("from"), req.From,
			fmt.Sprintf("records GitOpsDeployment %q, not %q as the preview %s renders", from.Spec.GitOpsDeploymentName,
				preview.Spec.GitOpsDeploymentName, preview.Name))})
	}
	if msg := notRendered(preview); msg != "" {
		return nil, apierrors.NewConflict(gitops.Resource("deploymentpreviews"), preview.Name, fmt.Errorf("%s", msg))
	}
	if msg := deploymentrecord.NoManifests(from.Status.ManifestsDigest, from.Status.ManifestsTruncated); msg != "" {
		return nil, apierrors.NewConflict(gitops.Resource("deploymentrecords"), from.Name, fmt.Errorf("%s", msg))
	}
	resources, truncated, err := recorddiff.Diff(from.Status.Manifests, preview.Status.Manifests, r.limits)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &gitops.DeploymentRecordDiff{
		ObjectMeta: metav1.ObjectMeta{Name: preview.Name, Namespace: preview.Namespace},
		From:       from.Name, To: preview.Name, FromDigest: from.Status.ManifestsDigest, ToDigest: preview.Status.ManifestsDigest,
		Resources: resources, Truncated: truncated,
	}, nil
}

// notRendered says why a preview cannot be diffed, "" when it can.
func notRendered(p *gitops.DeploymentPreview) string {
	switch p.Status.Phase {
	case gitops.DeploymentPreviewRendered:
		return deploymentrecord.NoManifests(p.Status.ManifestsDigest, p.Status.ManifestsTruncated)
	case gitops.DeploymentPreviewFailed:
		return "the agent could not render it: " + p.Status.Message
	}
	return "the agent has not rendered it yet (status.phase is not Rendered)"
}
