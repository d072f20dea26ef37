package operations

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// syncStart is a change with a Name, as the SyncRun controller records the start of a sync.
func syncStart(at time.Time) Change {
	return Change{
		ResourceType: managedv1alpha1.OperationResourceTypeSyncOperation,
		Target:       managedv1alpha1.OperationTarget{Kind: "Application", Namespace: "argocd", Name: "gitopsdepl-uid-web"},
		Source:       managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", Namespace: "jane", Name: "sync", UID: "uid-sync"},
		Action:       "started a sync of", At: at, Name: "syncrun-uid-sync-start",
	}
}

func list(t *testing.T, ctx context.Context, gitops *gitopsfake.Clientset) []managedv1alpha1.Operation {
	t.Helper()
	ops, err := gitops.ManagedGitopsV1alpha1().Operations("argocd").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ops.Items
}

// A change with a Name recorded again (a second start of the same SyncRun) shows as a second
// attempt of its Operation, never as an Operation more or not at all.
func TestNamedChangeRecordedAgainIsAnotherAttempt(t *testing.T) {
	ctx := context.Background()
	gitops := gitopsfake.NewSimpleClientset()
	r := NewRecorder(gitops, "argocd")
	for i := 0; i < 2; i++ {
		if err := r.write(ctx, r.shards[0], syncStart(t0)); err != nil {
			t.Fatal(err)
		}
	}
	ops := list(t, ctx, gitops)
	if len(ops) != 1 || ops[0].Name != "syncrun-uid-sync-start" || ops[0].Status.Attempts != 2 || ops[0].Status.State != managedv1alpha1.OperationStateCompleted {
		t.Fatalf("Operations %+v", ops)
	}
}

// Ensure of a change whose record is still queued (the recorder falls behind under load) must
// wait for that record rather than skip it (the agent could die before its writer runs) or
// write one of its own (the Operation would show two attempts).
func TestEnsureWaitsForTheQueuedRecord(t *testing.T) {
	ctx := context.Background()
	gitops := gitopsfake.NewSimpleClientset()
	r := NewRecorder(gitops, "argocd")
	// Now, not t0: the recorder's run also deletes Operations that ended over its retention ago.
	start := syncStart(time.Now())
	r.Record(start)
	ensured := make(chan error, 1)
	go func() { ensured <- r.Ensure(ctx, start) }()
	select {
	case err := <-ensured:
		t.Fatalf("Ensure returned (%v) before the queued record was written", err)
	case <-time.After(100 * time.Millisecond):
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.Run(runCtx, time.Hour)
	select {
	case err := <-ensured:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure did not return once the queued record was written")
	}
	ops := list(t, ctx, gitops)
	if len(ops) != 1 || ops[0].Status.Attempts != 1 || ops[0].Status.State != managedv1alpha1.OperationStateCompleted {
		t.Fatalf("Operations %+v, want one completed with one attempt", ops)
	}
}

// Retries of a failed change count as attempts of one Operation; the next change of the target
// after its success makes a new one.
func TestFailedChangeRetriesAreAttempts(t *testing.T) {
	ctx := context.Background()
	gitops := gitopsfake.NewSimpleClientset()
	controllertest.ServerFields(&gitops.Fake)
	r := NewRecorder(gitops, "argocd")
	c := Change{
		ResourceType: managedv1alpha1.OperationResourceTypeSyncOperation,
		Target:       managedv1alpha1.OperationTarget{Kind: "Application", Namespace: "argocd", Name: "app"},
		Action:       "applied", At: t0, Err: errors.New("boom"),
	}
	for _, err := range []error{c.Err, c.Err, nil, nil} {
		c.Err = err
		if err := r.write(ctx, r.shards[0], c); err != nil {
			t.Fatal(err)
		}
	}
	ops := list(t, ctx, gitops)
	if len(ops) != 2 {
		t.Fatalf("%d Operations, want 2: %+v", len(ops), ops)
	}
	attempts := map[int32]int{}
	for _, op := range ops {
		attempts[int32(op.Status.Attempts)]++
	}
	if attempts[3] != 1 || attempts[1] != 1 {
		t.Fatalf("attempts %v, want one Operation with 3 and one with 1", attempts)
	}
}

func TestOperationExpiry(t *testing.T) {
	cutoff := time.Unix(10000, 0)
	old, recent := metav1.NewTime(cutoff.Add(-time.Second)), metav1.NewTime(cutoff.Add(time.Second))
	for _, tc := range []struct {
		name    string
		created metav1.Time
		updated *metav1.Time
		want    bool
	}{
		{"finished before the cutoff", old, &old, true},
		{"finished after the cutoff", old, &recent, false},
		{"never updated, created before", old, nil, true},
		{"never updated, created after", recent, nil, false},
	} {
		op := &managedv1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: tc.created}}
		op.Status.LastStateUpdate = tc.updated
		if got := expired(op, cutoff); got != tc.want {
			t.Errorf("%s: expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
