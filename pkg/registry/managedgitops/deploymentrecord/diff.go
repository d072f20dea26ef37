package deploymentrecord

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/recorddiff"
)

// DiffREST is the deploymentrecords/diff subresource: a client creates a DeploymentRecordDiff
// on the record it diffs to, naming the record it diffs from, and gets it back filled in, as
// serviceaccounts/token answers a TokenRequest. A create, not a get with a query: client-gen
// generates a subresource method with an input only for create (+genclient:method=Diff), and
// a create's body needs no url.Values conversion; kubectl calls it with
// kubectl create --raw PATH -f BODY. Nothing is stored: the answer is computed from the two
// records' status.manifests, with no call out of the server.
type DiffREST struct {
	records rest.Getter
	limits  recorddiff.Limits
}

var _ rest.NamedCreater = &DiffREST{}

var diffKind = schema.GroupKind{Group: gitops.GroupName, Kind: "DeploymentRecordDiff"}

// NewDiffREST returns the diff subresource over the records' storage.
func NewDiffREST(records rest.Getter) *DiffREST {
	return &DiffREST{records: records, limits: recorddiff.DefaultLimits}
}

// New implements rest.Storage.
func (r *DiffREST) New() runtime.Object { return &gitops.DeploymentRecordDiff{} }

// Destroy implements rest.Storage: the records' storage is destroyed with them.
func (r *DiffREST) Destroy() {}

// Create implements rest.NamedCreater: name is the record diffed to.
func (r *DiffREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	_ *metav1.CreateOptions) (runtime.Object, error) {
	req, err := DiffRequest(ctx, name, obj, createValidation)
	if err != nil {
		return nil, err
	}
	to, err := record(ctx, r.records, name)
	if err != nil {
		return nil, err
	}
	from, err := FromRecord(ctx, r.records, name, req.From)
	if err != nil {
		return nil, err
	}
	if errs := sameDeployment(from, to); len(errs) > 0 {
		return nil, apierrors.NewInvalid(diffKind, name, errs)
	}
	for _, rec := range []*gitops.DeploymentRecord{from, to} {
		if msg := noManifests(rec); msg != "" {
			return nil, apierrors.NewConflict(gitops.Resource("deploymentrecords"), rec.Name, fmt.Errorf("%s", msg))
		}
	}
	return DiffResult(from, to.ObjectMeta, to.Status.ManifestsDigest, to.Status.Manifests, r.limits)
}

// DiffRequest takes the DeploymentRecordDiff a client created on name (a record's or a
// preview's diff subresource): valid, and admitted by createValidation.
func DiffRequest(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc) (*gitops.DeploymentRecordDiff, error) {
	req, ok := obj.(*gitops.DeploymentRecordDiff)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a DeploymentRecordDiff: %T", obj))
	}
	if errs := ValidateDiffRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(diffKind, name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// FromRecord is the record a diff created on name diffs from: one that does not exist is the
// request's error (422 on from), not a missing object.
func FromRecord(ctx context.Context, records rest.Getter, name, from string) (*gitops.DeploymentRecord, error) {
	rec, err := record(ctx, records, from)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewInvalid(diffKind, name, field.ErrorList{field.NotFound(field.NewPath("from"), from)})
	}
	return rec, err
}

// DiffResult is the answer of a diff subresource: from's manifests diffed to those of the
// object to (a record or a preview), which has the given digest and manifests.
func DiffResult(from *gitops.DeploymentRecord, to metav1.ObjectMeta, toDigest string, toManifests []gitops.RecordedManifest,
	limits recorddiff.Limits) (*gitops.DeploymentRecordDiff, error) {
	resources, truncated, err := recorddiff.Diff(from.Status.Manifests, toManifests, limits)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &gitops.DeploymentRecordDiff{
		ObjectMeta: metav1.ObjectMeta{Name: to.Name, Namespace: to.Namespace},
		From:       from.Name, To: to.Name, FromDigest: from.Status.ManifestsDigest, ToDigest: toDigest,
		Resources: resources, Truncated: truncated,
	}, nil
}

func record(ctx context.Context, records rest.Getter, name string) (*gitops.DeploymentRecord, error) {
	obj, err := records.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	rec, ok := obj.(*gitops.DeploymentRecord)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("not a DeploymentRecord: %T", obj))
	}
	return rec, nil
}

// ValidateDiffRequest checks what the client sets: the record to diff from. To and the
// results are the server's; what a client puts there is ignored.
func ValidateDiffRequest(req *gitops.DeploymentRecordDiff) field.ErrorList {
	p := field.NewPath("from")
	if req.From == "" {
		return field.ErrorList{field.Required(p, "the name of the record to diff from")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(req.From) {
		errs = append(errs, field.Invalid(p, req.From, msg))
	}
	return errs
}

// sameDeployment refuses two records of different deployments (or of an earlier deployment of
// the same name): their difference means nothing.
func sameDeployment(from, to *gitops.DeploymentRecord) field.ErrorList {
	a, b := from.Spec, to.Spec
	if a.GitOpsDeploymentName != b.GitOpsDeploymentName ||
		(a.GitOpsDeploymentUID != "" && b.GitOpsDeploymentUID != "" && a.GitOpsDeploymentUID != b.GitOpsDeploymentUID) {
		return field.ErrorList{field.Invalid(field.NewPath("from"), from.Name,
			fmt.Sprintf("records GitOpsDeployment %q (UID %s), not %q (UID %s) as %s does",
				a.GitOpsDeploymentName, a.GitOpsDeploymentUID, b.GitOpsDeploymentName, b.GitOpsDeploymentUID, to.Name))}
	}
	return nil
}

// noManifests says why a record cannot be diffed, "" when it can.
func noManifests(rec *gitops.DeploymentRecord) string {
	return NoManifests(rec.Status.ManifestsDigest, rec.Status.ManifestsTruncated)
}

// NoManifests says why stored manifests (a record's or a preview's) cannot be diffed, "" when
// they can.
func NoManifests(digest string, truncated bool) string {
	switch {
	case truncated:
		return fmt.Sprintf("its manifests (digest %s) were larger than the agent keeps; only their digest is stored", digest)
	case digest == "":
		return "it holds no manifests: the agent has not rendered them yet, or renders none (it was started without --repo-server)"
	}
	return ""
}
