package deploymentrecord

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
)

const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	// controllersUser is a service identity; alice, bob and admin are people.
	controllersUser = DefaultServiceUserPrefix + "gitops-controllers"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
	t2 = metav1.NewTime(t0.Add(2 * time.Minute))
)

func isService(u string) bool { return strings.HasPrefix(u, DefaultServiceUserPrefix) }

// deployment is an automated GitOpsDeployment of generation gen whose operation started at
// started, mutated by ms.
func deployment(gen int64, ms ...func(*managedv1alpha1.GitOpsDeployment)) *managedv1alpha1.GitOpsDeployment {
	d := &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web", UID: "uid-web", Generation: gen, ResourceVersion: "100"},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://example.com/org/repo", Path: "env/dev", TargetRevision: "main"},
			Type:   managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	for _, m := range ms {
		m(d)
	}
	return d
}

// operation gives the deployment an operation started at started, in phase, of revision rev
// (resolved: in syncResult), initiated as by says.
func operation(started metav1.Time, phase managedv1alpha1.OperationPhase, rev string, by managedv1alpha1.OperationInitiator) func(*managedv1alpha1.GitOpsDeployment) {
	return func(d *managedv1alpha1.GitOpsDeployment) {
		op := &managedv1alpha1.OperationState{
			Operation: managedv1alpha1.ApplicationOperation{InitiatedBy: by, Sync: &managedv1alpha1.SyncOperation{Revision: rev}},
			Phase:     phase, StartedAt: started,
		}
		if rev != "" {
			op.SyncResult = &managedv1alpha1.SyncOperationResult{Revision: rev}
		}
		if completed(phase) {
			op.FinishedAt = ptr.To(metav1.NewTime(started.Add(30 * time.Second)))
		}
		d.Status.OperationState = op
	}
}

var automated = managedv1alpha1.OperationInitiator{Automated: true}

func bySyncRun(d *managedv1alpha1.GitOpsDeployment) {
	d.Status.OperationState.Operation.InitiatedBy = managedv1alpha1.OperationInitiator{Username: "gitops-service"}
	d.Status.OperationState.Operation.Info = []managedv1alpha1.Info{
		{Name: syncrun.OperationInfoSyncRunUID, Value: "uid-run-1"},
		{Name: syncrun.OperationInfoSyncRun, Value: "jane/run-1"},
	}
}

func fromBinding(d *managedv1alpha1.GitOpsDeployment) {
	d.Labels = map[string]string{appstudiov1alpha1.ApplicationLabel: "app", appstudiov1alpha1.EnvironmentLabel: "prod", appstudiov1alpha1.ComponentLabel: "web"}
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: appstudiov1alpha1.SchemeGroupVersion.String(), Kind: "SnapshotEnvironmentBinding",
		Name: "app-prod-binding", UID: "uid-b", Controller: ptr.To(true)}}
}

// heldAt gives the deployment the Held condition of a GitOpsDeploymentHold at rev made by user,
// as the GitOpsDeployment controller writes it. Who made the hold is a lookup of the hold itself:
// TestRecordsFollowTheOperations gives the message another name than the hold's.
func heldAt(rev, user string) func(*managedv1alpha1.GitOpsDeployment) {
	return func(d *managedv1alpha1.GitOpsDeployment) {
		d.Status.Conditions = append(d.Status.Conditions, managedv1alpha1.GitOpsDeploymentCondition{
			Type: managedv1alpha1.GitOpsDeploymentConditionHeld, Status: managedv1alpha1.GitOpsConditionStatusTrue,
			Reason:  managedv1alpha1.GitOpsDeploymentReasonRolledBack,
			Message: "Held at revision " + rev + " (DeploymentRecord web-1) by " + strconv.Quote(user) + " since 2025-03-04T05:06:07Z: broken",
		})
	}
}

// record is an existing record of an operation started at started.
func record(started metav1.Time, gen int64, rev string, phase managedv1alpha1.DeploymentRecordPhase) *managedv1alpha1.DeploymentRecord {
	return &managedv1alpha1.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: recordName("web", started, 1)},
		Spec: managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: "web", GitOpsDeploymentUID: "uid-web", Generation: gen,
			Revision: rev, StartedAt: started, Trigger: managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit}},
		Status: managedv1alpha1.DeploymentRecordStatus{Phase: phase},
	}
}

// syncRunRecord is an existing record of SyncRun run's operation started at started.
func syncRunRecord(started metav1.Time, run string, phase managedv1alpha1.DeploymentRecordPhase) *managedv1alpha1.DeploymentRecord {
	r := record(started, 1, shaA, phase)
	r.Spec.Trigger = managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSyncRun, SyncRun: run, User: "bob"}
	return r
}

// newRecord is the record the plan creates for d's operation, with trigger t.
func newRecord(d *managedv1alpha1.GitOpsDeployment, t managedv1alpha1.DeploymentTrigger, ms ...func(*managedv1alpha1.DeploymentRecord)) *managedv1alpha1.DeploymentRecord {
	op := d.Status.OperationState
	rev, _ := revisionOf(op)
	r := &managedv1alpha1.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "jane", Name: recordName(d.Name, op.StartedAt, 1), Labels: map[string]string{LabelDeployment: d.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "managed-gitops.redhat.com/v1alpha1", Kind: "GitOpsDeployment", Name: d.Name,
				UID: d.UID, Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false)}},
		},
		Spec: managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: d.Name, GitOpsDeploymentUID: d.UID, Generation: d.Generation,
			Source: d.Spec.Source, Revision: rev, Trigger: t, StartedAt: op.StartedAt},
		Status: recordStatus(op),
	}
	for _, m := range ms {
		m(r)
	}
	return r
}

func TestPlanRecords(t *testing.T) {
	running, succeeded, failed := managedv1alpha1.OperationPhaseRunning, managedv1alpha1.OperationPhaseSucceeded, managedv1alpha1.OperationPhaseFailed
	finished := func(d *managedv1alpha1.GitOpsDeployment) {
		op := d.Status.OperationState
		op.Phase, op.Message, op.FinishedAt = succeeded, "successfully synced (all tasks run)", &t2
		op.SyncResult.Resources = []managedv1alpha1.ResourceResult{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web", Status: managedv1alpha1.ResultCodeSynced, Message: "deployment.apps/web configured"},
			{Kind: "ConfigMap", Namespace: "jane", Name: "old", Status: managedv1alpha1.ResultCodePruned, Message: "pruned"},
		}
	}
	for _, tc := range []struct {
		name    string
		d       *managedv1alpha1.GitOpsDeployment
		records []*managedv1alpha1.DeploymentRecord
		facts   *facts
		want    plan
	}{
		{name: "no operation yet", d: deployment(1)},
		{name: "gone", d: nil},
		{
			name: "running, revision not resolved yet: wait",
			d: deployment(1, operation(t0, running, "", automated), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Status.OperationState.Operation.Sync.Revision = "main"
			}),
		},
		{
			name: "first sync of a new deployment: ask who wrote it",
			d:    deployment(1, operation(t0, running, shaA, automated)),
			want: plan{lookup: &lookup{specWriter: true}},
		},
		{
			name:  "first sync of a new deployment: a spec change by its author",
			d:     deployment(1, operation(t0, running, shaA, automated)),
			facts: &facts{specWriter: "alice"},
			want: plan{create: newRecord(deployment(1, operation(t0, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: "alice"})},
		},
		{
			name:    "generation grew since the previous record: a spec change",
			d:       deployment(3, operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{specWriter: "alice"},
			want: plan{create: newRecord(deployment(3, operation(t1, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: "alice"})},
		},
		{
			name:    "same generation, another commit: a new commit, nothing to look up",
			d:       deployment(2, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want: plan{create: newRecord(deployment(2, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit})},
		},
		{
			name:    "held at an earlier commit: ask who made the hold",
			d:       deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaB, managedv1alpha1.DeploymentRecordSucceeded)},
			want:    plan{lookup: &lookup{holder: true}},
		},
		{
			name:    "held at an earlier commit: the rollback, by who made the hold",
			d:       deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaB, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{holder: "alice"},
			want: plan{create: newRecord(deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerRollback, User: "alice"})},
		},
		{
			name:    "held, the hold released before it could be read: a rollback by nobody known",
			d:       deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaB, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{},
			want: plan{create: newRecord(deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerRollback})},
		},
		{
			name:    "held, the same commit again: automated (self-heal under the hold)",
			d:       deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want: plan{create: newRecord(deployment(2, heldAt(shaA, "alice"), operation(t1, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerAutomated})},
		},
		{
			name:    "released (Held gone): the newest commit again is a new commit",
			d:       deployment(2, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want: plan{create: newRecord(deployment(2, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit})},
		},
		{
			name:    "same generation and commit: automated (self-heal, retry)",
			d:       deployment(2, operation(t1, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordFailed)},
			want: plan{create: newRecord(deployment(2, operation(t1, running, shaA, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerAutomated})},
		},
		{
			name:    "a binding's deployment: ask about the binding too",
			d:       deployment(3, fromBinding, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want:    plan{lookup: &lookup{specWriter: true, binding: "app-prod-binding"}},
		},
		{
			name:    "a binding's deployment written by the service: a promotion, by whoever pointed the binding",
			d:       deployment(3, fromBinding, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{specWriter: controllersUser, bindingSnapshot: "snap-2", bindingWriter: "alice"},
			want: plan{create: newRecord(deployment(3, fromBinding, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerPromotion, Binding: "app-prod-binding", Snapshot: "snap-2", User: "alice"})},
		},
		{
			name:    "a promotion run by the service (a PromotionRun pointed the binding): no user",
			d:       deployment(3, fromBinding, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{specWriter: controllersUser, bindingSnapshot: "snap-2", bindingWriter: controllersUser},
			want: plan{create: newRecord(deployment(3, fromBinding, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerPromotion, Binding: "app-prod-binding", Snapshot: "snap-2"})},
		},
		{
			name:    "a binding's deployment edited by a person: that person's spec change",
			d:       deployment(3, fromBinding, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{specWriter: "alice", bindingSnapshot: "snap-2"},
			want: plan{create: newRecord(deployment(3, fromBinding, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: "alice"})},
		},
		{
			name:    "written by the service without a binding: a spec change by the service",
			d:       deployment(3, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{specWriter: controllersUser},
			want: plan{create: newRecord(deployment(3, operation(t1, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: controllersUser})},
		},
		{
			name: "a SyncRun's operation: ask who created it",
			d:    deployment(1, operation(t0, running, shaA, automated), bySyncRun),
			want: plan{lookup: &lookup{syncRun: "run-1", syncRunUID: types.UID("uid-run-1")}},
		},
		{
			name:  "a SyncRun's operation: its creator",
			d:     deployment(1, operation(t0, running, shaA, automated), bySyncRun),
			facts: &facts{syncRunCreator: "bob"},
			want: plan{create: newRecord(deployment(1, operation(t0, running, shaA, automated), bySyncRun),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSyncRun, SyncRun: "run-1", User: "bob"})},
		},
		{
			name: "started in Argo CD by someone else: external",
			d:    deployment(1, operation(t0, running, shaA, managedv1alpha1.OperationInitiator{Username: "admin"})),
			want: plan{create: newRecord(deployment(1, operation(t0, running, shaA, managedv1alpha1.OperationInitiator{Username: "admin"})),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerExternal, User: "admin"})},
		},
		{
			name: "failed before resolving a commit: recorded with what it asked for",
			d: deployment(1, operation(t0, failed, "", managedv1alpha1.OperationInitiator{Username: "admin"}), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Status.OperationState.Operation.Sync.Revision = "main"
				d.Status.OperationState.Message = "rpc error: repository not found"
			}),
			want: plan{create: newRecord(deployment(1, operation(t0, failed, "", managedv1alpha1.OperationInitiator{Username: "admin"}), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Status.OperationState.Operation.Sync.Revision = "main"
				d.Status.OperationState.Message = "rpc error: repository not found"
			}), managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerExternal, User: "admin"},
				func(r *managedv1alpha1.DeploymentRecord) {
					r.Spec.Revision = "main"
					r.Status = managedv1alpha1.DeploymentRecordStatus{Phase: managedv1alpha1.DeploymentRecordFailed,
						Message: "rpc error: repository not found", FinishedAt: ptr.To(metav1.NewTime(t0.Add(30 * time.Second)))}
				})},
		},
		{
			name:    "the record's operation finished: its status",
			d:       deployment(2, operation(t1, running, shaB, automated), finished),
			records: []*managedv1alpha1.DeploymentRecord{record(t1, 2, shaB, managedv1alpha1.DeploymentRecordRunning), record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want: plan{updates: []statusUpdate{{record: record(t1, 2, shaB, managedv1alpha1.DeploymentRecordRunning),
				status: managedv1alpha1.DeploymentRecordStatus{
					Phase: managedv1alpha1.DeploymentRecordSucceeded, Message: "successfully synced (all tasks run)", FinishedAt: &t2,
					Resources: []managedv1alpha1.RecordedResource{
						{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Status: "Synced", Message: "deployment.apps/web configured"},
						{Kind: "ConfigMap", Namespace: "jane", Name: "old", Status: "Pruned", Message: "pruned"},
					}}}}},
		},
		{
			name:    "the record is up to date: nothing (its spec is never rewritten)",
			d:       deployment(5, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t1, 2, shaB, managedv1alpha1.DeploymentRecordRunning)},
		},
		{
			name:    "a record left running by an operation replaced before its end: Error, outcome unknown",
			d:       deployment(2, operation(t1, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordRunning)},
			want: plan{
				updates: []statusUpdate{{record: record(t0, 2, shaA, managedv1alpha1.DeploymentRecordRunning),
					status: managedv1alpha1.DeploymentRecordStatus{Phase: managedv1alpha1.DeploymentRecordError, Message: msgOutcomeUnseen}}},
				create: newRecord(deployment(2, operation(t1, running, shaB, automated)),
					managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit}),
			},
		},
		{
			name: "a SyncRun's sync started in the second of the previous SyncRun's: another record, with an ordinal",
			d: deployment(1, operation(t0, running, shaA, automated), func(d *managedv1alpha1.GitOpsDeployment) {
				bySyncRun(d)
				d.Status.OperationState.Operation.Info[0].Value, d.Status.OperationState.Operation.Info[1].Value = "uid-run-2", "jane/run-2"
			}),
			records: []*managedv1alpha1.DeploymentRecord{syncRunRecord(t0, "run-1", managedv1alpha1.DeploymentRecordSucceeded)},
			facts:   &facts{syncRunCreator: "bob"},
			want: plan{create: newRecord(deployment(1, operation(t0, running, shaA, automated), func(d *managedv1alpha1.GitOpsDeployment) {
				bySyncRun(d)
				d.Status.OperationState.Operation.Info[0].Value, d.Status.OperationState.Operation.Info[1].Value = "uid-run-2", "jane/run-2"
			}), managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSyncRun, SyncRun: "run-2", User: "bob"},
				func(r *managedv1alpha1.DeploymentRecord) { r.Name = "web-1741064767-2" })},
		},
		{
			name:    "automated sync of a new commit started in the second of the previous one's: another record, with an ordinal",
			d:       deployment(2, operation(t0, running, shaB, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordSucceeded)},
			want: plan{create: newRecord(deployment(2, operation(t0, running, shaB, automated)),
				managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerNewCommit},
				func(r *managedv1alpha1.DeploymentRecord) { r.Name = "web-1741064767-2" })},
		},
		{
			name:    "automated sync of the same second and commit as its record: that record",
			d:       deployment(2, operation(t0, running, shaA, automated)),
			records: []*managedv1alpha1.DeploymentRecord{record(t0, 2, shaA, managedv1alpha1.DeploymentRecordRunning)},
		},
		{
			name:    "a SyncRun's sync of the same second as its record: that record",
			d:       deployment(1, operation(t0, running, shaA, automated), bySyncRun),
			records: []*managedv1alpha1.DeploymentRecord{syncRunRecord(t0, "run-1", managedv1alpha1.DeploymentRecordRunning)},
		},
		{
			name: "being deleted: no new record",
			d: deployment(1, operation(t0, running, shaA, automated), func(d *managedv1alpha1.GitOpsDeployment) {
				d.DeletionTimestamp = &t1
			}),
		},
		{
			name: "keeps no records (revisionHistoryLimit 0): none",
			d: deployment(1, operation(t0, running, shaA, automated), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Spec.RevisionHistoryLimit = ptr.To[int32](0)
			}),
		},
		{
			name: "a name too long for a label value: no label",
			d: deployment(1, operation(t0, running, shaA, managedv1alpha1.OperationInitiator{Username: "admin"}), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Name = strings.Repeat("w", 64)
			}),
			want: plan{create: newRecord(deployment(1, operation(t0, running, shaA, managedv1alpha1.OperationInitiator{Username: "admin"}), func(d *managedv1alpha1.GitOpsDeployment) {
				d.Name = strings.Repeat("w", 64)
			}), managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerExternal, User: "admin"},
				func(r *managedv1alpha1.DeploymentRecord) { r.Labels = nil })},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planRecords(world{deployment: tc.d, records: tc.records, facts: tc.facts, serviceUser: isService})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(plan{}, statusUpdate{}, lookup{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordName(t *testing.T) {
	if got := recordName("web", t0, 1); got != "web-1741064767" {
		t.Errorf("recordName = %q", got)
	}
	long := strings.Repeat("a", 120) + "." + strings.Repeat("b", 132) // 253
	a, b := recordName(long, t0, 1), recordName(long, t1, 1)
	for _, n := range []string{a, b} {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || len(n) > 253 {
			t.Errorf("recordName of a long name = %q (%d): %v", n, len(n), errs)
		}
	}
	if a == b || a != recordName(long, t0, 1) || !strings.HasSuffix(a, "-1741064767") {
		t.Errorf("recordName of a long name is not deterministic and distinct: %q, %q", a, b)
	}
	// Another long name with the same prefix gets another hash.
	if other := recordName(strings.Repeat("a", 120)+"."+strings.Repeat("b", 131)+"c", t0, 1); other == a {
		t.Errorf("two long names share record name %q", a)
	}
	if got := recordName("web", t0, 2); got != "web-1741064767-2" {
		t.Errorf("recordName of a second operation of the second = %q", got)
	}
	if n := recordName(long, t0, 2); len(validation.IsDNS1123Subdomain(n)) > 0 || !strings.HasSuffix(n, "-1741064767-2") {
		t.Errorf("recordName of a long name's second operation of the second = %q", n)
	}
	// A cut just after a dot or dash does not leave it at the end of the prefix.
	cut := strings.Repeat("a", 229) + "b." + strings.Repeat("c", 22)
	if n := recordName(cut, t0, 1); len(validation.IsDNS1123Subdomain(n)) > 0 {
		t.Errorf("recordName(%q) = %q: invalid", cut, n)
	}
}
