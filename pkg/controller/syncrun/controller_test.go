package syncrun

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

var (
	srT0    = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	srLater = metav1.NewTime(srT0.Add(time.Minute))
)

func manualDeployment() *managedv1alpha1.GitOpsDeployment {
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web", UID: "0b1c2d3e-0000-4000-8000-000000000001", CreationTimestamp: srT0},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://example.com/org/repo", Path: "env/dev", TargetRevision: "main"},
			Type:   managedv1alpha1.GitOpsDeploymentSpecTypeManual,
		},
	}
}

func syncRun(name string, created metav1.Time, mutate ...func(*managedv1alpha1.GitOpsDeploymentSyncRun)) *managedv1alpha1.GitOpsDeploymentSyncRun {
	r := &managedv1alpha1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created},
		Spec:       managedv1alpha1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "web"},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

// appOf is the Application of d as Argo CD leaves it between operations.
func appOf(d *managedv1alpha1.GitOpsDeployment, mutate ...func(*argov1alpha1.Application)) *argov1alpha1.Application {
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "argocd", Name: argocd.ApplicationName(d.UID), ResourceVersion: "7",
			Labels:      map[string]string{argocd.LabelDeploymentNamespace: d.Namespace, argocd.LabelDeploymentUID: string(d.UID)},
			Annotations: map[string]string{argocd.AnnotationDeploymentName: d.Name},
		},
	}
	for _, m := range mutate {
		m(app)
	}
	return app
}

func requested(run *managedv1alpha1.GitOpsDeploymentSyncRun) func(*argov1alpha1.Application) {
	return func(app *argov1alpha1.Application) {
		app.Operation = syncOperation(run, manualDeployment())
		app.Status.OperationState = nil
	}
}

func inState(run *managedv1alpha1.GitOpsDeploymentSyncRun, phase, msg string) func(*argov1alpha1.Application) {
	return func(app *argov1alpha1.Application) {
		op := syncOperation(run, manualDeployment())
		// The phase is gitops-engine's type; JSON sets it without importing that module.
		st := &argov1alpha1.OperationState{}
		if err := json.Unmarshal([]byte(`{"phase":"`+phase+`"}`), st); err != nil {
			panic(err)
		}
		st.Operation, st.StartedAt, st.Message = *op, srT0, msg
		app.Status.OperationState = st
		if st.Phase.Completed() {
			app.Operation = nil
		} else {
			app.Operation = op
		}
	}
}

func refreshedFor(run *managedv1alpha1.GitOpsDeploymentSyncRun, argoStillRefreshing bool) func(*argov1alpha1.Application) {
	return func(app *argov1alpha1.Application) {
		app.Annotations[AnnotationSyncRunRefresh] = string(run.UID)
		if argoStillRefreshing {
			app.Annotations[annotationArgoRefresh] = refreshNormal
		}
	}
}

func withCondition(c *managedv1alpha1.GitOpsDeploymentSyncRunCondition) func(*managedv1alpha1.GitOpsDeploymentSyncRun) {
	return func(r *managedv1alpha1.GitOpsDeploymentSyncRun) {
		cc := *c
		cc.LastTransitionTime = &srT0
		r.Status.Conditions = []managedv1alpha1.GitOpsDeploymentSyncRunCondition{cc}
	}
}

var succeeded = &managedv1alpha1.GitOpsDeploymentSyncRunCondition{
	Type: managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: managedv1alpha1.GitOpsConditionStatusFalse,
}

// plan runs planSyncRuns a minute after srT0.
func plan(runs []*managedv1alpha1.GitOpsDeploymentSyncRun, d *managedv1alpha1.GitOpsDeployment, apps ...*argov1alpha1.Application) syncRunPlan {
	return planSyncRuns(syncRunWorld{runs: runs, deployment: d, applications: apps}, srLater)
}

func statusOf(t *testing.T, p syncRunPlan, run *managedv1alpha1.GitOpsDeploymentSyncRun) (*managedv1alpha1.GitOpsDeploymentSyncRunCondition, bool) {
	t.Helper()
	for _, s := range p.statuses {
		if s.run.UID == run.UID {
			return findSyncRunCondition(s.conditions), true
		}
	}
	return nil, false
}

func expectNoAppAction(t *testing.T, p syncRunPlan) {
	t.Helper()
	if p.refresh != nil || p.start != nil || len(p.terminate) > 0 || p.nudge != nil {
		t.Fatalf("expected no Application action, got refresh=%v start=%v terminate=%d nudge=%v", p.refresh, p.start, len(p.terminate), p.nudge)
	}
}

func TestSyncOperationRevisionAndOptions(t *testing.T) {
	d := manualDeployment()
	d.Spec.SyncPolicy = &managedv1alpha1.SyncPolicy{SyncOptions: managedv1alpha1.SyncOptions{managedv1alpha1.SyncOptionCreateNamespaceTrue}}
	run := syncRun("pin", srT0, func(r *managedv1alpha1.GitOpsDeploymentSyncRun) {
		r.Spec.RevisionID = "0123456789abcdef0123456789abcdef01234567"
	})
	raw, err := json.Marshal(operationPatch(syncOperation(run, d), syncRequest{run: run.UID, at: srLater.Time}))
	if err != nil {
		t.Fatal(err)
	}
	// The exact merge patch: the revision is the SyncRun's, the sync options the deployment's
	// (Argo CD reads them from the operation only), the info names the SyncRun, the refresh
	// marker goes, the time of the request is kept and Argo CD starts the operation afresh.
	want := `{"metadata":{"annotations":{"managed-gitops.redhat.com/syncrun-refresh":null,"managed-gitops.redhat.com/syncrun-requested":"uid-pin 2025-01-02T03:05:05Z 0"}},` +
		`"operation":{"sync":{"revision":"0123456789abcdef0123456789abcdef01234567","prune":true,` +
		`"syncStrategy":{"hook":{}},"syncOptions":["PrunePropagationPolicy=background","CreateNamespace=true"]},` +
		`"initiatedBy":{"username":"gitops-service"},` +
		`"info":[{"name":"syncRunUID","value":"uid-pin"},{"name":"syncRun","value":"jane/pin"}],"retry":{}},` +
		`"status":{"operationState":null}}`
	if string(raw) != want {
		t.Errorf("operation patch:\n got %s\nwant %s", raw, want)
	}

	// Without a revision the operation leaves it empty: Argo CD then syncs the deployment's
	// target revision, resolved at sync time.
	op := syncOperation(syncRun("head", srT0), manualDeployment())
	if op.Sync.Revision != "" {
		t.Errorf("revision %q, want empty", op.Sync.Revision)
	}
	if got := syncRunOf(op.Info); got != "uid-head" {
		t.Errorf("info names %q", got)
	}
}

func TestPatchesCarryOnlyTheirFields(t *testing.T) {
	raw, _ := json.Marshal(refreshPatch(syncRun("a", srT0)))
	if want := `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal","managed-gitops.redhat.com/syncrun-refresh":"uid-a"}}}`; string(raw) != want {
		t.Errorf("refresh patch:\n got %s\nwant %s", raw, want)
	}
	raw, _ = json.Marshal(requestPatch(syncRequest{run: "uid-a", at: srLater.Add(time.Millisecond), nudges: 2}))
	if want := `{"metadata":{"annotations":{"managed-gitops.redhat.com/syncrun-requested":"uid-a 2025-01-02T03:05:05.001Z 2"}}}`; string(raw) != want {
		t.Errorf("request patch:\n got %s\nwant %s", raw, want)
	}
	raw, _ = json.Marshal(argocd.TerminatePatch())
	if want := `{"status":{"operationState":{"phase":"Terminating"}}}`; string(raw) != want {
		t.Errorf("terminate patch:\n got %s\nwant %s", raw, want)
	}
}

// TestSyncRunAgainstAutomatedDeployment: the refusal (its condition is in TestSyncRunConditions)
// is final, asks the caller to confirm it with the server, and never hits a sync already running.
func TestSyncRunAgainstAutomatedDeployment(t *testing.T) {
	d := manualDeployment()
	d.Spec.Type = managedv1alpha1.GitOpsDeploymentSpecTypeAutomated
	run := syncRun("sync", srLater)
	p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{run}, d, appOf(d))
	expectNoAppAction(t, p)
	if !p.automated {
		t.Error("the plan must say a SyncRun was refused for an automated deployment")
	}
	c, ok := statusOf(t, p, run)
	if !ok || c == nil {
		t.Fatal("no condition written")
	}

	// Refused for good: switching the deployment to manual afterwards does not sync it.
	refused := syncRun("sync", srLater, withCondition(c))
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{refused}, manualDeployment(), appOf(manualDeployment()))
	expectNoAppAction(t, p)
	if len(p.statuses) != 0 || p.automated {
		t.Errorf("a refused SyncRun stays as it is: %+v", p.statuses)
	}

	// A sync already running when the deployment turns automated is not refused afterwards.
	running := syncRun("sync", srLater)
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{running}, d, appOf(d, inState(running, phaseRunning, "")))
	expectNoAppAction(t, p)
	if len(p.statuses) != 0 || p.automated {
		t.Errorf("a running sync is not refused: %+v", p.statuses)
	}
}

func TestSyncRunRefreshesThenSyncs(t *testing.T) {
	d := manualDeployment()
	run := syncRun("sync", srLater)
	runs := []*managedv1alpha1.GitOpsDeploymentSyncRun{run}

	p := plan(runs, d, appOf(d))
	if p.refresh != run || p.start != nil || len(p.statuses) != 0 {
		t.Fatalf("first step: refresh=%v start=%v statuses=%v", p.refresh, p.start, p.statuses)
	}
	p = plan(runs, d, appOf(d, refreshedFor(run, true)))
	expectNoAppAction(t, p)
	p = plan(runs, d, appOf(d, refreshedFor(run, false)))
	if p.start != run || p.refresh != nil || p.app == nil || p.app.Name != argocd.ApplicationName(d.UID) {
		t.Fatalf("third step: refresh=%v start=%v", p.refresh, p.start)
	}

	// Requested, then running: nothing more to do, nothing to report.
	for _, app := range []*argov1alpha1.Application{appOf(d, requested(run)), appOf(d, inState(run, phaseRunning, ""))} {
		p = plan(runs, d, app)
		expectNoAppAction(t, p)
		if len(p.statuses) != 0 {
			t.Errorf("statuses %v", p.statuses)
		}
	}

	// Completed: the outcome is recorded.
	p = plan(runs, d, appOf(d, inState(run, phaseSucceeded, "successfully synced (all tasks run)")))
	expectNoAppAction(t, p)
	c, ok := statusOf(t, p, run)
	if !ok || c.Status != managedv1alpha1.GitOpsConditionStatusFalse || c.Reason != "" || c.Message != "" {
		t.Fatalf("success condition %+v", c)
	}
}

// askedAt is the agent's last request for run's operation: at, after nudges nudges.
func askedAt(run *managedv1alpha1.GitOpsDeploymentSyncRun, at time.Time, nudges int) func(*argov1alpha1.Application) {
	return func(app *argov1alpha1.Application) {
		app.Annotations[AnnotationSyncRunRequested] = syncRequest{run: run.UID, at: at, nudges: nudges}.String()
	}
}

func TestSyncRequestRoundTrips(t *testing.T) {
	r := syncRequest{run: "0b1c2d3e-0000-4000-8000-000000000001", at: srLater.Add(123 * time.Microsecond), nudges: 3}
	got, ok := parseSyncRequest(r.String())
	if !ok || got.run != r.run || !got.at.Equal(r.at) || got.nudges != r.nudges {
		t.Errorf("%q parsed as %+v (%v)", r.String(), got, ok)
	}
	for _, bad := range []string{"", "uid", "uid 2025-01-02T03:05:05Z", "uid yesterday 0", "uid 2025-01-02T03:05:05Z -1", "uid 2025-01-02T03:05:05Z x", "a b c d"} {
		if _, ok := parseSyncRequest(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	for n, want := range []time.Duration{15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute} {
		if got := nudgeAfter(n); got != want {
			t.Errorf("nudgeAfter(%d) = %v, want %v", n, got, want)
		}
	}
	if got := nudgeAfter(1000); got != maxNudgeInterval {
		t.Errorf("nudgeAfter(1000) = %v", got)
	}
}

// TestAStalledStartIsNudged: an operation Argo CD has not started nudgeAfter(n) after the
// agent's last request gets the next request written, n+1; the plan says when to look again
// whenever an operation waits.
func TestAStalledStartIsNudged(t *testing.T) {
	d := manualDeployment()
	run, other := syncRun("sync", srT0), syncRun("earlier", srT0)
	now := srLater.Time
	for _, tc := range []struct {
		name    string
		runs    []*managedv1alpha1.GitOpsDeploymentSyncRun
		app     *argov1alpha1.Application
		nudge   *syncRequest
		recheck time.Duration
	}{
		{"asked just now", nil, appOf(d, requested(run), askedAt(run, now, 0)), nil, syncStartGrace},
		{"asked 5 s ago", nil, appOf(d, requested(run), askedAt(run, now.Add(-5*time.Second), 0)), nil, 10 * time.Second},
		{"asked the grace ago", nil, appOf(d, requested(run), askedAt(run, now.Add(-syncStartGrace), 0)),
			&syncRequest{run: run.UID, at: now, nudges: 1}, 30 * time.Second},
		{"nudged once, 20 s ago", nil, appOf(d, requested(run), askedAt(run, now.Add(-20*time.Second), 1)), nil, 10 * time.Second},
		{"nudged once, 30 s ago", nil, appOf(d, requested(run), askedAt(run, now.Add(-30*time.Second), 1)),
			&syncRequest{run: run.UID, at: now, nudges: 2}, time.Minute},
		{"nudged 9 times, an hour ago", nil, appOf(d, requested(run), askedAt(run, now.Add(-time.Hour), 9)),
			&syncRequest{run: run.UID, at: now, nudges: 10}, maxNudgeInterval},
		{"asked ahead of this clock", nil, appOf(d, requested(run), askedAt(run, now.Add(time.Hour), 0)), nil, syncStartGrace},
		{"a refresh not done yet", nil, appOf(d, requested(run), askedAt(run, now.Add(-time.Minute), 0), func(app *argov1alpha1.Application) {
			app.Annotations[annotationArgoRefresh] = refreshNormal
		}), nil, syncStartGrace},
		{"started", nil, appOf(d, inState(run, phaseRunning, ""), askedAt(run, now.Add(-time.Minute), 0)), nil, 0},
		{"not started, another SyncRun's state still there", []*managedv1alpha1.GitOpsDeploymentSyncRun{run, syncRun("earlier", srT0, withCondition(succeeded))},
			appOf(d, inState(other, phaseSucceeded, ""), requested(run), func(app *argov1alpha1.Application) {
				app.Status.OperationState = &argov1alpha1.OperationState{Operation: *syncOperation(other, d), StartedAt: srT0}
			}, askedAt(run, now.Add(-time.Minute), 0)),
			&syncRequest{run: run.UID, at: now, nudges: 1}, 30 * time.Second},
		{"no request written (an older agent's operation)", nil, appOf(d, requested(run)), nil, 0},
		{"a request for another SyncRun (left by an older agent's operation)", nil,
			appOf(d, requested(run), askedAt(other, now.Add(-time.Hour), 0)), nil, 0},
		{"a request that does not parse", nil, appOf(d, requested(run), func(app *argov1alpha1.Application) {
			app.Annotations[AnnotationSyncRunRequested] = "yesterday"
		}), nil, 0},
		// A SyncRun deleted while its operation waits: the next one waits for that operation.
		{"its SyncRun deleted", []*managedv1alpha1.GitOpsDeploymentSyncRun{syncRun("sync", srT0, func(r *managedv1alpha1.GitOpsDeploymentSyncRun) {
			r.DeletionTimestamp = &srLater
		})}, appOf(d, requested(run), askedAt(run, now.Add(-time.Minute), 0)), &syncRequest{run: run.UID, at: now, nudges: 1}, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := tc.runs
			if runs == nil {
				runs = []*managedv1alpha1.GitOpsDeploymentSyncRun{run}
			}
			p := planSyncRuns(syncRunWorld{runs: runs, deployment: d, applications: []*argov1alpha1.Application{tc.app}}, metav1.NewTime(now))
			if !reflect.DeepEqual(p.nudge, tc.nudge) {
				t.Errorf("nudge %+v, want %+v", p.nudge, tc.nudge)
			}
			if p.recheck != tc.recheck {
				t.Errorf("recheck in %v, want %v", p.recheck, tc.recheck)
			}
			if p.refresh != nil || p.start != nil || len(p.terminate) > 0 || len(p.statuses) > 0 {
				t.Errorf("a waiting operation wants nothing else: %+v", p)
			}
		})
	}
}

// TestNudgeWritesTheNextRequestAndLooksAgain: the reconcile carries the nudge out (one patch of
// the request, guarded by the resourceVersion; one Operation per SyncRun) and queues the key
// again once the next interval has passed.
func TestNudgeWritesTheNextRequestAndLooksAgain(t *testing.T) {
	ctx := context.Background()
	d := manualDeployment()
	run := syncRun("sync", srT0)
	app := appOf(d, requested(run), askedAt(run, srT0.Time, 0))
	c, _, gitops, argo := syncRunFixture(t, d, run, app)
	clock := clocktesting.NewFakeClock(srLater.Time)
	// The fixture's queue runs on the real clock; this one on the fake clock.
	c.Queue.ShutDown()
	c.Queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: clock})
	defer c.Queue.ShutDown()
	c.now = clock.Now
	key := d.Namespace + "/" + d.Name
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	var patches []string
	for _, a := range argo.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patches = append(patches, string(p.GetPatch()))
		}
	}
	want := `{"metadata":{"annotations":{"managed-gitops.redhat.com/syncrun-requested":"uid-sync 2025-01-02T03:05:05Z 1"},"resourceVersion":"7"}}`
	if len(patches) != 1 || patches[0] != want {
		t.Errorf("patches %q, want one: %s", patches, want)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go c.ops.Run(runCtx, time.Hour)
	controllertest.Eventually(t, ctx, "the nudge recorded as an Operation of the SyncRun", func() bool {
		op, err := gitops.ManagedGitopsV1alpha1().Operations("argocd").Get(ctx, "syncrun-uid-sync-nudge", metav1.GetOptions{})
		return err == nil && op.Spec.Source == syncRunSource(run) && op.Status.Attempts == 1 &&
			op.Status.Message == "asked Argo CD again to start the sync on Application "+app.Name
	})
	if n := c.Queue.Len(); n != 0 {
		t.Errorf("%d keys queued at once, want none before the next interval", n)
	}
	clock.Step(nudgeAfter(1) - time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := c.Queue.Len(); n != 0 {
		t.Errorf("%d keys queued before the next interval", n)
	}
	clock.Step(time.Second)
	controllertest.Eventually(t, ctx, "the key queued again after the next interval", func() bool { return c.Queue.Len() == 1 })
}

func TestSyncRunIsKeyedOnItsUID(t *testing.T) {
	d := manualDeployment()
	done := syncRun("sync", srLater, withCondition(succeeded), func(r *managedv1alpha1.GitOpsDeploymentSyncRun) {
		r.Labels = map[string]string{"changed": "after the sync"}
		r.ResourceVersion = "99"
	})
	// Whatever the Application shows (the operation's state still naming it, or gone since),
	// a finished SyncRun starts nothing and its status stays.
	for _, app := range []*argov1alpha1.Application{
		appOf(d, inState(done, phaseSucceeded, "")),
		appOf(d),
		appOf(d, refreshedFor(done, false)),
	} {
		p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{done}, d, app)
		expectNoAppAction(t, p)
		if len(p.statuses) != 0 {
			t.Errorf("statuses %v", p.statuses)
		}
	}

	// Another object of the same name is another SyncRun, synced again.
	again := syncRun("sync", srLater, func(r *managedv1alpha1.GitOpsDeploymentSyncRun) { r.UID = "uid-again" })
	p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{again}, d, appOf(d, inState(done, phaseSucceeded, "")))
	if p.refresh != again {
		t.Errorf("a new SyncRun of the same name must sync: %+v", p)
	}
}

func TestSyncRunsRunOneAfterAnother(t *testing.T) {
	d := manualDeployment()
	first := syncRun("b-first", srLater)
	// Created in the same second: the name decides.
	second := syncRun("c-second", srLater)
	// Created earlier, but finished long ago.
	old := syncRun("a-old", srT0, withCondition(succeeded))
	runs := []*managedv1alpha1.GitOpsDeploymentSyncRun{second, old, first}

	p := plan(runs, d, appOf(d))
	if p.refresh != first {
		t.Fatalf("the first SyncRun goes first, got %v", p.refresh)
	}
	p = plan(runs, d, appOf(d, inState(first, phaseRunning, "")))
	expectNoAppAction(t, p)

	// The first one ends: its outcome is recorded, and in the same pass the second one starts
	// its refresh (the caller writes statuses before touching the Application).
	p = plan(runs, d, appOf(d, inState(first, "Failed", "one or more objects failed to apply")))
	c, ok := statusOf(t, p, first)
	if !ok || c.Status != managedv1alpha1.GitOpsConditionStatusTrue ||
		c.Message != "the sync operation ended with phase Failed: one or more objects failed to apply" {
		t.Fatalf("failure condition %+v", c)
	}
	if p.refresh != second {
		t.Fatalf("the second SyncRun goes next, got %v", p.refresh)
	}

	// Someone else's operation (no SyncRun in its info) is not overwritten.
	foreign := appOf(d, func(app *argov1alpha1.Application) {
		app.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{}}
	})
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{first}, d, foreign)
	expectNoAppAction(t, p)
}

func TestDeletedSyncRunTerminatesItsRunningSync(t *testing.T) {
	d := manualDeployment()
	gone := syncRun("gone", srLater)
	next := syncRun("next", srLater)

	// Running: terminate, and let the next SyncRun wait for the end.
	app := appOf(d, inState(gone, phaseRunning, "waiting for healthy state of /Pod/slow"))
	p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{next}, d, app)
	if len(p.terminate) != 1 || p.terminate[0] != app || p.refresh != nil || p.start != nil {
		t.Fatalf("terminate=%v refresh=%v start=%v", p.terminate, p.refresh, p.start)
	}

	// A SyncRun being deleted (a finalizer of the user's holds it) counts as gone.
	deleting := syncRun("gone", srLater, func(r *managedv1alpha1.GitOpsDeploymentSyncRun) { r.DeletionTimestamp = &srLater })
	if p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{deleting}, d, app); len(p.terminate) != 1 {
		t.Fatalf("a deleting SyncRun's sync must be terminated")
	}

	// Requested but not started yet, already terminating, or completed: nothing to terminate.
	for _, app := range []*argov1alpha1.Application{
		appOf(d, requested(gone)),
		appOf(d, inState(gone, argocd.PhaseTerminating, "")),
		appOf(d, inState(gone, "Failed", "Operation terminated")),
	} {
		if p = plan(nil, d, app); len(p.terminate) != 0 {
			t.Errorf("unexpected termination of %+v", app.Status.OperationState)
		}
	}

	// The SyncRun still exists: its sync runs on.
	if p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{gone}, d, app); len(p.terminate) != 0 {
		t.Error("a live SyncRun's sync must not be terminated")
	}

	// Once the terminated operation ended, the next SyncRun goes.
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{next}, d, appOf(d, inState(gone, "Failed", "Operation terminated")))
	if p.refresh != next || len(p.statuses) != 0 {
		t.Fatalf("refresh=%v statuses=%v", p.refresh, p.statuses)
	}
}

func TestSyncRunWithoutItsDeployment(t *testing.T) {
	run := syncRun("early", srT0)
	p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{run}, nil)
	c, ok := statusOf(t, p, run)
	if !ok || c.Status != managedv1alpha1.GitOpsConditionStatusTrue ||
		c.Message != "Unable to retrieve GitOpsDeployment 'web' referenced by the GitOpsDeploymentSyncRun" {
		t.Fatalf("condition %+v", c)
	}
	expectNoAppAction(t, p)

	// That error is the one that is not final: the deployment created in the same second
	// (kubectl apply -f of a folder) lets the SyncRun go, and the error is cleared.
	waiting := syncRun("early", srT0, withCondition(c))
	if syncRunFinished(waiting) {
		t.Fatal("a SyncRun waiting for its deployment is not finished")
	}
	d := manualDeployment()
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{waiting}, d)
	if got, ok := statusOf(t, p, waiting); !ok || got != nil {
		t.Fatalf("the error must be cleared, got %+v", got)
	}
	expectNoAppAction(t, p) // no Application yet
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{waiting}, d, appOf(d))
	if p.refresh != waiting {
		t.Fatal("with its Application the SyncRun goes")
	}

	// A deployment created after the SyncRun is not the one it asked to sync.
	newer := manualDeployment()
	newer.CreationTimestamp = srLater
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{waiting}, newer, appOf(newer))
	expectNoAppAction(t, p)
	c, ok = statusOf(t, p, waiting)
	if !ok || c.Status != managedv1alpha1.GitOpsConditionStatusTrue || !strings.Contains(c.Message, "was created after the GitOpsDeploymentSyncRun") {
		t.Fatalf("condition %+v", c)
	}
	if !syncRunFinished(syncRun("early", srT0, withCondition(c))) {
		t.Error("that error is final")
	}
}

func TestSyncRunIgnoresApplicationsOfEarlierDeployments(t *testing.T) {
	d := manualDeployment()
	run := syncRun("sync", srLater)
	old := appOf(d, func(app *argov1alpha1.Application) {
		app.Name = "gitopsdepl-old"
		app.Labels[argocd.LabelDeploymentUID] = "old-uid"
	})
	p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{run}, d, old)
	expectNoAppAction(t, p)
	deleting := appOf(d, func(app *argov1alpha1.Application) { app.DeletionTimestamp = &srLater })
	p = plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{run}, d, deleting)
	expectNoAppAction(t, p)
}

func TestSyncRunRelevantChange(t *testing.T) {
	d := manualDeployment()
	run := syncRun("sync", srLater)
	base := appOf(d)
	refreshed := appOf(d, func(app *argov1alpha1.Application) {
		app.Status.ReconciledAt = &srLater
		app.Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync
	})
	if syncRunRelevantChange(base, refreshed) {
		t.Error("a status refresh is no news to SyncRuns")
	}
	for name, app := range map[string]*argov1alpha1.Application{
		"operation set":       appOf(d, requested(run)),
		"operation running":   appOf(d, inState(run, phaseRunning, "")),
		"refresh annotation":  appOf(d, refreshedFor(run, true)),
		"deletion":            appOf(d, func(app *argov1alpha1.Application) { app.DeletionTimestamp = &srLater }),
		"operation completed": appOf(d, inState(run, phaseSucceeded, "")),
	} {
		if !syncRunRelevantChange(base, app) {
			t.Errorf("%s must requeue the SyncRuns", name)
		}
	}
	if !syncRunRelevantChange(appOf(d, inState(run, phaseRunning, "")), appOf(d, inState(run, argocd.PhaseTerminating, ""))) {
		t.Error("a phase change must requeue the SyncRuns")
	}
}

func TestDeploymentKeyOfSyncRun(t *testing.T) {
	keys, _ := deploymentKeyOfSyncRun(syncRun("x", srT0))
	if len(keys) != 1 || keys[0] != "jane/web" {
		t.Errorf("keys %v", keys)
	}
}

// TestSyncRunConditions: the exact condition one SyncRun gets in each situation, and what
// happens to the Application then.
func TestSyncRunConditions(t *testing.T) {
	manual := manualDeployment()
	automated := manualDeployment()
	automated.Spec.Type = managedv1alpha1.GitOpsDeploymentSpecTypeAutomated
	newer := manualDeployment()
	newer.CreationTimestamp = metav1.NewTime(srLater.Add(time.Second))
	run := syncRun("sync", srLater)
	missing := syncRunError("Unable to retrieve GitOpsDeployment 'web' referenced by the GitOpsDeploymentSyncRun")

	type action string
	const none, refresh, start action = "none", "refresh", "start"
	for _, tc := range []struct {
		name   string
		run    *managedv1alpha1.GitOpsDeploymentSyncRun
		depl   *managedv1alpha1.GitOpsDeployment
		app    *argov1alpha1.Application
		write  bool // whether the status changes
		want   *managedv1alpha1.GitOpsDeploymentSyncRunCondition
		action action
	}{
		{name: "no deployment", run: run, write: true, want: missing, action: none},
		{name: "still no deployment", run: syncRun("sync", srLater, withCondition(missing)), write: false, want: missing, action: none},
		{
			name: "automated deployment", run: run, depl: automated, app: appOf(automated), write: true, action: none,
			want: syncRunError("invalid GitOpsDeploymentSyncRun 'sync'. Syncing a GitOpsDeployment with Automated sync policy is not allowed"),
		},
		{
			name: "deployment created after the SyncRun", run: run, depl: newer, app: appOf(newer), write: true, action: none,
			want: syncRunError("GitOpsDeployment 'web' was created after the GitOpsDeploymentSyncRun: create a new GitOpsDeploymentSyncRun to sync it"),
		},
		{name: "manual, no Application yet", run: run, depl: manual, write: false, action: none},
		{name: "manual, Application free", run: run, depl: manual, app: appOf(manual), write: false, action: refresh},
		{name: "deployment appeared", run: syncRun("sync", srLater, withCondition(missing)), depl: manual, app: appOf(manual), write: true, action: refresh},
		{name: "refreshed", run: run, depl: manual, app: appOf(manual, refreshedFor(run, false)), write: false, action: start},
		{name: "running", run: run, depl: manual, app: appOf(manual, inState(run, phaseRunning, "")), write: false, action: none},
		{
			name: "succeeded", run: run, depl: manual, app: appOf(manual, inState(run, phaseSucceeded, "successfully synced (all tasks run)")),
			write: true, want: succeeded, action: none,
		},
		{
			name: "failed", run: run, depl: manual, app: appOf(manual, inState(run, "Failed", "one or more objects failed to apply")),
			write: true, want: syncRunError("the sync operation ended with phase Failed: one or more objects failed to apply"), action: none,
		},
		{
			name: "terminated by someone else", run: run, depl: manual, app: appOf(manual, inState(run, "Failed", "Operation terminated")),
			write: true, want: syncRunError("the sync operation ended with phase Failed: Operation terminated"), action: none,
		},
		{
			name: "error", run: run, depl: manual, app: appOf(manual, inState(run, "Error", "rpc error: unknown revision")),
			write: true, want: syncRunError("the sync operation ended with phase Error: rpc error: unknown revision"), action: none,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var apps []*argov1alpha1.Application
			if tc.app != nil {
				apps = append(apps, tc.app)
			}
			p := plan([]*managedv1alpha1.GitOpsDeploymentSyncRun{tc.run}, tc.depl, apps...)
			got := findSyncRunCondition(tc.run.Status.Conditions)
			if c, ok := statusOf(t, p, tc.run); ok != tc.write {
				t.Fatalf("status written: %v, want %v", ok, tc.write)
			} else if ok {
				got = c
			}
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("condition %+v, want %+v", got, tc.want)
			}
			if got != nil && (got.Type != tc.want.Type || got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message) {
				t.Errorf("condition\n got %+v\nwant %+v", *got, *tc.want)
			}
			if tc.write && got != nil && (got.LastTransitionTime == nil || !got.LastTransitionTime.Equal(&srLater)) {
				t.Errorf("lastTransitionTime %v, want the time of the change", got.LastTransitionTime)
			}
			var act action = none
			switch {
			case p.refresh == tc.run:
				act = refresh
			case p.start == tc.run:
				act = start
			case p.refresh != nil || p.start != nil || len(p.terminate) > 0:
				act = "other"
			}
			if act != tc.action {
				t.Errorf("action %s, want %s", act, tc.action)
			}
		})
	}
}

// An agent killed after asking for a SyncRun's refresh or starting its sync, before its
// recorder wrote the Operation (or between creating the Operation and writing its status),
// leaves that change unrecorded. The agent that takes over records both, once, before it
// writes the SyncRun's outcome: after that it never looks at the SyncRun again.
func TestSyncRunIsRecordedBeforeItsOutcome(t *testing.T) {
	ctx := context.Background()
	d := manualDeployment()
	run := syncRun("sync", srLater)
	app := appOf(d, inState(run, phaseSucceeded, ""))
	refresh, start := syncRunRefreshChange(app, run), syncStartChange(app, run, time.Time{})
	for name, existing := range map[string][]runtime.Object{
		"no Operation": nil,
		"Operations with no status": {
			&managedv1alpha1.Operation{
				ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: refresh.Name},
				Spec:       managedv1alpha1.OperationSpec{ResourceType: refresh.ResourceType, Target: refresh.Target, Source: refresh.Source},
			},
			&managedv1alpha1.Operation{
				ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: start.Name},
				Spec:       managedv1alpha1.OperationSpec{ResourceType: start.ResourceType, Target: start.Target, Source: start.Source},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			gitops := gitopsfake.NewSimpleClientset(append(existing, run.DeepCopy())...)
			// recorded is what the Operations say, by name; from the tracker, as a reactor runs
			// under the lock of the fake's client.
			recorded := func() map[string]string {
				obj, err := gitops.Tracker().List(managedv1alpha1.SchemeGroupVersion.WithResource("operations"),
					managedv1alpha1.SchemeGroupVersion.WithKind("Operation"), "argocd")
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, op := range obj.(*managedv1alpha1.OperationList).Items {
					if op.Spec.Source != syncRunSource(run) {
						t.Errorf("Operation %s has source %+v", op.Name, op.Spec.Source)
					}
					got[op.Name] = fmt.Sprintf("%s: %s (%d)", op.Status.State, op.Status.Message, op.Status.Attempts)
				}
				return got
			}
			want := map[string]string{
				refresh.Name: "Completed: requested a refresh of Application " + app.Name + " (1)",
				start.Name:   "Completed: started a sync of Application " + app.Name + " (1)",
			}
			outcomes := 0
			gitops.PrependReactor("update", "gitopsdeploymentsyncruns", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "status" {
					return false, nil, nil
				}
				outcomes++
				if got := recorded(); !reflect.DeepEqual(got, want) {
					t.Errorf("the outcome is written with Operations %v, want %v", got, want)
				}
				return false, nil, nil
			})

			runs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{bySyncRunDeployment: deploymentKeyOfSyncRun})
			deployments := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			apps := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{argocd.ByDeployment: argocd.DeploymentKeyOfApplication})
			for _, add := range []error{runs.Add(run), deployments.Add(d), apps.Add(app)} {
				if add != nil {
					t.Fatal(add)
				}
			}
			c := &Controller{
				gitops: gitops, runs: runs, deployments: listers.NewGitOpsDeploymentLister(deployments), apps: apps,
				ops: operations.NewRecorder(gitops, "argocd"), now: func() time.Time { return srLater.Time },
			}
			// Twice, as after a restart between the records and the outcome: nothing more.
			for i := 0; i < 2; i++ {
				if err := c.sync(ctx, d.Namespace+"/"+d.Name); err != nil {
					t.Fatal(err)
				}
			}
			if outcomes != 2 {
				t.Fatalf("%d outcomes written, want 2", outcomes)
			}
			if got := recorded(); !reflect.DeepEqual(got, want) {
				t.Errorf("Operations %v, want %v", got, want)
			}
		})
	}
}
