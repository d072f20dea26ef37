package syncrun

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// reasons are the "Type Reason" of evs, in order.
func reasons(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// fakeRecorder gives a Controller a recorder whose Events the test reads.
func fakeRecorder(c *Controller) *record.FakeRecorder {
	rec := record.NewFakeRecorder(100)
	c.recorder = rec
	return rec
}

func TestSyncRunPlanEvents(t *testing.T) {
	d := manualDeployment()
	run := syncRun("sync", srLater)
	runs := []*managedv1alpha1.GitOpsDeploymentSyncRun{run}
	automated := manualDeployment()
	automated.Spec.Type = managedv1alpha1.GitOpsDeploymentSpecTypeAutomated
	newer := manualDeployment()
	newer.CreationTimestamp = metav1.NewTime(srLater.Add(time.Minute))
	for _, tc := range []struct {
		name    string
		runs    []*managedv1alpha1.GitOpsDeploymentSyncRun
		depl    *managedv1alpha1.GitOpsDeployment
		apps    []*argov1alpha1.Application
		want    []string
		message string
	}{
		{name: "waiting for its refresh", runs: runs, depl: d, apps: []*argov1alpha1.Application{appOf(d)}},
		{name: "running", runs: runs, depl: d, apps: []*argov1alpha1.Application{appOf(d, inState(run, phaseRunning, ""))}},
		{name: "succeeded", runs: runs, depl: d, apps: []*argov1alpha1.Application{appOf(d, inState(run, phaseSucceeded, "successfully synced"))},
			want: []string{"Normal SyncSucceeded"}, message: "Argo CD synced GitOpsDeployment web to its target revision: successfully synced"},
		{name: "failed", runs: runs, depl: d, apps: []*argov1alpha1.Application{appOf(d, inState(run, "Failed", "hook failed"))},
			want: []string{"Warning SyncFailed"}, message: "Argo CD's sync of GitOpsDeployment web to its target revision ended with phase Failed: hook failed"},
		{name: "outcome already written", runs: []*managedv1alpha1.GitOpsDeploymentSyncRun{syncRun("sync", srLater, withCondition(succeeded))}, depl: d,
			apps: []*argov1alpha1.Application{appOf(d, inState(run, phaseSucceeded, "ok"))}},
		{name: "automated deployment", runs: runs, depl: automated, apps: []*argov1alpha1.Application{appOf(automated)},
			want: []string{"Warning SyncRefused"}, message: syncRunAutomated(run)},
		{name: "deployment newer", runs: runs, depl: newer, apps: []*argov1alpha1.Application{appOf(newer)},
			want: []string{"Warning SyncRefused"}, message: syncRunDeploymentNewer(run)},
		{name: "no deployment", runs: runs, want: []string{"Warning GitOpsDeploymentNotFound"}, message: syncRunMissingDeployment(run)},
		{name: "still no deployment", runs: []*managedv1alpha1.GitOpsDeploymentSyncRun{syncRun("sync", srLater,
			withCondition(syncRunError(syncRunMissingDeployment(run))))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.runs, tc.depl, tc.apps...)
			var evs []event
			for _, st := range p.statuses {
				evs = append(evs, st.events...)
			}
			if got := reasons(evs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			if tc.message != "" && evs[0].Message != tc.message {
				t.Errorf("message %q, want %q", evs[0].Message, tc.message)
			}
		})
	}
}

// syncRunFixture is a Controller whose caches hold d, run and app, with fake clients.
func syncRunFixture(t *testing.T, d *managedv1alpha1.GitOpsDeployment, run *managedv1alpha1.GitOpsDeploymentSyncRun, app *argov1alpha1.Application) (*Controller, cache.Indexer, *gitopsfake.Clientset, *argofake.Clientset) {
	t.Helper()
	gitops := gitopsfake.NewSimpleClientset(run.DeepCopy())
	argo := argofake.NewSimpleClientset(app.DeepCopy())
	runs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{bySyncRunDeployment: deploymentKeyOfSyncRun})
	deployments := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	apps := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{argocd.ByDeployment: argocd.DeploymentKeyOfApplication})
	for _, err := range []error{runs.Add(run), deployments.Add(d), apps.Add(app)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{
		// A queue for the rechecks the plan asks for (a real clock: they come after the test).
		Controller: framework.NewController(Name, nil),
		gitops:     gitops, argo: argo, runs: runs, deployments: listers.NewGitOpsDeploymentLister(deployments), apps: apps,
		ops: operations.NewRecorder(gitops, "argocd"), now: func() time.Time { return srLater.Time },
	}
	return c, runs, gitops, argo
}

func TestSyncRunStatusWriteRecordsEvents(t *testing.T) {
	ctx := context.Background()
	d := manualDeployment()
	run := syncRun("sync", srLater)
	app := appOf(d, inState(run, phaseSucceeded, "successfully synced"))
	c, runs, gitops, _ := syncRunFixture(t, d, run, app)
	rec := fakeRecorder(c)
	controllertest.FailStatusWrites(gitops, "gitopsdeploymentsyncruns", 1)
	key := d.Namespace + "/" + d.Name

	if err := c.sync(ctx, key); err == nil {
		t.Fatal("the failed write did not fail")
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events after a failed write: %v", got)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.RecordedReasons(rec), []string{"Normal SyncSucceeded"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// The informer brings the outcome back: nothing more.
	written, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(run.Namespace).Get(ctx, run.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runs.Update(written); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events for a finished SyncRun: %v", got)
	}
}

// SyncRequested is recorded once the operation is set on the Application, not when setting it
// conflicts.
func TestSyncRunStartRecordsEvent(t *testing.T) {
	ctx := context.Background()
	d := manualDeployment()
	run := syncRun("sync", srLater)
	run.Spec.RevisionID = "abc123"
	app := appOf(d, refreshedFor(run, false))
	c, _, _, argo := syncRunFixture(t, d, run, app)
	rec := fakeRecorder(c)
	conflicts := 1
	argo.PrependReactor("patch", "applications", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, app.Name, errors.New("changed"))
	})
	key := d.Namespace + "/" + d.Name
	if err := c.sync(ctx, key); err == nil {
		t.Fatal("the conflicting patch did not fail")
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events after a conflict: %v", got)
	}
	if err := c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.Recorded(rec), []string{"Normal SyncRequested Requested a sync of GitOpsDeployment web to revision abc123 in Argo CD"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
