package deploymentrecord

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// ManifestSource renders the manifests a record's sync deployed: Argo CD's repo-server at the
// record's revision (RepoServer).
type ManifestSource interface {
	// Manifests are the objects, one JSON object a string, that d's Application renders at
	// rec's spec.source and spec.revision.
	Manifests(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, rec *managedv1alpha1.DeploymentRecord) ([]string, error)
}

// manifests is how the controller keeps records' manifests; nil when it keeps none.
type manifests struct {
	source   ManifestSource
	redactor *recordmanifest.Redactor
	maxBytes int
}

// KeepManifests makes the controller write, into each record whose revision is known, the
// digest of the manifests src renders and, within recordmanifest.MaxBytes, the manifests
// themselves, Secrets' values redacted by r. Call it before Run.
func (c *Controller) KeepManifests(src ManifestSource, r *recordmanifest.Redactor) {
	c.manifests = &manifests{source: src, redactor: r, maxBytes: recordmanifest.MaxBytes}
}

// needsManifests tells whether a record waits for its manifests: its commit is known and
// none were written.
func needsManifests(r *managedv1alpha1.DeploymentRecord) bool {
	return r.Spec.Revision != "" && r.Status.ManifestsDigest == ""
}

// withManifests is st with the manifests that current holds: the status the plan computes
// from Argo CD's operation knows nothing of them, and must not erase them.
func withManifests(st, current managedv1alpha1.DeploymentRecordStatus) managedv1alpha1.DeploymentRecordStatus {
	if st.ManifestsDigest == "" {
		st.ManifestsDigest, st.Manifests, st.ManifestsTruncated = current.ManifestsDigest, current.Manifests, current.ManifestsTruncated
	}
	return st
}

// renderManifests writes the manifests of d's records that wait for them (records, newest
// first). A failure for the newest record is returned, so that the key is retried; one for an
// older record is logged only: its commit may be gone from the repository for good, and the
// next pass of the key tries again anyway.
func (c *Controller) renderManifests(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, records []*managedv1alpha1.DeploymentRecord) error {
	if c.manifests == nil {
		return nil
	}
	for i, rec := range records {
		if !needsManifests(rec) {
			continue
		}
		err := c.renderRecord(ctx, d, rec)
		if err == nil {
			continue
		}
		if i == 0 {
			return err
		}
		klog.V(2).InfoS("cannot render the manifests of a record", "record", klog.KObj(rec), "err", err)
	}
	return nil
}

func (c *Controller) renderRecord(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, rec *managedv1alpha1.DeploymentRecord) error {
	rendered, err := c.manifests.source.Manifests(ctx, d, rec)
	if err != nil {
		return fmt.Errorf("rendering the manifests of DeploymentRecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	res, err := recordmanifest.Build(rendered, c.manifests.redactor, c.manifests.maxBytes)
	if err != nil {
		return fmt.Errorf("the manifests of DeploymentRecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	upd := rec.DeepCopy()
	upd.Status.ManifestsDigest, upd.Status.Manifests, upd.Status.ManifestsTruncated = res.Digest, res.Manifests, res.Truncated
	_, err = c.gitops.ManagedGitopsV1alpha1().DeploymentRecords(rec.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since the cache saw it: its event brings the key back.
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the manifests of DeploymentRecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	klog.V(2).InfoS("recorded the manifests of a sync", "record", klog.KObj(rec), "digest", res.Digest,
		"objects", len(res.Manifests), "truncated", res.Truncated)
	return nil
}
