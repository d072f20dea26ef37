package gitopsdeployment

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/gitops-engine/pkg/health"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

// reasons are the "Type Reason" of evs, in order.
func reasons(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

func opState(phase managedv1alpha1.OperationPhase, started metav1.Time, msg string) *managedv1alpha1.OperationState {
	return &managedv1alpha1.OperationState{
		Operation: managedv1alpha1.ApplicationOperation{
			Sync:        &managedv1alpha1.SyncOperation{Revision: "abc123"},
			InitiatedBy: managedv1alpha1.OperationInitiator{Automated: true},
		},
		Phase: phase, StartedAt: started, Message: msg,
		SyncResult: &managedv1alpha1.SyncOperationResult{Revision: "abc123"},
	}
}

func deplStatus(health managedv1alpha1.HealthStatusCode, op *managedv1alpha1.OperationState) managedv1alpha1.GitOpsDeploymentStatus {
	return managedv1alpha1.GitOpsDeploymentStatus{
		Health:         managedv1alpha1.HealthStatus{Status: health, Message: "msg of " + string(health)},
		Sync:           managedv1alpha1.SyncStatus{Status: managedv1alpha1.SyncStatusCodeSynced},
		OperationState: op,
	}
}

func TestDeploymentEvents(t *testing.T) {
	const (
		healthy     = managedv1alpha1.HealthStatusCodeHealthy
		degraded    = managedv1alpha1.HealthStatusCodeDegraded
		missing     = managedv1alpha1.HealthStatusCodeMissing
		progressing = managedv1alpha1.HealthStatusCodeProgressing
		running     = managedv1alpha1.OperationPhaseRunning
		succeeded   = managedv1alpha1.OperationPhaseSucceeded
		failed      = managedv1alpha1.OperationPhaseFailed
		errored     = managedv1alpha1.OperationPhaseError
	)
	for _, tc := range []struct {
		name        string
		old, new    managedv1alpha1.GitOpsDeploymentStatus
		wasDegraded bool
		want        []string
		contains    string
	}{
		{name: "nothing changed (an agent restarting)", old: deplStatus(healthy, opState(succeeded, t0, "ok")), new: deplStatus(healthy, opState(succeeded, t0, "ok"))},
		{name: "empty to empty", old: deplStatus("", nil), new: deplStatus("", nil)},
		{name: "sync started", old: deplStatus(healthy, nil), new: deplStatus(healthy, opState(running, t0, "")),
			want: []string{"Normal SyncStarted"}, contains: "revision abc123 (automated sync policy)"},
		{name: "running, then succeeded", old: deplStatus(healthy, opState(running, t0, "")), new: deplStatus(healthy, opState(succeeded, t0, "successfully synced")),
			want: []string{"Normal SyncSucceeded"}, contains: "Argo CD synced revision abc123: successfully synced"},
		{name: "started and succeeded between two looks", old: deplStatus(missing, nil), new: deplStatus(healthy, opState(succeeded, t0, "ok")),
			want: []string{"Normal SyncStarted", "Normal SyncSucceeded"}},
		{name: "a new sync after a successful one", old: deplStatus(healthy, opState(succeeded, t0, "ok")), new: deplStatus(healthy, opState(running, t1, "")),
			want: []string{"Normal SyncStarted"}},
		{name: "a new sync that succeeded again", old: deplStatus(healthy, opState(succeeded, t0, "ok")), new: deplStatus(healthy, opState(succeeded, t1, "ok")),
			want: []string{"Normal SyncStarted", "Normal SyncSucceeded"}},
		{name: "failed", old: deplStatus(healthy, opState(running, t0, "")), new: deplStatus(healthy, opState(failed, t0, "one or more objects failed to apply")),
			want: []string{"Warning SyncFailed"}, contains: "ended with phase Failed: one or more objects failed to apply"},
		{name: "error", old: deplStatus(healthy, opState(running, t0, "")), new: deplStatus(healthy, opState(errored, t0, "boom")),
			want: []string{"Warning SyncFailed"}, contains: "phase Error: boom"},
		{name: "the message of a running sync changes", old: deplStatus(healthy, opState(running, t0, "wave 1")), new: deplStatus(healthy, opState(running, t0, "wave 2"))},
		{name: "the operation state goes (a SyncRun's operation requested)", old: deplStatus(healthy, opState(succeeded, t0, "ok")), new: deplStatus(healthy, nil)},
		{name: "degraded", old: deplStatus(healthy, nil), new: deplStatus(degraded, nil),
			want: []string{"Warning HealthDegraded"}, contains: "is Degraded (was Healthy): msg of Degraded"},
		{name: "degraded from progressing", old: deplStatus(progressing, nil), new: deplStatus(degraded, nil), want: []string{"Warning HealthDegraded"}},
		{name: "degraded message changes", old: deplStatus(degraded, nil), new: func() managedv1alpha1.GitOpsDeploymentStatus {
			s := deplStatus(degraded, nil)
			s.Health.Message = "other"
			return s
		}()},
		// Argo CD says Missing for a resource added in Git until the sync creates it.
		{name: "missing after healthy (a new resource in Git)", old: deplStatus(healthy, nil), new: deplStatus(missing, nil)},
		{name: "missing before the first sync", old: deplStatus("", nil), new: deplStatus(missing, nil)},
		{name: "healthy after missing (the first sync)", old: deplStatus(missing, nil), new: deplStatus(healthy, nil)},
		{name: "progressing to healthy (a rollout)", old: deplStatus(progressing, nil), new: deplStatus(healthy, nil)},
		{name: "recovered by way of progressing", old: deplStatus(progressing, nil), new: deplStatus(healthy, nil), wasDegraded: true,
			want: []string{"Normal HealthRecovered"}, contains: "Healthy again (was Progressing)"},
		{name: "recovered", old: deplStatus(degraded, nil), new: deplStatus(healthy, nil),
			want: []string{"Normal HealthRecovered"}, contains: "Healthy again (was Degraded)"},
		{name: "sync failed and degraded at once", old: deplStatus(healthy, opState(running, t0, "")), new: deplStatus(degraded, opState(failed, t0, "x")),
			want: []string{"Warning SyncFailed", "Warning HealthDegraded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := deploymentEvents(tc.old, tc.new, tc.wasDegraded)
			if got := reasons(evs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			if tc.contains != "" && !strings.Contains(evs[0].Message, tc.contains) {
				t.Errorf("message %q does not contain %q", evs[0].Message, tc.contains)
			}
		})
	}
}

func TestDeploymentEventsInitiator(t *testing.T) {
	op := opState(managedv1alpha1.OperationPhaseRunning, t0, "")
	op.Operation.InitiatedBy = managedv1alpha1.OperationInitiator{Username: "gitops-service"} // a SyncRun's
	op.Operation.Sync.Revision = ""
	evs := deploymentEvents(managedv1alpha1.GitOpsDeploymentStatus{}, managedv1alpha1.GitOpsDeploymentStatus{OperationState: op}, false)
	if len(evs) != 1 || evs[0].Message != "Argo CD started a sync to the target revision (initiated by gitops-service)" {
		t.Fatalf("events %+v", evs)
	}
}

// fakeRecorder gives a Controller a recorder whose Events the test reads.
func fakeRecorder(c *Controller) *record.FakeRecorder {
	rec := record.NewFakeRecorder(100)
	c.recorder = rec
	return rec
}

// The deployment's Events follow its status write: none when it fails, once when it succeeds,
// none when the written status is seen again.
func TestDeploymentStatusWriteRecordsEvents(t *testing.T) {
	ctx := context.Background()
	d := deployment(nil)
	gitops := gitopsfake.NewSimpleClientset(d.DeepCopy())
	a := &Controller{gitops: gitops, now: func() time.Time { return t1.Time }}
	rec := fakeRecorder(a)
	app := syncedApp()
	controllertest.FailStatusWrites(gitops, "gitopsdeployments", 1)

	if err := a.updateStatus(ctx, d, nil, app, nil); err == nil {
		t.Fatal("the failed write did not fail")
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events after a failed write: %v", got)
	}
	if err := a.updateStatus(ctx, d, nil, app, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.RecordedReasons(rec), []string{"Normal SyncStarted", "Normal SyncSucceeded"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// The informer brings the written status back; the same Application changes nothing.
	written, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.updateStatus(ctx, written, nil, app, nil); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events for an unchanged status: %v", got)
	}
	// Degraded is recorded once, with the message.
	app.Status.Health = argov1alpha1.HealthStatus{Status: "Degraded", Message: "Deployment web exceeded its progress deadline"}
	if err := a.updateStatus(ctx, written, nil, app, nil); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Recorded(rec); len(got) != 1 || got[0] != "Warning HealthDegraded Health of the deployed resources is Degraded (was Healthy): Deployment web exceeded its progress deadline" {
		t.Fatalf("events %v", got)
	}
	// Degraded, then Progressing (a fix rolling out), then Healthy: recovered, once.
	for _, h := range []string{"Progressing", "Healthy", "Progressing", "Healthy"} {
		if written, err = gitops.ManagedGitopsV1alpha1().GitOpsDeployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		app.Status.Health = argov1alpha1.HealthStatus{Status: health.HealthStatusCode(h)}
		if err := a.updateStatus(ctx, written, nil, app, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := controllertest.Recorded(rec); len(got) != 1 || got[0] != "Normal HealthRecovered Health of the deployed resources is Healthy again (was Progressing)" {
		t.Fatalf("events %v, want one HealthRecovered (a later rollout is no recovery)", got)
	}
}
