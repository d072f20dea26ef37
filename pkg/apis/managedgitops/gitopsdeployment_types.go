package managedgitops

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitOpsDeploymentFinalizer, when a user sets it, keeps a GitOpsDeployment until every
// resource that Argo CD deployed for it has been deleted.
const GitOpsDeploymentFinalizer = "resources-finalizer.managed-gitops.redhat.com"

// GitOpsDeploymentSpecType says whether Argo CD syncs on its own or only on a SyncRun.
type GitOpsDeploymentSpecType string

const (
	GitOpsDeploymentSpecTypeAutomated GitOpsDeploymentSpecType = "automated"
	GitOpsDeploymentSpecTypeManual    GitOpsDeploymentSpecType = "manual"
)

// SyncOption is one Argo CD sync option, in Argo CD's "Name=value" form.
type SyncOption string

const (
	SyncOptionCreateNamespaceTrue  SyncOption = "CreateNamespace=true"
	SyncOptionCreateNamespaceFalse SyncOption = "CreateNamespace=false"
)

// SyncOptions is a list of sync options.
type SyncOptions []SyncOption

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeployment is a continuous deployment of a path of a Git repository to a namespace
// of a cluster, carried out by Argo CD.
type GitOpsDeployment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GitOpsDeploymentSpec `json:"spec,omitempty"`
	// +optional
	Status GitOpsDeploymentStatus `json:"status,omitempty"`
}

// GitOpsDeploymentSpec is what to deploy, where to, and how to sync it.
type GitOpsDeploymentSpec struct {
	// Source is the Git repository, path and revision to deploy.
	Source ApplicationSource `json:"source"`

	// Destination is the cluster (through a GitOpsDeploymentManagedEnvironment) and namespace to
	// deploy to. Empty means the namespace of this object, on the cluster that serves the API.
	// +optional
	Destination ApplicationDestination `json:"destination,omitempty"`

	// SyncPolicy controls how Argo CD syncs.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`

	// Type is "automated" (Argo CD deploys every change of the repository) or "manual"
	// (deploys only when a GitOpsDeploymentSyncRun asks for it).
	Type GitOpsDeploymentSpecType `json:"type"`

	// RevisionHistoryLimit is how many DeploymentRecords of this deployment the server keeps,
	// newest first (0 to 1000); unset, the server's --deployment-records-per-deployment.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// ApplicationSource is a path at a revision of a Git repository.
type ApplicationSource struct {
	// RepoURL is the URL of the Git repository.
	RepoURL string `json:"repoURL"`
	// Path is the directory of the repository to deploy; it may be neither empty nor "/".
	Path string `json:"path"`
	// TargetRevision is a commit, tag or branch; empty means HEAD.
	// +optional
	TargetRevision string `json:"targetRevision,omitempty"`
}

// ApplicationDestination is where the resources of a GitOpsDeployment are deployed.
type ApplicationDestination struct {
	// Environment is the name of a GitOpsDeploymentManagedEnvironment in the same namespace.
	// +optional
	Environment string `json:"environment,omitempty"`
	// Namespace is the target namespace of resources that do not set one themselves.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy controls how Argo CD syncs.
type SyncPolicy struct {
	// SyncOptions are Argo CD sync options; only CreateNamespace=true|false are supported.
	// +optional
	// +listType=atomic
	SyncOptions SyncOptions `json:"syncOptions,omitempty"`
}

// GitOpsDeploymentConditionType is the type of a GitOpsDeployment condition. Besides the
// service's own types, the conditions of the Argo CD Application are mirrored with their
// Argo CD type.
type GitOpsDeploymentConditionType string

const (
	GitOpsDeploymentConditionErrorOccurred GitOpsDeploymentConditionType = "ErrorOccurred"
	GitOpsDeploymentConditionSyncError     GitOpsDeploymentConditionType = "SyncError"
	// GitOpsDeploymentConditionHeld is True while a GitOpsDeploymentHold of the same name keeps
	// the deployment at a revision (reason RolledBack; the message names the revision, the
	// record, who held it, when and why); it is removed when the hold is released.
	GitOpsDeploymentConditionHeld GitOpsDeploymentConditionType = "Held"

	// Argo CD Application condition types that are mirrored into the status.
	GitOpsDeploymentConditionDeletionError           GitOpsDeploymentConditionType = "DeletionError"
	GitOpsDeploymentConditionInvalidSpecError        GitOpsDeploymentConditionType = "InvalidSpecError"
	GitOpsDeploymentConditionComparisonError         GitOpsDeploymentConditionType = "ComparisonError"
	GitOpsDeploymentConditionUnknownError            GitOpsDeploymentConditionType = "UnknownError"
	GitOpsDeploymentConditionSharedResourceWarning   GitOpsDeploymentConditionType = "SharedResourceWarning"
	GitOpsDeploymentConditionRepeatedResourceWarning GitOpsDeploymentConditionType = "RepeatedResourceWarning"
	GitOpsDeploymentConditionExcludedResourceWarning GitOpsDeploymentConditionType = "ExcludedResourceWarning"
	GitOpsDeploymentConditionOrphanedResourceWarning GitOpsDeploymentConditionType = "OrphanedResourceWarning"
)

// GitOpsDeploymentReasonType is the reason of a GitOpsDeployment condition. A mirrored Argo CD
// condition has its type as reason, and "<type>Resolved" once Argo CD no longer reports it.
type GitOpsDeploymentReasonType string

const (
	GitOpsDeploymentReasonErrorOccurred         GitOpsDeploymentReasonType = "ErrorOccurred"
	GitOpsDeploymentReasonErrorOccurredResolved GitOpsDeploymentReasonType = "ErrorOccurredResolved"
	GitOpsDeploymentReasonSyncError             GitOpsDeploymentReasonType = "SyncError"
	// GitOpsDeploymentReasonRolledBack is the reason of the Held condition.
	GitOpsDeploymentReasonRolledBack GitOpsDeploymentReasonType = "RolledBack"

	// GitOpsDeploymentReasonResolvedSuffix is appended to a condition's type to form the reason
	// of a condition that no longer holds.
	GitOpsDeploymentReasonResolvedSuffix = "Resolved"
)

// Messages of ErrorOccurred conditions that tell the user what to fix.
const (
	GitOpsDeploymentUserErrorInvalidPathSlash = "spec.source.path cannot be '/'"
	GitOpsDeploymentUserErrorPathIsRequired   = "spec.source.path is a required field and it cannot be empty"
	GitOpsDeploymentUserErrorUnknown          = "an unknown error occurred"
)

// GitOpsConditionStatus is the status of a condition.
type GitOpsConditionStatus string

const (
	GitOpsConditionStatusTrue    GitOpsConditionStatus = "True"
	GitOpsConditionStatusFalse   GitOpsConditionStatus = "False"
	GitOpsConditionStatusUnknown GitOpsConditionStatus = "Unknown"
)

// GitOpsDeploymentStatus is Argo CD's view of the deployment.
type GitOpsDeploymentStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty"`
	// +optional
	Sync SyncStatus `json:"sync,omitempty"`
	// +optional
	Health HealthStatus `json:"health,omitempty"`
	// Resources are the resources deployed by this GitOpsDeployment.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty"`
	// ReconciledState is the source and destination that Argo CD last reconciled, so that a client
	// can tell whether a change of spec has been acted on.
	ReconciledState ReconciledState `json:"reconciledState"`
	// OperationState is the state of the last Argo CD sync operation.
	// +optional
	OperationState *OperationState `json:"operationState,omitempty"`
}

// GitOpsDeploymentCondition is one observation about a GitOpsDeployment.
type GitOpsDeploymentCondition struct {
	Type GitOpsDeploymentConditionType `json:"type"`
	// +optional
	Message string `json:"message,omitempty"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// LastTransitionTime is when status, reason or message last changed.
	// +optional
	LastTransitionTime *metav1.Time          `json:"lastTransitionTime,omitempty"`
	Status             GitOpsConditionStatus `json:"status"`
	// +optional
	Reason GitOpsDeploymentReasonType `json:"reason,omitempty"`
}

// SyncStatusCode is Argo CD's comparison of the live state with the desired state.
type SyncStatusCode string

const (
	SyncStatusCodeUnknown   SyncStatusCode = "Unknown"
	SyncStatusCodeSynced    SyncStatusCode = "Synced"
	SyncStatusCodeOutOfSync SyncStatusCode = "OutOfSync"
)

// SyncStatus is whether the live state matches Git.
type SyncStatus struct {
	Status SyncStatusCode `json:"status"`
	// Revision is the commit the comparison was made against.
	// +optional
	Revision string `json:"revision,omitempty"`
}

// HealthStatusCode is Argo CD's health of a resource or application.
type HealthStatusCode string

const (
	HealthStatusCodeHealthy     HealthStatusCode = "Healthy"
	HealthStatusCodeProgressing HealthStatusCode = "Progressing"
	HealthStatusCodeDegraded    HealthStatusCode = "Degraded"
	HealthStatusCodeSuspended   HealthStatusCode = "Suspended"
	HealthStatusCodeMissing     HealthStatusCode = "Missing"
	HealthStatusCodeUnknown     HealthStatusCode = "Unknown"
)

// HealthStatus is Argo CD's health assessment.
type HealthStatus struct {
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceStatus is the sync and health state of one deployed resource.
type ResourceStatus struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
}

// ReconciledState is the source and destination Argo CD last reconciled.
type ReconciledState struct {
	Source      GitOpsDeploymentSource      `json:"source"`
	Destination GitOpsDeploymentDestination `json:"destination"`
}

// GitOpsDeploymentSource is a reconciled source.
type GitOpsDeploymentSource struct {
	Path    string `json:"path"`
	RepoURL string `json:"repoURL"`
	Branch  string `json:"branch"`
}

// GitOpsDeploymentDestination is a reconciled destination: Name is the
// GitOpsDeploymentManagedEnvironment, empty for the local cluster.
type GitOpsDeploymentDestination struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// OperationPhase is the phase of an Argo CD operation.
type OperationPhase string

const (
	OperationPhaseRunning     OperationPhase = "Running"
	OperationPhaseTerminating OperationPhase = "Terminating"
	OperationPhaseFailed      OperationPhase = "Failed"
	OperationPhaseError       OperationPhase = "Error"
	OperationPhaseSucceeded   OperationPhase = "Succeeded"
)

// OperationState is a copy of the Argo CD Application's operationState.
type OperationState struct {
	Operation ApplicationOperation `json:"operation"`
	Phase     OperationPhase       `json:"phase"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time          `json:"startedAt"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// +optional
	RetryCount int64 `json:"retryCount,omitempty"`
}

// ApplicationOperation is an Argo CD operation.
type ApplicationOperation struct {
	// +optional
	Sync *SyncOperation `json:"sync,omitempty"`
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	// +optional
	// +listType=atomic
	Info []Info `json:"info,omitempty"`
	// +optional
	Retry RetryStrategy `json:"retry,omitempty"`
}

// Info is a name/value pair attached to an operation.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// OperationInitiator is who started an operation.
type OperationInitiator struct {
	// +optional
	Username string `json:"username,omitempty"`
	// +optional
	Automated bool `json:"automated,omitempty"`
}

// RetryStrategy is how a failed sync is retried.
type RetryStrategy struct {
	// Limit is the number of retries; negative means forever.
	// +optional
	Limit int64 `json:"limit,omitempty"`
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is the delay between retries.
type Backoff struct {
	// +optional
	Duration string `json:"duration,omitempty"`
	// +optional
	Factor *int64 `json:"factor,omitempty"`
	// +optional
	MaxDuration string `json:"maxDuration,omitempty"`
}

// SyncOperation is a sync request.
type SyncOperation struct {
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Prune bool `json:"prune,omitempty"`
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// +optional
	SyncStrategy *SyncStrategy `json:"syncStrategy,omitempty"`
	// +optional
	// +listType=atomic
	Resources []SyncOperationResource `json:"resources,omitempty"`
	// +optional
	Source *ApplicationSource `json:"source,omitempty"`
	// +optional
	// +listType=atomic
	Manifests []string `json:"manifests,omitempty"`
	// +optional
	// +listType=atomic
	SyncOptions SyncOptions `json:"syncOptions,omitempty"`
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
}

// SyncStrategy is how a sync is performed.
type SyncStrategy struct {
	// +optional
	Apply *SyncStrategyApply `json:"apply,omitempty"`
	// +optional
	Hook *SyncStrategyHook `json:"hook,omitempty"`
}

// SyncStrategyApply syncs with kubectl apply.
type SyncStrategyApply struct {
	// +optional
	Force bool `json:"force,omitempty"`
}

// SyncStrategyHook syncs with hooks.
type SyncStrategyHook struct {
	SyncStrategyApply `json:",inline"`
}

// SyncOperationResource selects a resource to sync.
type SyncOperationResource struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ResultCode is the outcome of syncing one resource.
type ResultCode string

const (
	ResultCodeSynced       ResultCode = "Synced"
	ResultCodeSyncFailed   ResultCode = "SyncFailed"
	ResultCodePruned       ResultCode = "Pruned"
	ResultCodePruneSkipped ResultCode = "PruneSkipped"
)

// HookType is the kind of an Argo CD hook.
type HookType string

const (
	HookTypePreSync  HookType = "PreSync"
	HookTypeSync     HookType = "Sync"
	HookTypePostSync HookType = "PostSync"
	HookTypeSkip     HookType = "Skip"
	HookTypeSyncFail HookType = "SyncFail"
)

// SyncPhase is a phase of a sync.
type SyncPhase string

const (
	SyncPhasePreSync  SyncPhase = "PreSync"
	SyncPhaseSync     SyncPhase = "Sync"
	SyncPhasePostSync SyncPhase = "PostSync"
	SyncPhaseSyncFail SyncPhase = "SyncFail"
)

// SyncOperationResult is the result of a sync.
type SyncOperationResult struct {
	// +optional
	// +listType=atomic
	Resources []ResourceResult `json:"resources,omitempty"`
	Revision  string           `json:"revision"`
	// +optional
	Source ApplicationSource `json:"source,omitempty"`
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
	// +optional
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// ResourceResult is the result of syncing one resource.
type ResourceResult struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// +optional
	Status ResultCode `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	HookType HookType `json:"hookType,omitempty"`
	// +optional
	HookPhase OperationPhase `json:"hookPhase,omitempty"`
	// +optional
	SyncPhase SyncPhase `json:"syncPhase,omitempty"`
}

// ManagedNamespaceMetadata is the metadata Argo CD sets on a namespace it created.
type ManagedNamespaceMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentList is a list of GitOpsDeployments.
type GitOpsDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitOpsDeployment `json:"items"`
}
