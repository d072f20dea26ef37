package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The gates of an Environment, its holds and the approvals of promotions into it are kinds of
// their own, beyond application-api: clients built on application-api's structs drop the fields
// they do not know when they update an Environment or a PromotionRun, so nothing of ours may
// live there. Each is linked to its Environment by name.

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionGate is what a promotion must pass to enter the Environment of the same name, and to
// leave it for the Environments below: approvals, change windows and freezes before the
// Environment's binding is pointed at the Snapshot; soak time and a verification Job after every
// GitOpsDeployment of the binding is Synced and Healthy. A promotion that fails its verification,
// or whose deployment becomes Degraded while it soaks, is rolled back: the Environment goes back
// to the Snapshot it ran before and is held there (an EnvironmentHold) until someone releases it.
type PromotionGate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec PromotionGateSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status PromotionGateStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// PromotionGateSpec lists the gates of an Environment. Every gate set applies.
type PromotionGateSpec struct {
	// Approvals, when set, is how many different users must approve a promotion (a
	// PromotionApproval with decision Approve) before it enters the Environment.
	// +optional
	Approvals *ApprovalGate `json:"approvals,omitempty" protobuf:"bytes,1,opt,name=approvals"`
	// ChangeWindows are when a promotion may enter the Environment (Allow: only within one of
	// them, when there is any) and when it may not (Deny).
	// +optional
	// +listType=map
	// +listMapKey=name
	ChangeWindows []ChangeWindow `json:"changeWindows,omitempty" protobuf:"bytes,2,rep,name=changeWindows"`
	// Freezes keep every promotion out of the Environment until they expire.
	// +optional
	// +listType=map
	// +listMapKey=name
	Freezes []Freeze `json:"freezes,omitempty" protobuf:"bytes,3,rep,name=freezes"`
	// SoakTime is how long a Snapshot must stay Healthy in the Environment before it may leave
	// it; a deployment that becomes Degraded in that time is rolled back.
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty" protobuf:"bytes,4,opt,name=soakTime"`
	// Verification is a Job run in the PromotionRun's namespace, with the namespace's
	// deployer identity, once every GitOpsDeployment is Synced and Healthy at the Snapshot; the
	// step succeeds when the Job succeeds, and is rolled back when it fails or times out.
	// +optional
	Verification *Verification `json:"verification,omitempty" protobuf:"bytes,5,opt,name=verification"`
}

// ApprovalGate is the approvals a promotion needs.
type ApprovalGate struct {
	// Required is the number of different users who must approve, 1 to 10.
	Required int32 `json:"required" protobuf:"varint,1,opt,name=required"`
}

// ChangeWindowType tells whether a window allows promotions or denies them.
type ChangeWindowType string

const (
	ChangeWindowAllow ChangeWindowType = "Allow"
	ChangeWindowDeny  ChangeWindowType = "Deny"
)

// ChangeWindow is a recurring period, from each time its schedule fires, for its duration.
type ChangeWindow struct {
	// Name identifies the window in the promotion's status.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Type is Allow or Deny.
	Type ChangeWindowType `json:"type" protobuf:"bytes,2,opt,name=type,casttype=ChangeWindowType"`
	// Schedule is a cron expression of five fields (minute hour day-of-month month
	// day-of-week), as a CronJob's, when the window opens.
	Schedule string `json:"schedule" protobuf:"bytes,3,opt,name=schedule"`
	// Duration is how long the window stays open, at least 1m.
	Duration metav1.Duration `json:"duration" protobuf:"bytes,4,opt,name=duration"`
	// TimeZone is the IANA time zone of the schedule, UTC when unset.
	// +optional
	TimeZone string `json:"timeZone,omitempty" protobuf:"bytes,5,opt,name=timeZone"`
}

// Freeze keeps promotions out of the Environment until it expires.
type Freeze struct {
	// Name identifies the freeze.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Reason is told to whoever waits for the freeze.
	Reason string `json:"reason" protobuf:"bytes,2,opt,name=reason"`
	// Until is when the freeze expires.
	Until metav1.Time `json:"until" protobuf:"bytes,3,opt,name=until"`
}

// Verification is a Job that verifies a deployment.
type Verification struct {
	// JobTemplate is the Job to run. Its pods run as the namespace's deployer ServiceAccount
	// (serviceAccountName is set to it) and never restart (restartPolicy Never when unset).
	JobTemplate batchv1.JobTemplateSpec `json:"jobTemplate" protobuf:"bytes,1,opt,name=jobTemplate"`
	// Timeout is how long the Job may take before the verification fails: 10m when unset.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty" protobuf:"bytes,2,opt,name=timeout"`
}

// GatePhase is where a promotion stands at a gate.
type GatePhase string

const (
	// GatePhaseWaiting: it waits to enter (a hold, a freeze, a change window, approvals).
	GatePhaseWaiting GatePhase = "Waiting"
	// GatePhaseDeploying: the binding points at the Snapshot; not every GitOpsDeployment runs it yet.
	GatePhaseDeploying GatePhase = "Deploying"
	// GatePhaseVerifying: every GitOpsDeployment runs it; it soaks and is verified.
	GatePhaseVerifying GatePhase = "Verifying"
	// GatePhasePassed: it may leave the Environment.
	GatePhasePassed GatePhase = "Passed"
	// GatePhaseRejected: an approver rejected it; it never entered.
	GatePhaseRejected GatePhase = "Rejected"
	// GatePhaseRolledBack: it failed its verification or became Degraded while it soaked, and
	// the Environment went back to the Snapshot it ran before.
	GatePhaseRolledBack GatePhase = "RolledBack"
	// GatePhaseStopped: its PromotionRun ended elsewhere (superseded, failed, timed out).
	GatePhaseStopped GatePhase = "Stopped"
)

// PromotionGateStatus is where the promotions through the gate stand.
type PromotionGateStatus struct {
	// Promotions are the gate's promotions, the latest first: every one in progress, and the
	// latest ended ones, ten in all at most when there are not more in progress.
	// +optional
	// +listType=atomic
	Promotions []GatedPromotion `json:"promotions,omitempty" protobuf:"bytes,1,rep,name=promotions"`
}

// GatedPromotion is one PromotionRun's passage through the gate.
type GatedPromotion struct {
	// PromotionRun is the run's name.
	PromotionRun string `json:"promotionRun" protobuf:"bytes,1,opt,name=promotionRun"`
	// PromotionRunUID is the run's UID: a run deleted and made again under the same name has
	// passages of its own.
	// +optional
	PromotionRunUID types.UID `json:"promotionRunUID,omitempty" protobuf:"bytes,2,opt,name=promotionRunUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// Application is the run's Application: the Environment's binding of it is what entered.
	// +optional
	Application string `json:"application,omitempty" protobuf:"bytes,3,opt,name=application"`
	// Snapshot is the run's Snapshot.
	Snapshot string `json:"snapshot" protobuf:"bytes,4,opt,name=snapshot"`
	// Phase is where it stands.
	Phase GatePhase `json:"phase" protobuf:"bytes,5,opt,name=phase,casttype=GatePhase"`
	// Message says what it waits for, or how it ended.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
	// PreviousSnapshot is the Snapshot the Environment ran before it was entered: where a
	// rollback goes.
	// +optional
	PreviousSnapshot string `json:"previousSnapshot,omitempty" protobuf:"bytes,7,opt,name=previousSnapshot"`
	// EnteredTime is when the binding was pointed at the Snapshot.
	// +optional
	EnteredTime *metav1.Time `json:"enteredTime,omitempty" protobuf:"bytes,8,opt,name=enteredTime"`
	// HealthyTime is when every GitOpsDeployment first ran the Snapshot, Synced and Healthy:
	// the soak time counts from it.
	// +optional
	HealthyTime *metav1.Time `json:"healthyTime,omitempty" protobuf:"bytes,9,opt,name=healthyTime"`
	// Approvers are the users whose approvals were counted.
	// +optional
	// +listType=atomic
	Approvers []string `json:"approvers,omitempty" protobuf:"bytes,10,rep,name=approvers"`
	// Override names the PromotionApproval (decision Override) that let it through a change
	// window or a freeze, and its user.
	// +optional
	Override string `json:"override,omitempty" protobuf:"bytes,11,opt,name=override"`
	// Verification is the verification Job's, once started.
	// +optional
	Verification *VerificationStatus `json:"verification,omitempty" protobuf:"bytes,12,opt,name=verification"`
	// CompletionTime is when it passed, or ended otherwise.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,13,opt,name=completionTime"`
}

// VerificationStatus is where a verification Job stands.
type VerificationStatus struct {
	// Job is the Job's name, in Namespace.
	Job string `json:"job" protobuf:"bytes,1,opt,name=job"`
	// Namespace is the Job's namespace: the PromotionRun's.
	Namespace string `json:"namespace" protobuf:"bytes,2,opt,name=namespace"`
	// Logs is the command that shows the Job's logs.
	Logs string `json:"logs" protobuf:"bytes,3,opt,name=logs"`
	// StartTime is when the Job was created.
	StartTime metav1.Time `json:"startTime" protobuf:"bytes,4,opt,name=startTime"`
	// Result is Succeeded or Failed once the Job ended (or timed out).
	// +optional
	Result string `json:"result,omitempty" protobuf:"bytes,5,opt,name=result"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionGateList is a list of PromotionGates.
type PromotionGateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []PromotionGate `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// ApprovalDecision is what a PromotionApproval decides.
type ApprovalDecision string

const (
	// ApprovalApprove counts toward the approvals a promotion needs. It takes the verb approve
	// on the Environment (kubectl auth can-i approve environments/<name>).
	ApprovalApprove ApprovalDecision = "Approve"
	// ApprovalReject stops the promotion. It takes the verb approve on the Environment.
	ApprovalReject ApprovalDecision = "Reject"
	// ApprovalOverride lets the promotion through the Environment's change windows and freezes
	// (break glass). It takes the verb override on the Environment.
	ApprovalOverride ApprovalDecision = "Override"
)

// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionApproval is one user's decision on a PromotionRun's promotion into an Environment.
// The server records who made it from the request (spec.username, spec.uid, spec.groups,
// whatever the client sent) and admits it only from a user allowed the decision's verb on the
// Environment. It is immutable.
type PromotionApproval struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec PromotionApprovalSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// PromotionApprovalSpec is the decision and who made it.
type PromotionApprovalSpec struct {
	// PromotionRun is the name of the PromotionRun decided on.
	PromotionRun string `json:"promotionRun" protobuf:"bytes,1,opt,name=promotionRun"`
	// PromotionRunUID is that run's UID when the approval was made, set by the server: the
	// decision is on that run, not on another made later under the same name.
	// +optional
	PromotionRunUID types.UID `json:"promotionRunUID,omitempty" protobuf:"bytes,2,opt,name=promotionRunUID,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// Environment is the Environment the run promotes into.
	Environment string `json:"environment" protobuf:"bytes,3,opt,name=environment"`
	// Decision is Approve, Reject or Override.
	Decision ApprovalDecision `json:"decision" protobuf:"bytes,4,opt,name=decision,casttype=ApprovalDecision"`
	// Comment says why; required for Reject and Override.
	// +optional
	Comment string `json:"comment,omitempty" protobuf:"bytes,5,opt,name=comment"`

	// Username is the user who created it, set by the server.
	// +optional
	Username string `json:"username,omitempty" protobuf:"bytes,6,opt,name=username"`
	// UID is that user's UID, set by the server.
	// +optional
	UID string `json:"uid,omitempty" protobuf:"bytes,7,opt,name=uid"`
	// Groups are that user's groups, set by the server.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty" protobuf:"bytes,8,rep,name=groups"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PromotionApprovalList is a list of PromotionApprovals.
type PromotionApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []PromotionApproval `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EnvironmentHold keeps automated promotion out of the Environment of the same name until it is
// deleted (released). The service makes one when it rolls an Environment back; a team may make
// one itself. Manual PromotionRuns are not held.
type EnvironmentHold struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec EnvironmentHoldSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// EnvironmentHoldSpec is why the Environment is held.
type EnvironmentHoldSpec struct {
	// Reason is told to the promotions held.
	Reason string `json:"reason" protobuf:"bytes,1,opt,name=reason"`
	// Snapshot is the Snapshot the Environment is held on, when the hold was made by a rollback.
	// +optional
	Snapshot string `json:"snapshot,omitempty" protobuf:"bytes,2,opt,name=snapshot"`
	// PromotionRun is the run whose rollback made the hold.
	// +optional
	PromotionRun string `json:"promotionRun,omitempty" protobuf:"bytes,3,opt,name=promotionRun"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// EnvironmentHoldList is a list of EnvironmentHolds.
type EnvironmentHoldList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []EnvironmentHold `json:"items" protobuf:"bytes,2,rep,name=items"`
}
