package v1alpha1

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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeployment is a continuous deployment of a path of a Git repository to a namespace
// of a cluster, carried out by Argo CD.
type GitOpsDeployment struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec GitOpsDeploymentSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status GitOpsDeploymentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// GitOpsDeploymentSpec is what to deploy, where to, and how to sync it.
type GitOpsDeploymentSpec struct {
	// Source is the Git repository, path and revision to deploy.
	Source ApplicationSource `json:"source" protobuf:"bytes,1,opt,name=source"`

	// Destination is the cluster (through a GitOpsDeploymentManagedEnvironment) and namespace to
	// deploy to. Empty means the namespace of this object, on the cluster that serves the API.
	// +optional
	Destination ApplicationDestination `json:"destination,omitempty" protobuf:"bytes,2,opt,name=destination"`

	// SyncPolicy controls how Argo CD syncs.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty" protobuf:"bytes,3,opt,name=syncPolicy"`

	// Type is "automated" (Argo CD deploys every change of the repository) or "manual"
	// (deploys only when a GitOpsDeploymentSyncRun asks for it).
	Type GitOpsDeploymentSpecType `json:"type" protobuf:"bytes,4,opt,name=type,casttype=GitOpsDeploymentSpecType"`

	// RevisionHistoryLimit is how many DeploymentRecords of this deployment the server keeps,
	// newest first (0 to 1000); unset, the server's --deployment-records-per-deployment.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,5,opt,name=revisionHistoryLimit"`
}

// ApplicationSource is a path at a revision of a Git repository.
type ApplicationSource struct {
	// RepoURL is the URL of the Git repository.
	RepoURL string `json:"repoURL" protobuf:"bytes,1,opt,name=repoURL"`
	// Path is the directory of the repository to deploy; it may be neither empty nor "/".
	Path string `json:"path" protobuf:"bytes,2,opt,name=path"`
	// TargetRevision is a commit, tag or branch; empty means HEAD.
	// +optional
	TargetRevision string `json:"targetRevision,omitempty" protobuf:"bytes,3,opt,name=targetRevision"`
}

// ApplicationDestination is where the resources of a GitOpsDeployment are deployed.
type ApplicationDestination struct {
	// Environment is the name of a GitOpsDeploymentManagedEnvironment in the same namespace.
	// +optional
	Environment string `json:"environment,omitempty" protobuf:"bytes,1,opt,name=environment"`
	// Namespace is the target namespace of resources that do not set one themselves.
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
}

// SyncPolicy controls how Argo CD syncs.
type SyncPolicy struct {
	// SyncOptions are Argo CD sync options; only CreateNamespace=true|false are supported.
	// +optional
	// +listType=atomic
	SyncOptions SyncOptions `json:"syncOptions,omitempty" protobuf:"bytes,1,rep,name=syncOptions,casttype=SyncOption"`
}

// ResourcesNotReady is the message of the ResourcesReady condition while it is False (which
// resources are not Synced and Healthy, and why), or "" when it is True or absent.
func (s *GitOpsDeploymentStatus) ResourcesNotReady() string {
	for _, c := range s.Conditions {
		if c.Type == GitOpsDeploymentConditionResourcesReady && c.Status == GitOpsConditionStatusFalse {
			return c.Message
		}
	}
	return ""
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
	// GitOpsDeploymentConditionResourcesReady is True when every resource deployed is Synced and
	// Healthy; False names those that are not, each with Argo CD's reason (beyond the original
	// service, which had no such condition).
	GitOpsDeploymentConditionResourcesReady GitOpsDeploymentConditionType = "ResourcesReady"

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
	GitOpsDeploymentReasonRolledBack        GitOpsDeploymentReasonType = "RolledBack"
	GitOpsDeploymentReasonResourcesReady    GitOpsDeploymentReasonType = "ResourcesReady"
	GitOpsDeploymentReasonResourcesNotReady GitOpsDeploymentReasonType = "ResourcesNotReady"

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
	Conditions []GitOpsDeploymentCondition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`
	// +optional
	Sync SyncStatus `json:"sync,omitempty" protobuf:"bytes,2,opt,name=sync"`
	// +optional
	Health HealthStatus `json:"health,omitempty" protobuf:"bytes,3,opt,name=health"`
	// Resources are the resources deployed by this GitOpsDeployment.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty" protobuf:"bytes,4,rep,name=resources"`
	// ReconciledState is the source and destination that Argo CD last reconciled, so that a client
	// can tell whether a change of spec has been acted on.
	ReconciledState ReconciledState `json:"reconciledState" protobuf:"bytes,5,opt,name=reconciledState"`
	// OperationState is the state of the last Argo CD sync operation.
	// +optional
	OperationState *OperationState `json:"operationState,omitempty" protobuf:"bytes,6,opt,name=operationState"`
}

// GitOpsDeploymentCondition is one observation about a GitOpsDeployment.
type GitOpsDeploymentCondition struct {
	Type GitOpsDeploymentConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=GitOpsDeploymentConditionType"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
	// LastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// LastTransitionTime is when status, reason or message last changed.
	// +optional
	LastTransitionTime *metav1.Time          `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	Status             GitOpsConditionStatus `json:"status" protobuf:"bytes,5,opt,name=status,casttype=GitOpsConditionStatus"`
	// +optional
	Reason GitOpsDeploymentReasonType `json:"reason,omitempty" protobuf:"bytes,6,opt,name=reason,casttype=GitOpsDeploymentReasonType"`
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
	Status SyncStatusCode `json:"status" protobuf:"bytes,1,opt,name=status,casttype=SyncStatusCode"`
	// Revision is the commit the comparison was made against.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,2,opt,name=revision"`
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
	Status HealthStatusCode `json:"status,omitempty" protobuf:"bytes,1,opt,name=status,casttype=HealthStatusCode"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
}

// ResourceStatus is the sync and health state of one deployed resource.
type ResourceStatus struct {
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,1,opt,name=group"`
	// +optional
	Version string `json:"version,omitempty" protobuf:"bytes,2,opt,name=version"`
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,3,opt,name=kind"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,4,opt,name=namespace"`
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,5,opt,name=name"`
	// +optional
	Status SyncStatusCode `json:"status,omitempty" protobuf:"bytes,6,opt,name=status,casttype=SyncStatusCode"`
	// +optional
	Health *HealthStatus `json:"health,omitempty" protobuf:"bytes,7,opt,name=health"`
}

// ReconciledState is the source and destination Argo CD last reconciled.
type ReconciledState struct {
	Source      GitOpsDeploymentSource      `json:"source" protobuf:"bytes,1,opt,name=source"`
	Destination GitOpsDeploymentDestination `json:"destination" protobuf:"bytes,2,opt,name=destination"`
}

// GitOpsDeploymentSource is a reconciled source.
type GitOpsDeploymentSource struct {
	Path    string `json:"path" protobuf:"bytes,1,opt,name=path"`
	RepoURL string `json:"repoURL" protobuf:"bytes,2,opt,name=repoURL"`
	Branch  string `json:"branch" protobuf:"bytes,3,opt,name=branch"`
}

// GitOpsDeploymentDestination is a reconciled destination: Name is the
// GitOpsDeploymentManagedEnvironment, empty for the local cluster.
type GitOpsDeploymentDestination struct {
	Name      string `json:"name" protobuf:"bytes,1,opt,name=name"`
	Namespace string `json:"namespace" protobuf:"bytes,2,opt,name=namespace"`
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
	Operation ApplicationOperation `json:"operation" protobuf:"bytes,1,opt,name=operation"`
	Phase     OperationPhase       `json:"phase" protobuf:"bytes,2,opt,name=phase,casttype=OperationPhase"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty" protobuf:"bytes,4,opt,name=syncResult"`
	StartedAt  metav1.Time          `json:"startedAt" protobuf:"bytes,5,opt,name=startedAt"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty" protobuf:"bytes,6,opt,name=finishedAt"`
	// +optional
	RetryCount int64 `json:"retryCount,omitempty" protobuf:"varint,7,opt,name=retryCount"`
}

// ApplicationOperation is an Argo CD operation.
type ApplicationOperation struct {
	// +optional
	Sync *SyncOperation `json:"sync,omitempty" protobuf:"bytes,1,opt,name=sync"`
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty" protobuf:"bytes,2,opt,name=initiatedBy"`
	// +optional
	// +listType=atomic
	Info []Info `json:"info,omitempty" protobuf:"bytes,3,rep,name=info"`
	// +optional
	Retry RetryStrategy `json:"retry,omitempty" protobuf:"bytes,4,opt,name=retry"`
}

// Info is a name/value pair attached to an operation.
type Info struct {
	Name  string `json:"name" protobuf:"bytes,1,opt,name=name"`
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`
}

// OperationInitiator is who started an operation.
type OperationInitiator struct {
	// +optional
	Username string `json:"username,omitempty" protobuf:"bytes,1,opt,name=username"`
	// +optional
	Automated bool `json:"automated,omitempty" protobuf:"varint,2,opt,name=automated"`
}

// RetryStrategy is how a failed sync is retried.
type RetryStrategy struct {
	// Limit is the number of retries; negative means forever.
	// +optional
	Limit int64 `json:"limit,omitempty" protobuf:"varint,1,opt,name=limit"`
	// +optional
	Backoff *Backoff `json:"backoff,omitempty" protobuf:"bytes,2,opt,name=backoff"`
}

// Backoff is the delay between retries.
type Backoff struct {
	// +optional
	Duration string `json:"duration,omitempty" protobuf:"bytes,1,opt,name=duration"`
	// +optional
	Factor *int64 `json:"factor,omitempty" protobuf:"varint,2,opt,name=factor"`
	// +optional
	MaxDuration string `json:"maxDuration,omitempty" protobuf:"bytes,3,opt,name=maxDuration"`
}

// SyncOperation is a sync request.
type SyncOperation struct {
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,1,opt,name=revision"`
	// +optional
	Prune bool `json:"prune,omitempty" protobuf:"varint,2,opt,name=prune"`
	// +optional
	DryRun bool `json:"dryRun,omitempty" protobuf:"varint,3,opt,name=dryRun"`
	// +optional
	SyncStrategy *SyncStrategy `json:"syncStrategy,omitempty" protobuf:"bytes,4,opt,name=syncStrategy"`
	// +optional
	// +listType=atomic
	Resources []SyncOperationResource `json:"resources,omitempty" protobuf:"bytes,5,rep,name=resources"`
	// +optional
	Source *ApplicationSource `json:"source,omitempty" protobuf:"bytes,6,opt,name=source"`
	// +optional
	// +listType=atomic
	Manifests []string `json:"manifests,omitempty" protobuf:"bytes,7,rep,name=manifests"`
	// +optional
	// +listType=atomic
	SyncOptions SyncOptions `json:"syncOptions,omitempty" protobuf:"bytes,8,rep,name=syncOptions,casttype=SyncOption"`
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty" protobuf:"bytes,9,rep,name=sources"`
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty" protobuf:"bytes,10,rep,name=revisions"`
}

// SyncStrategy is how a sync is performed.
type SyncStrategy struct {
	// +optional
	Apply *SyncStrategyApply `json:"apply,omitempty" protobuf:"bytes,1,opt,name=apply"`
	// +optional
	Hook *SyncStrategyHook `json:"hook,omitempty" protobuf:"bytes,2,opt,name=hook"`
}

// SyncStrategyApply syncs with kubectl apply.
type SyncStrategyApply struct {
	// +optional
	Force bool `json:"force,omitempty" protobuf:"varint,1,opt,name=force"`
}

// SyncStrategyHook syncs with hooks.
type SyncStrategyHook struct {
	SyncStrategyApply `json:",inline" protobuf:"bytes,1,opt,name=syncStrategyApply"`
}

// SyncOperationResource selects a resource to sync.
type SyncOperationResource struct {
	// +optional
	Group string `json:"group,omitempty" protobuf:"bytes,1,opt,name=group"`
	Kind  string `json:"kind" protobuf:"bytes,2,opt,name=kind"`
	Name  string `json:"name" protobuf:"bytes,3,opt,name=name"`
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,4,opt,name=namespace"`
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
	Resources []ResourceResult `json:"resources,omitempty" protobuf:"bytes,1,rep,name=resources"`
	Revision  string           `json:"revision" protobuf:"bytes,2,opt,name=revision"`
	// +optional
	Source ApplicationSource `json:"source,omitempty" protobuf:"bytes,3,opt,name=source"`
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty" protobuf:"bytes,4,rep,name=sources"`
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty" protobuf:"bytes,5,rep,name=revisions"`
	// +optional
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty" protobuf:"bytes,6,opt,name=managedNamespaceMetadata"`
}

// ResourceResult is the result of syncing one resource.
type ResourceResult struct {
	Group     string `json:"group" protobuf:"bytes,1,opt,name=group"`
	Version   string `json:"version" protobuf:"bytes,2,opt,name=version"`
	Kind      string `json:"kind" protobuf:"bytes,3,opt,name=kind"`
	Namespace string `json:"namespace" protobuf:"bytes,4,opt,name=namespace"`
	Name      string `json:"name" protobuf:"bytes,5,opt,name=name"`
	// +optional
	Status ResultCode `json:"status,omitempty" protobuf:"bytes,6,opt,name=status,casttype=ResultCode"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,7,opt,name=message"`
	// +optional
	HookType HookType `json:"hookType,omitempty" protobuf:"bytes,8,opt,name=hookType,casttype=HookType"`
	// +optional
	HookPhase OperationPhase `json:"hookPhase,omitempty" protobuf:"bytes,9,opt,name=hookPhase,casttype=OperationPhase"`
	// +optional
	SyncPhase SyncPhase `json:"syncPhase,omitempty" protobuf:"bytes,10,opt,name=syncPhase,casttype=SyncPhase"`
}

// ManagedNamespaceMetadata is the metadata Argo CD sets on a namespace it created.
type ManagedNamespaceMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GitOpsDeploymentList is a list of GitOpsDeployments.
type GitOpsDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []GitOpsDeployment `json:"items" protobuf:"bytes,2,rep,name=items"`
}
