package deploymentpreview

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// NoRepoServer is the message of every preview of an agent started without --repo-server:
// without Argo CD's repo-server it renders nothing.
const NoRepoServer = "the agent has no --repo-server"

// world is what a decision about one preview needs.
type world struct {
	preview *managedv1alpha1.DeploymentPreview
	// deployment is the preview's GitOpsDeployment; nil when there is none.
	deployment *managedv1alpha1.GitOpsDeployment
	// canRender: the agent has a repo-server.
	canRender bool
	now       time.Time
	ttl       time.Duration
}

// plan is what to do with the preview.
type plan struct {
	// delete: the preview outlived the TTL.
	delete bool
	// render: resolve the revision and render it, then write renderedStatus.
	render bool
	// ref is the branch, tag or commit to resolve and render.
	ref string
	// status, when set, is written as the preview's status (a failure known without rendering).
	status *managedv1alpha1.DeploymentPreviewStatus
	// requeueAfter is when the key is to be looked at again: the preview's expiry.
	requeueAfter time.Duration
}

// expiry is when the agent deletes p.
func expiry(p *managedv1alpha1.DeploymentPreview, ttl time.Duration) time.Time {
	return p.CreationTimestamp.Add(ttl)
}

// ttlNote is what every status message ends with: that previews are short-lived, and when this
// one goes.
func ttlNote(p *managedv1alpha1.DeploymentPreview, ttl time.Duration) string {
	return fmt.Sprintf("the agent deletes this preview at %s (--preview-ttl %s)", expiry(p, ttl).UTC().Format(time.RFC3339), ttl)
}

// decide says what to do with a preview: delete it once past the TTL (rendered or not); render
// it once, when it has no outcome yet; otherwise wait for its expiry. A preview's spec never
// changes (the server refuses it), so an outcome is final.
func decide(w world) plan {
	p := w.preview
	left := expiry(p, w.ttl).Sub(w.now)
	if left <= 0 {
		return plan{delete: true}
	}
	out := plan{requeueAfter: left}
	if done(p) {
		return out
	}
	switch {
	case !w.canRender:
		out.status = failed(p, w, NoRepoServer)
	case w.deployment == nil:
		out.status = failed(p, w, fmt.Sprintf("GitOpsDeployment %q not found in namespace %s", p.Spec.GitOpsDeploymentName, p.Namespace))
	default:
		out.render, out.ref = true, p.Spec.Revision
		if out.ref == "" {
			out.ref = w.deployment.Spec.Source.TargetRevision
		}
	}
	return out
}

// done tells a preview with an outcome.
func done(p *managedv1alpha1.DeploymentPreview) bool {
	return p.Status.Phase == managedv1alpha1.DeploymentPreviewRendered || p.Status.Phase == managedv1alpha1.DeploymentPreviewFailed
}

func failed(p *managedv1alpha1.DeploymentPreview, w world, why string) *managedv1alpha1.DeploymentPreviewStatus {
	return &managedv1alpha1.DeploymentPreviewStatus{Phase: managedv1alpha1.DeploymentPreviewFailed,
		Message: why + "; " + ttlNote(p, w.ttl), ObservedGeneration: p.Generation}
}

// renderedStatus is the status of a preview rendered at commit (ref as asked; "" for HEAD), or
// failed with err.
func renderedStatus(w world, ref, commit string, res recordmanifest.Result, err error) managedv1alpha1.DeploymentPreviewStatus {
	p := w.preview
	if err != nil {
		return *failed(p, w, err.Error())
	}
	if ref == "" {
		ref = "HEAD"
	}
	now := metav1.NewTime(w.now)
	msg := fmt.Sprintf("rendered %s at %s (%d objects)", ref, commit, len(res.Manifests))
	if res.Truncated {
		msg = fmt.Sprintf("rendered %s at %s: larger than the agent keeps (%d KiB), only the digest is stored", ref, commit, recordmanifest.MaxBytes>>10)
	}
	return managedv1alpha1.DeploymentPreviewStatus{
		Phase: managedv1alpha1.DeploymentPreviewRendered, Revision: commit,
		ManifestsDigest: res.Digest, Manifests: res.Manifests, ManifestsTruncated: res.Truncated,
		Message: msg + "; " + ttlNote(p, w.ttl), RenderedAt: &now, ObservedGeneration: p.Generation,
	}
}
