package managedgitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// DeploymentTriggerType is what started a sync.
type DeploymentTriggerType string

const (
	// DeploymentTriggerSpecChange: a write to the GitOpsDeployment's spec (its source, its
	// type) by User, which automated sync deployed. Its creation counts as one.
	DeploymentTriggerSpecChange DeploymentTriggerType = "SpecChange"
	// DeploymentTriggerNewCommit: automated sync deployed a new commit of the source.
	DeploymentTriggerNewCommit DeploymentTriggerType = "NewCommit"
	// DeploymentTriggerSyncRun: the GitOpsDeploymentSyncRun SyncRun, created by User.
	DeploymentTriggerSyncRun DeploymentTriggerType = "SyncRun"
	// DeploymentTriggerPromotion: the service changed the deployment for a promotion of
	// Snapshot through the SnapshotEnvironmentBinding Binding.
	DeploymentTriggerPromotion DeploymentTriggerType = "Promotion"
	// DeploymentTriggerAutomated: automated sync again at the same commit and spec (self-heal
	// of a drift, or a retry).
	DeploymentTriggerAutomated DeploymentTriggerType = "Automated"
	// DeploymentTriggerExternal: an operation started outside the service (User names Argo
	// CD's user).
	DeploymentTriggerExternal DeploymentTriggerType = "External"
	// DeploymentTriggerRollback: a sync made while a GitOpsDeploymentHold kept the deployment
	// at its revision; User is who made the hold.
	DeploymentTriggerRollback DeploymentTriggerType = "Rollback"
)

// DeploymentRecordPhase is where a recorded sync is.
type DeploymentRecordPhase string

const (
	DeploymentRecordRunning   DeploymentRecordPhase = "Running"
	DeploymentRecordSucceeded DeploymentRecordPhase = "Succeeded"
	DeploymentRecordFailed    DeploymentRecordPhase = "Failed"
	DeploymentRecordError     DeploymentRecordPhase = "Error"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentRecord records one sync attempt of a GitOpsDeployment, failed ones included: what
// triggered it and who, the commit, and, in its status, the outcome per resource. The agent
// writes it; tenants read it (nobody else may write one, nor its status). The server keeps the
// newest spec.revisionHistoryLimit records of each deployment (the server's default when
// unset) and removes the older ones; a deployment's records go with it.
type DeploymentRecord struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec DeploymentRecordSpec `json:"spec,omitempty"`
	// +optional
	Status DeploymentRecordStatus `json:"status,omitempty"`
}

// DeploymentRecordSpec is what was deployed and why. It does not change once written.
type DeploymentRecordSpec struct {
	// GitOpsDeploymentName is the deployment synced, in the record's namespace.
	GitOpsDeploymentName string `json:"gitOpsDeploymentName"`
	// GitOpsDeploymentUID is its UID.
	// +optional
	GitOpsDeploymentUID types.UID `json:"gitOpsDeploymentUID,omitempty"`
	// Generation is the deployment's metadata.generation the sync deployed.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// Source is the deployment's source when the sync started.
	Source ApplicationSource `json:"source"`
	// Revision is the commit synced (a SHA), once Argo CD resolved it.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Trigger is what started the sync.
	Trigger DeploymentTrigger `json:"trigger"`
	// StartedAt is when Argo CD started the sync; with the deployment, it identifies it.
	StartedAt metav1.Time `json:"startedAt"`
}

// DeploymentTrigger is what started a sync.
type DeploymentTrigger struct {
	// Type is SpecChange, NewCommit, SyncRun, Promotion, Automated, External or Rollback.
	Type DeploymentTriggerType `json:"type"`
	// User is who made the change that started it (from the audit trail), or who created the
	// SyncRun; empty when nobody did (a new commit, an automated retry).
	// +optional
	User string `json:"user,omitempty"`
	// SyncRun is the GitOpsDeploymentSyncRun that asked for the sync.
	// +optional
	SyncRun string `json:"syncRun,omitempty"`
	// Binding and Snapshot are the SnapshotEnvironmentBinding and Snapshot of a promotion.
	// +optional
	Binding string `json:"binding,omitempty"`
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
}

// DeploymentRecordStatus is the outcome, as Argo CD reports it.
type DeploymentRecordStatus struct {
	// Phase is Running, Succeeded, Failed or Error.
	// +optional
	Phase DeploymentRecordPhase `json:"phase,omitempty"`
	// Message is Argo CD's message of the operation.
	// +optional
	Message string `json:"message,omitempty"`
	// FinishedAt is when the sync ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Resources are the results per resource.
	// +optional
	// +listType=atomic
	Resources []RecordedResource `json:"resources,omitempty"`

	// ManifestsDigest is "sha256:" and the hex SHA-256 of the manifests that Argo CD's
	// repo-server rendered at spec.revision, in canonical form (objects ordered by group,
	// kind, namespace and name, each as canonical JSON) with Secrets' values redacted. Two
	// records with the same digest deployed the same objects. Empty when the agent renders
	// no manifests (it was given no repo-server) or has not yet.
	// +optional
	ManifestsDigest string `json:"manifestsDigest,omitempty"`
	// Manifests are those objects, in the same order, for the diff subresource. A Secret's
	// data and stringData values are never stored: each is replaced by "redacted:" and a
	// keyed hash of it, which tells a changed value from an unchanged one without revealing
	// either.
	// +optional
	// +listType=atomic
	Manifests []RecordedManifest `json:"manifests,omitempty"`
	// ManifestsTruncated is true when the manifests were larger than the agent stores
	// (256 KiB of canonical JSON): the digest is kept, the manifests are not.
	// +optional
	ManifestsTruncated bool `json:"manifestsTruncated,omitempty"`
}

// RecordedManifest is one object of the rendered manifests.
type RecordedManifest struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Object is the object as rendered, Secrets' values redacted.
	Object runtime.RawExtension `json:"object"`
}

// RecordedResource is the result of a sync for one resource.
type RecordedResource struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Status is Synced, SyncFailed, Pruned or PruneSkipped.
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentRecordList is a list of DeploymentRecords.
type DeploymentRecordList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeploymentRecord `json:"items"`
}

// ResourceChange is how a resource differs between two records.
type ResourceChange string

const (
	ResourceAdded    ResourceChange = "Added"
	ResourceRemoved  ResourceChange = "Removed"
	ResourceModified ResourceChange = "Modified"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentRecordDiff is what the deploymentrecords/diff subresource answers: the difference,
// per resource and per field, between the manifests of two records of the same
// GitOpsDeployment. A client creates it on the record it diffs to (the newer one, usually)
// with From naming the other; the server fills the rest from the records' stored manifests
// (status.manifests). Secrets' values appear only as their redaction markers.
type DeploymentRecordDiff struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// From is the record diffed from, in the same namespace and of the same deployment.
	From string `json:"from"`
	// To is the record diffed to: the one the subresource was called on.
	// +optional
	To string `json:"to,omitempty"`
	// FromDigest and ToDigest are the records' status.manifestsDigest.
	// +optional
	FromDigest string `json:"fromDigest,omitempty"`
	// +optional
	ToDigest string `json:"toDigest,omitempty"`
	// Resources are the resources added, removed or modified, ordered by group, kind,
	// namespace and name; the unchanged ones are not listed.
	// +optional
	// +listType=atomic
	Resources []ResourceDiff `json:"resources,omitempty"`
	// Truncated is true when the diff was cut at the server's size cap (its fields' values
	// or its number of entries): what is listed is right, some of the rest is missing.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// ResourceDiff is how one resource differs.
type ResourceDiff struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Change is Added, Removed or Modified.
	Change ResourceChange `json:"change"`
	// Fields are the fields that differ, for a Modified resource.
	// +optional
	// +listType=atomic
	Fields []FieldDiff `json:"fields,omitempty"`
}

// FieldDiff is one field that differs: a leaf value, or a whole value where one side has none
// or the two have different types.
type FieldDiff struct {
	// Path is the field's path in the object, as in a JSONPath without its "$": ".data.color",
	// ".spec.template.spec.containers[0].image", `.metadata.labels["app.kubernetes.io/name"]`.
	Path string `json:"path"`
	// From is the field's value in the From record (JSON); absent when it had none.
	// +optional
	From *runtime.RawExtension `json:"from,omitempty"`
	// To is its value in the To record; absent when it has none.
	// +optional
	To *runtime.RawExtension `json:"to,omitempty"`
}
