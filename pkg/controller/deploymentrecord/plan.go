package deploymentrecord

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
)

// LabelDeployment labels a record with the name of its GitOpsDeployment, when that name is a
// valid label value (names may be 253 characters long, label values 63).
const LabelDeployment = "managed-gitops.redhat.com/gitopsdeployment"

// The limits of what a record holds.
const (
	// maxNameLength is a DNS subdomain's.
	maxNameLength = validation.DNS1123SubdomainMaxLength
	// nameHashLength is how many hex digits of the deployment name's SHA-256 replace what a
	// name too long loses.
	nameHashLength = 10
	// maxMessage and maxResourceMessage bound Argo CD's messages copied into a record.
	maxMessage         = 4096
	maxResourceMessage = 1024
)

// msgOutcomeUnseen is the message of a record whose sync was replaced by a later one before
// the agent saw it end: Argo CD keeps only the last operation's state.
const msgOutcomeUnseen = "Argo CD started a later sync before the outcome of this one was seen; its outcome is unknown"

// world is what the decision sees of one GitOpsDeployment key.
type world struct {
	// deployment is nil once it is gone.
	deployment *managedv1alpha1.GitOpsDeployment
	// records are the deployment's records (of its UID), newest first (recordsNewestFirst).
	records []*managedv1alpha1.DeploymentRecord
	// facts are what the lookups found; nil before they were made (plan.lookup says which).
	facts *facts
	// serviceUser tells whether a user name is one of the service's own identities.
	serviceUser func(string) bool
}

// lookup is what the thin layer must find out, in the audit trail and the API, before a record
// can be created: its trigger's facts.
type lookup struct {
	// syncRun (and its UID, when known): the creator of this SyncRun.
	syncRun    string
	syncRunUID types.UID
	// specWriter: the user of the newest write of the deployment itself (not its status).
	specWriter bool
	// binding: the SnapshotEnvironmentBinding that controls the deployment, its spec.snapshot
	// and the user of its newest write.
	binding string
	// holder: who made the deployment's GitOpsDeploymentHold (its spec.heldBy, which the server
	// sets from the request).
	holder bool
}

// facts are the answers to a lookup; "" where the trail or the API did not tell.
type facts struct {
	syncRunCreator  string
	specWriter      string
	bindingSnapshot string
	bindingWriter   string
	holder          string
}

// statusUpdate is a record's new status.
type statusUpdate struct {
	record *managedv1alpha1.DeploymentRecord
	status managedv1alpha1.DeploymentRecordStatus
}

// plan is what to write for one deployment: first the status updates, then the new record.
type plan struct {
	// lookup, when set, asks for facts before the decision can be made: decide again with
	// world.facts filled in.
	lookup *lookup
	// updates are the new statuses of existing records.
	updates []statusUpdate
	// create is the record of the deployment's current operation, which has none yet.
	create *managedv1alpha1.DeploymentRecord
}

// planRecords decides, from the deployment's status.operationState and its records, which
// record to create and which statuses to write. It is pure: every rule is in plan_test.go.
//
//   - The current operation (status.operationState) has one record, named after the deployment
//     and the operation's startedAt (recordName): the record of the same second and origin
//     (sameOrigin). The API keeps times to the second, and a SyncRun's sync may start in the
//     second the previous one started: a later operation of the same second is another record,
//     with an ordinal. Its spec is written once, when the record is created, and never again;
//     its status follows the operation's phase, message, finishedAt and per-resource results.
//   - A record is created once the revision is known (Argo CD's syncResult.revision, or a
//     commit SHA asked for), or once the operation ended without one (a failed sync is
//     recorded too); not for a deployment being deleted, nor one keeping no records
//     (revisionHistoryLimit 0).
//   - A record still Running whose operation was replaced by a later one before the agent saw
//     it end ends as Error, its outcome unknown.
func planRecords(w world) plan {
	var p plan
	d := w.deployment
	if d == nil || d.Status.OperationState == nil || d.Status.OperationState.StartedAt.IsZero() {
		return p
	}
	op := d.Status.OperationState
	var current, previous *managedv1alpha1.DeploymentRecord
	// ordinal counts the operations recorded in the same second before this one.
	ordinal := 1
	for _, r := range w.records {
		same := sameSecond(r.Spec.StartedAt, op.StartedAt)
		switch {
		case same && sameOrigin(r, op):
			if current == nil {
				current = r
			}
		case same || r.Spec.StartedAt.Before(&op.StartedAt):
			if same {
				ordinal++
			}
			if previous == nil {
				previous = r
			}
			if unfinished(r) {
				st := *r.Status.DeepCopy()
				st.Phase, st.Message = managedv1alpha1.DeploymentRecordError, msgOutcomeUnseen
				p.updates = append(p.updates, statusUpdate{record: r, status: st})
			}
		}
	}
	want := recordStatus(op)
	if current != nil {
		if !apiequality.Semantic.DeepEqual(current.Status, want) {
			p.updates = append(p.updates, statusUpdate{record: current, status: want})
		}
		return p
	}
	if d.DeletionTimestamp != nil || ptr.Deref(d.Spec.RevisionHistoryLimit, 1) == 0 {
		return p
	}
	revision, resolved := revisionOf(op)
	if !resolved {
		return p
	}
	trig, need := trigger(w, op, revision, previous)
	if need != nil && w.facts == nil {
		p.lookup = need
		return p
	}
	rec := &managedv1alpha1.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: d.Namespace,
			Name:      recordName(d.Name, op.StartedAt, ordinal),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         managedv1alpha1.SchemeGroupVersion.String(),
				Kind:               "GitOpsDeployment",
				Name:               d.Name,
				UID:                d.UID,
				Controller:         ptr.To(false),
				BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: managedv1alpha1.DeploymentRecordSpec{
			GitOpsDeploymentName: d.Name,
			GitOpsDeploymentUID:  d.UID,
			Generation:           d.Generation,
			Source:               sourceOf(d, op),
			Revision:             revision,
			Trigger:              trig,
			StartedAt:            *op.StartedAt.DeepCopy(),
		},
		Status: want,
	}
	if len(validation.IsValidLabelValue(d.Name)) == 0 {
		rec.Labels = map[string]string{LabelDeployment: d.Name}
	}
	p.create = rec
	return p
}

// trigger is what started op, or the lookup that must answer first. previous is the newest
// record of an earlier operation.
//
//   - An operation whose info names a SyncRun was that SyncRun's: its creator is the user.
//   - An automated sync of a deployment with no earlier record, or whose generation has grown
//     since the previous record, deployed a change of its spec: the user is the author of the
//     deployment's newest write. If that author is the service itself and a
//     SnapshotEnvironmentBinding controls the deployment, the change was a promotion through
//     that binding: its Snapshot, and as user whoever last wrote the binding unless that was
//     the service too.
//   - Otherwise an automated sync of another revision than the previous record's deployed a
//     new commit, or, while a GitOpsDeploymentHold keeps the deployment at a revision, the
//     rollback to it (its user is who made the hold); one of the same revision healed a drift
//     or retried.
//   - Any other operation was started outside the service, by the user Argo CD names.
func trigger(w world, op *managedv1alpha1.OperationState, revision string, previous *managedv1alpha1.DeploymentRecord) (managedv1alpha1.DeploymentTrigger, *lookup) {
	f := w.facts
	if f == nil {
		f = &facts{}
	}
	d := w.deployment
	if name, uid := syncRunOf(op.Operation.Info); name != "" || uid != "" {
		return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSyncRun, SyncRun: name, User: f.syncRunCreator},
			&lookup{syncRun: name, syncRunUID: uid}
	}
	if !op.Operation.InitiatedBy.Automated {
		return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerExternal, User: op.Operation.InitiatedBy.Username}, nil
	}
	if previous == nil || d.Generation > previous.Spec.Generation {
		binding := bindingOf(d)
		need := &lookup{specWriter: true, binding: binding}
		if binding != "" && f.specWriter != "" && w.serviceUser(f.specWriter) {
			t := managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerPromotion, Binding: binding, Snapshot: f.bindingSnapshot}
			if !w.serviceUser(f.bindingWriter) {
				t.User = f.bindingWriter
			}
			return t, need
		}
		return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: f.specWriter}, need
	}
	if revision != previous.Spec.Revision {
		if held(d) {
			return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerRollback, User: f.holder}, &lookup{holder: true}
		}
		return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit}, nil
	}
	return managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerAutomated}, nil
}

// held tells whether a GitOpsDeploymentHold keeps d at a revision: the Held condition the
// GitOpsDeployment controller keeps (pkg/controller/gitopsdeployment/hold.go). Who made the hold
// is a lookup (the hold's spec.heldBy), not read from the condition's message.
func held(d *managedv1alpha1.GitOpsDeployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == managedv1alpha1.GitOpsDeploymentConditionHeld && c.Status == managedv1alpha1.GitOpsConditionStatusTrue {
			return true
		}
	}
	return false
}

// syncRunOf is the name and UID of the SyncRun whose operation this is, from the info the
// SyncRun controller sets (syncrun.syncOperation).
func syncRunOf(info []managedv1alpha1.Info) (name string, uid types.UID) {
	for _, i := range info {
		switch i.Name {
		case syncrun.OperationInfoSyncRunUID:
			uid = types.UID(i.Value)
		case syncrun.OperationInfoSyncRun:
			// "namespace/name"
			if _, n, ok := strings.Cut(i.Value, "/"); ok {
				name = n
			} else {
				name = i.Value
			}
		}
	}
	return name, uid
}

// bindingOf is the SnapshotEnvironmentBinding that generated the deployment: its controller,
// on a deployment that carries the labels the binding controller sets.
func bindingOf(d *managedv1alpha1.GitOpsDeployment) string {
	owner := metav1.GetControllerOfNoCopy(d)
	if owner == nil || owner.Kind != "SnapshotEnvironmentBinding" || owner.APIVersion != appstudiov1alpha1.SchemeGroupVersion.String() {
		return ""
	}
	for _, l := range []string{appstudiov1alpha1.ApplicationLabel, appstudiov1alpha1.EnvironmentLabel} {
		if d.Labels[l] == "" {
			return ""
		}
	}
	return owner.Name
}

// sha is a full commit hash, SHA-1 or SHA-256.
var sha = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// revisionOf is the commit of op and whether it is known: the one Argo CD resolved
// (syncResult.revision), or a commit asked for. An operation that ended without resolving
// one is recorded with what it was asked for, if anything.
func revisionOf(op *managedv1alpha1.OperationState) (string, bool) {
	if op.SyncResult != nil && op.SyncResult.Revision != "" {
		return op.SyncResult.Revision, true
	}
	asked := ""
	if op.Operation.Sync != nil {
		asked = op.Operation.Sync.Revision
	}
	return asked, sha.MatchString(asked) || completed(op.Phase)
}

func completed(phase managedv1alpha1.OperationPhase) bool {
	switch phase {
	case managedv1alpha1.OperationPhaseSucceeded, managedv1alpha1.OperationPhaseFailed, managedv1alpha1.OperationPhaseError:
		return true
	}
	return false
}

// sourceOf is the source synced: as Argo CD reports it in the result, else the deployment's.
func sourceOf(d *managedv1alpha1.GitOpsDeployment, op *managedv1alpha1.OperationState) managedv1alpha1.ApplicationSource {
	if op.SyncResult != nil && op.SyncResult.Source.RepoURL != "" {
		return op.SyncResult.Source
	}
	return d.Spec.Source
}

// recordStatus is a record's status for op.
func recordStatus(op *managedv1alpha1.OperationState) managedv1alpha1.DeploymentRecordStatus {
	st := managedv1alpha1.DeploymentRecordStatus{Message: framework.TruncateMessage(op.Message, maxMessage)}
	switch op.Phase {
	case managedv1alpha1.OperationPhaseSucceeded:
		st.Phase = managedv1alpha1.DeploymentRecordSucceeded
	case managedv1alpha1.OperationPhaseFailed:
		st.Phase = managedv1alpha1.DeploymentRecordFailed
	case managedv1alpha1.OperationPhaseError:
		st.Phase = managedv1alpha1.DeploymentRecordError
	default: // Running, Terminating
		st.Phase = managedv1alpha1.DeploymentRecordRunning
	}
	if op.FinishedAt != nil && completed(op.Phase) {
		st.FinishedAt = op.FinishedAt.DeepCopy()
	}
	if op.SyncResult != nil {
		for _, r := range op.SyncResult.Resources {
			st.Resources = append(st.Resources, managedv1alpha1.RecordedResource{
				Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
				Status: string(r.Status), Message: framework.TruncateMessage(r.Message, maxResourceMessage),
			})
		}
	}
	return st
}

// unfinished tells whether a record's sync was last seen running.
func unfinished(r *managedv1alpha1.DeploymentRecord) bool {
	return r.Status.Phase == "" || r.Status.Phase == managedv1alpha1.DeploymentRecordRunning
}

// sameSecond compares times as the API keeps them: to the second.
func sameSecond(a, b metav1.Time) bool { return a.Unix() == b.Unix() }

// sameOrigin tells whether record r, of the same second as op, can be op's: a SyncRun's
// operation is recorded with that SyncRun, any other without one and, once both commits are
// known, at the same commit (automated sync may deploy a new commit in the second the previous
// sync started: that is another operation). Two operations of the same second, origin and commit
// cannot be told apart: Argo CD starts a sync only once the previous one ended, and a SyncRun
// only once the previous SyncRun's outcome is written.
func sameOrigin(r *managedv1alpha1.DeploymentRecord, op *managedv1alpha1.OperationState) bool {
	name, uid := syncRunOf(op.Operation.Info)
	if name == "" && uid == "" {
		if r.Spec.Trigger.Type == managedv1alpha1.DeploymentTriggerSyncRun {
			return false
		}
		revision, _ := revisionOf(op)
		return !sha.MatchString(revision) || !sha.MatchString(r.Spec.Revision) || revision == r.Spec.Revision
	}
	return r.Spec.Trigger.Type == managedv1alpha1.DeploymentTriggerSyncRun && r.Spec.Trigger.SyncRun == name
}

// recordName is the name of the record of the deployment's operation started at startedAt:
// "<deployment>-<startedAt in Unix seconds>", and "-<ordinal>" after it for the second and
// later operations started in that second. A name that would be longer than a DNS subdomain
// keeps as much of the deployment's name as fits beside a hash of the whole name.
func recordName(deployment string, startedAt metav1.Time, ordinal int) string {
	suffix := "-" + strconv.FormatInt(startedAt.Unix(), 10)
	if ordinal > 1 {
		suffix += "-" + strconv.Itoa(ordinal)
	}
	if len(deployment)+len(suffix) <= maxNameLength {
		return deployment + suffix
	}
	sum := sha256.Sum256([]byte(deployment))
	hash := "-" + hex.EncodeToString(sum[:])[:nameHashLength]
	prefix := strings.TrimRight(deployment[:maxNameLength-len(hash)-len(suffix)], "-.")
	return prefix + hash + suffix
}
