package managedgitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
