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
	req, err := deploymentrecord.DiffRequest(ctx, name, obj, createValidation)
	if err != nil {
		return nil, err
	}
	obj, err = r.previews.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	preview, ok := obj.(*gitops.DeploymentPreview)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("not a DeploymentPreview: %T", obj))
	}
	from, err := deploymentrecord.FromRecord(ctx, r.records, name, req.From)
	if err != nil {
		return nil, err
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
	return deploymentrecord.DiffResult(from, preview.ObjectMeta, preview.Status.ManifestsDigest, preview.Status.Manifests, r.limits)
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
