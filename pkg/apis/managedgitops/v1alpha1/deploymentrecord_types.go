package v1alpha1

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

// +genclient
// +genclient:method=Diff,verb=create,subresource=diff,input=DeploymentRecordDiff,result=DeploymentRecordDiff
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentRecord records one sync attempt of a GitOpsDeployment, failed ones included: what
// triggered it and who, the commit, and, in its status, the outcome per resource. The agent
// writes it; tenants read it (nobody else may write one, nor its status). The server keeps the
// newest spec.revisionHistoryLimit records of each deployment (the server's default when
// unset) and removes the older ones; a deployment's records go with it.
type DeploymentRecord struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec DeploymentRecordSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status DeploymentRecordStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// DeploymentRecordSpec is what was deployed and why. It does not change once written.
type DeploymentRecordSpec struct {
	// GitOpsDeploymentName is the deployment synced, in the record's namespace.
	GitOpsDeploymentName string `json:"gitOpsDeploymentName" protobuf:"bytes,1,opt,name=gitOpsDeploymentName"`
	// GitOpsDeploymentUID is its UID.
	// +optional
	GitOpsDeploymentUID types.UID `json:"gitOpsDeploymentUID,omitempty" protobuf:"bytes,2,opt,name=gitOpsDeploymentUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// Generation is the deployment's metadata.generation the sync deployed.
	// +optional
	Generation int64 `json:"generation,omitempty" protobuf:"varint,3,opt,name=generation"`
	// Source is the deployment's source when the sync started.
	Source ApplicationSource `json:"source" protobuf:"bytes,4,opt,name=source"`
	// Revision is the commit synced (a SHA), once Argo CD resolved it.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,5,opt,name=revision"`
	// Trigger is what started the sync.
	Trigger DeploymentTrigger `json:"trigger" protobuf:"bytes,6,opt,name=trigger"`
	// StartedAt is when Argo CD started the sync; with the deployment, it identifies it.
	StartedAt metav1.Time `json:"startedAt" protobuf:"bytes,7,opt,name=startedAt"`
}

// DeploymentTrigger is what started a sync.
type DeploymentTrigger struct {
	// Type is SpecChange, NewCommit, SyncRun, Promotion, Automated, External or Rollback.
	Type DeploymentTriggerType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=DeploymentTriggerType"`
	// User is who made the change that started it (from the audit trail), or who created the
	// SyncRun; empty when nobody did (a new commit, an automated retry).
	// +optional
	User string `json:"user,omitempty" protobuf:"bytes,2,opt,name=user"`
	// SyncRun is the GitOpsDeploymentSyncRun that asked for the sync.
	// +optional
	SyncRun string `json:"syncRun,omitempty" protobuf:"bytes,3,opt,name=syncRun"`
	// Binding and Snapshot are the SnapshotEnvironmentBinding and Snapshot of a promotion.
	// +optional
	Binding string `json:"binding,omitempty" protobuf:"bytes,4,opt,name=binding"`
	// +optional
	Snapshot string `json:"snapshot,omitempty" protobuf:"bytes,5,opt,name=snapshot"`
}

// DeploymentRecordStatus is the outcome, as Argo CD reports it.
type DeploymentRecordStatus struct {
	// Phase is Running, Succeeded, Failed or Error.
	// +optional
	Phase DeploymentRecordPhase `json:"phase,omitempty" protobuf:"bytes,1,opt,name=phase,casttype=DeploymentRecordPhase"`
	// Message is Argo CD's message of the operation.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
	// FinishedAt is when the sync ended.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty" protobuf:"bytes,3,opt,name=finishedAt"`
	// Resources are the results per resource.
	// +optional
	// +listType=atomic
	Resources []RecordedResource `json:"resources,omitempty" protobuf:"bytes,4,rep,name=resources"`

	// ManifestsDigest is "sha256:" and the hex SHA-256 of the manifests that Argo CD's
	// repo-server rendered at spec.revision, in canonical form (objects ordered by group,
	// kind, namespace and name, each as canonical JSON) with Secrets' values redacted. Two
	// records with the same digest deployed the same objects. Empty when the agent renders
	// no manifests (it was given no repo-server) or has not yet.
	// +optional
	ManifestsDigest string `json:"manifestsDigest,omitempty" protobuf:"bytes,5,opt,name=manifestsDigest"`
	// Manifests are those objects, in the same order, for the diff subresource. A Secret's
	// data and stringData values are never stored: each is replaced by "redacted:" and a
	// keyed hash of it, which tells a changed value from an unchanged one without revealing
	// either.
	// +optional
	// +listType=atomic
	Manifests []RecordedManifest `json:"manifests,omitempty" protobuf:"bytes,6,rep,name=manifests"`
	// ManifestsTruncated is true when the manifests were larger than the agent stores
	// (256 KiB of canonical JSON): the digest is kept, the manifests are not.
	// +optional
	ManifestsTruncated bool `json:"manifestsTruncated,omitempty" protobuf:"varint,7,opt,name=manifestsTruncated"`
}

// RecordedManifest is one object of the rendered manifests.
type RecordedManifest struct {
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,1,opt,name=group"`
	Kind  string `json:"kind" protobuf:"bytes,2,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,3,opt,name=namespace"`
	Name      string `json:"name" protobuf:"bytes,4,opt,name=name"`
	// Object is the object as rendered, Secrets' values redacted.
	Object runtime.RawExtension `json:"object" protobuf:"bytes,5,opt,name=object"`
}

// RecordedResource is the result of a sync for one resource.
type RecordedResource struct {
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,1,opt,name=group"`
	Kind  string `json:"kind" protobuf:"bytes,2,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,3,opt,name=namespace"`
	Name      string `json:"name" protobuf:"bytes,4,opt,name=name"`
	// Status is Synced, SyncFailed, Pruned or PruneSkipped.
	// +optional
	Status string `json:"status,omitempty" protobuf:"bytes,5,opt,name=status"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DeploymentRecordList is a list of DeploymentRecords.
type DeploymentRecordList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []DeploymentRecord `json:"items" protobuf:"bytes,2,rep,name=items"`
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
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// From is the record diffed from, in the same namespace and of the same deployment.
	From string `json:"from" protobuf:"bytes,2,opt,name=from"`
	// To is the record diffed to: the one the subresource was called on.
	// +optional
	To string `json:"to,omitempty" protobuf:"bytes,3,opt,name=to"`
	// FromDigest and ToDigest are the records' status.manifestsDigest.
	// +optional
	FromDigest string `json:"fromDigest,omitempty" protobuf:"bytes,4,opt,name=fromDigest"`
	// +optional
	ToDigest string `json:"toDigest,omitempty" protobuf:"bytes,5,opt,name=toDigest"`
	// Resources are the resources added, removed or modified, ordered by group, kind,
	// namespace and name; the unchanged ones are not listed.
	// +optional
	// +listType=atomic
	Resources []ResourceDiff `json:"resources,omitempty" protobuf:"bytes,6,rep,name=resources"`
	// Truncated is true when the diff was cut at the server's size cap (its fields' values
	// or its number of entries): what is listed is right, some of the rest is missing.
	// +optional
	Truncated bool `json:"truncated,omitempty" protobuf:"varint,7,opt,name=truncated"`
}

// ResourceDiff is how one resource differs.
type ResourceDiff struct {
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,1,opt,name=group"`
	Kind  string `json:"kind" protobuf:"bytes,2,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,3,opt,name=namespace"`
	Name      string `json:"name" protobuf:"bytes,4,opt,name=name"`
	// Change is Added, Removed or Modified.
	Change ResourceChange `json:"change" protobuf:"bytes,5,opt,name=change,casttype=ResourceChange"`
	// Fields are the fields that differ, for a Modified resource.
	// +optional
	// +listType=atomic
	Fields []FieldDiff `json:"fields,omitempty" protobuf:"bytes,6,rep,name=fields"`
}

// FieldDiff is one field that differs: a leaf value, or a whole value where one side has none
// or the two have different types.
type FieldDiff struct {
	// Path is the field's path in the object, as in a JSONPath without its "$": ".data.color",
	// ".spec.template.spec.containers[0].image", `.metadata.labels["app.kubernetes.io/name"]`.
	Path string `json:"path" protobuf:"bytes,1,opt,name=path"`
	// From is the field's value in the From record (JSON); absent when it had none.
	// +optional
	From *runtime.RawExtension `json:"from,omitempty" protobuf:"bytes,2,opt,name=from"`
	// To is its value in the To record; absent when it has none.
	// +optional
	To *runtime.RawExtension `json:"to,omitempty" protobuf:"bytes,3,opt,name=to"`
}
