package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentPreviewPhase is where a preview is.
type DeploymentPreviewPhase string

const (
	// DeploymentPreviewPending: the agent has not rendered it yet.
	DeploymentPreviewPending DeploymentPreviewPhase = "Pending"
	// DeploymentPreviewRendered: status holds the manifests of status.revision.
	DeploymentPreviewRendered DeploymentPreviewPhase = "Rendered"
	// DeploymentPreviewFailed: the agent could not render it; status.message says why.
	DeploymentPreviewFailed DeploymentPreviewPhase = "Failed"
)

// +genclient
// +genclient:method=Diff,verb=create,subresource=diff,input=DeploymentRecordDiff,result=DeploymentRecordDiff
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentPreview asks the agent to render what a GitOpsDeployment would deploy now: its
// source at a revision (by default the one it follows), rendered by Argo CD's repo-server as a
// sync would, Secrets' values redacted, stored in its status as a DeploymentRecord's manifests
// are. Its diff subresource compares it with a record of the deployment: what would change if
// the deployment synced now. A tenant with edit creates one; the agent writes its status and
// deletes it once older than its --preview-ttl: previews are short-lived.
type DeploymentPreview struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec DeploymentPreviewSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status DeploymentPreviewStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DeploymentPreviewSpec is what to render. It does not change once created.
type DeploymentPreviewSpec struct {
	// GitOpsDeploymentName is the GitOpsDeployment to render, in the preview's namespace.
	GitOpsDeploymentName string `json:"gitOpsDeploymentName" protobuf:"bytes,1,opt,name=gitOpsDeploymentName"`
	// Revision is the branch, tag or commit to render; empty for the deployment's
	// spec.source.targetRevision (HEAD when it has none), resolved when the agent renders.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,2,opt,name=revision"`
}

// DeploymentPreviewStatus is what the agent rendered.
type DeploymentPreviewStatus struct {
	// Phase is Pending, Rendered or Failed.
	// +optional
	Phase DeploymentPreviewPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=DeploymentPreviewPhase"`
	// Revision is the commit (a SHA) the revision resolved to and that was rendered.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,2,opt,name=revision"`
	// ManifestsDigest, Manifests and ManifestsTruncated are as a DeploymentRecord's: the
	// digest of the canonical manifests, the manifests themselves within the agent's cap
	// (256 KiB), Secrets' values replaced by "redacted:" and a keyed hash.
	// +optional
	ManifestsDigest string `json:"manifestsDigest,omitempty" protobuf:"bytes,3,opt,name=manifestsDigest"`
	// +optional
	// +listType=atomic
	Manifests []RecordedManifest `json:"manifests,omitempty" protobuf:"bytes,4,rep,name=manifests"`
	// +optional
	ManifestsTruncated bool `json:"manifestsTruncated,omitempty" protobuf:"varint,5,opt,name=manifestsTruncated"`
	// Message says what happened, why it failed, and when the agent deletes the preview.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
	// RenderedAt is when the agent rendered it.
	// +optional
	RenderedAt *metav1.Time `json:"renderedAt,omitempty" protobuf:"bytes,7,opt,name=renderedAt"`
	// ObservedGeneration is the generation the status is of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,8,opt,name=observedGeneration"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentPreviewList is a list of DeploymentPreviews.
type DeploymentPreviewList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []DeploymentPreview `json:"items" protobuf:"bytes,2,rep,name=items"`
}
