package promotionrun

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongate"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// fixture is the controller over a fake clientset, with its informers running; tests call
// sync directly, once the caches show what they wrote.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	gitops *fake.Clientset
	// kube holds the verification Jobs the controller creates as a namespace's deployer.
	kube   *kubefake.Clientset
	events *record.FakeRecorder
	c      *Controller
	clock  time.Time
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), events: record.NewFakeRecorder(100), clock: now.Time}
	factory := externalversions.NewSharedInformerFactory(f.gitops, 0)
	appstudio := factory.AppStudio().V1alpha1()
	var err error
	f.kube = kubefake.NewSimpleClientset()
	gates := Gates{Gates: appstudio.PromotionGates(), Holds: appstudio.EnvironmentHolds(), Approvals: appstudio.PromotionApprovals(),
		Jobs: fakeJobs{f.kube}}
	f.c, err = New(appstudio.PromotionRuns(), appstudio.SnapshotEnvironmentBindings(), appstudio.Snapshots(), appstudio.Environments(),
		factory.ManagedGitops().V1alpha1().GitOpsDeployments(), gates, f.gitops, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return f.clock }
	controllertest.StartInformers(t, ctx, factory)
	return f
}

// fakeJobs are the deployers' Jobs in a fake clientset: one identity for every namespace.
type fakeJobs struct{ kube *kubefake.Clientset }

func (j fakeJobs) Get(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	return j.kube.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (j fakeJobs) Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return j.kube.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
}

// eventually waits for cond, which reads the caches.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	controllertest.Eventually(f.t, f.ctx, what, cond)
}

func (f *fixture) sync(name string) {
	f.t.Helper()
	if err := f.c.sync(f.ctx, ns+"/"+name); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// drain empties the queue, once the handlers have been given the adds of the start, and
// returns the keys it held.
func (f *fixture) drain() []string { return controllertest.Drain(f.t, f.ctx, f.c.Controller) }

// awaitQueued waits until the handlers queue key, and empties the queue.
func (f *fixture) awaitQueued(key string) {
	f.t.Helper()
	var seen []string
	f.eventually(key+" queued", func() bool {
		for f.c.Queue.Len() > 0 {
			k, _ := f.c.Queue.Get()
			f.c.Queue.Done(k)
			f.c.Queue.Forget(k)
			seen = append(seen, k)
		}
		for _, k := range seen {
			if k == key {
				return true
			}
		}
		return false
	})
}

func (f *fixture) run(name string) *appstudiov1alpha1.PromotionRun {
	f.t.Helper()
	r, err := f.gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// awaitRunCache waits for the cache to show the run as the server has it.
func (f *fixture) awaitRunCache(name string) {
	f.t.Helper()
	want := f.run(name)
	f.eventually("the PromotionRun in the cache", func() bool {
		got, err := f.c.runs.PromotionRuns(ns).Get(name)
		return err == nil && jsonEqual(got.Status, want.Status)
	})
}

func (f *fixture) binding(name string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	f.t.Helper()
	b, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// expectEvents checks the Events recorded since the last call.
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

func TestPromotionThroughAGeneratedBinding(t *testing.T) {
	f := newFixture(t, promotionRun(), snapshot("api"))
	key := ns + "/promote"

	step := t.Log
	step("no binding: one is generated from the Snapshot, and the step starts")
	f.sync("promote")
	b := f.binding("app-staging-generated-binding")
	if b == nil {
		t.Fatal("no binding generated")
	}
	if b.Spec.Application != "app" || b.Spec.Environment != "staging" || b.Spec.Snapshot != "snap-2" ||
		len(b.Spec.Components) != 1 || b.Spec.Components[0].Name != "api" ||
		b.Labels["appstudio.application"] != "app" || b.Labels["appstudio.environment"] != "staging" || len(b.OwnerReferences) != 0 {
		t.Errorf("binding %+v", b)
	}
	r := f.run("promote")
	if r.Status.State != appstudiov1alpha1.PromotionRunStateActive || strings.Join(r.Status.ActiveBindings, ",") != "app-staging-generated-binding" ||
		!r.Status.PromotionStartTime.Equal(&now) || len(r.Status.EnvironmentStatus) != 1 ||
		r.Status.EnvironmentStatus[0].DisplayStatus != msgWaitingForDeployments || !stepTimesAre(r.Status.EnvironmentStatus[0], now, metav1.Time{}) {
		t.Errorf("status %+v", r.Status)
	}
	f.expectEvents(
		"Normal BindingCreated Created SnapshotEnvironmentBinding app-staging-generated-binding for Snapshot snap-2",
		"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-generated-binding")
	f.awaitQueued(key) // the binding's add, the run's update

	step("the binding controller and application-service report; the GitOpsDeployment syncs but is not yet Healthy")
	b.Status = binding("snap-2", "api").Status
	b.Status.GitOpsRepoConditions[0].ObservedGeneration = b.Generation
	if _, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).UpdateStatus(f.ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitQueued(key)
	gd := deployment("api", synced, degraded, "new-api")
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(f.ctx, gd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitQueued(key)
	// What was queued may be an earlier update seen late: the sync must see both writes.
	f.eventually("the binding's GitOpsDeployments and the GitOpsDeployment in the cache", func() bool {
		cached, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get(b.Name)
		_, gdErr := f.c.deployments.GitOpsDeployments(ns).Get(gd.Name)
		return err == nil && len(cached.Status.GitOpsDeployments) == 1 && gdErr == nil
	})
	f.awaitRunCache("promote")
	f.sync("promote")
	r = f.run("promote")
	if r.Status.State != appstudiov1alpha1.PromotionRunStateWaiting ||
		r.Status.EnvironmentStatus[0].DisplayStatus != "Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api" ||
		!stepTimesAre(r.Status.EnvironmentStatus[0], now, metav1.Time{}) {
		t.Errorf("status %+v", r.Status)
	}
	f.expectEvents()

	step("the GitOpsDeployment becomes Healthy: its event brings the run back, which succeeds")
	f.awaitQueued(key) // the run's own update
	f.clock = now.Add(2 * time.Minute)
	gd.Status.Health.Status = healthy
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).UpdateStatus(f.ctx, gd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitQueued(key)
	// As above: the sync must see the GitOpsDeployment Healthy.
	f.eventually("the GitOpsDeployment Healthy in the cache", func() bool {
		got, err := f.c.deployments.GitOpsDeployments(ns).Get(gd.Name)
		return err == nil && got.Status.Health.Status == healthy
	})
	f.awaitRunCache("promote")
	f.sync("promote")
	r = f.run("promote")
	if r.Status.State != appstudiov1alpha1.PromotionRunStateComplete || r.Status.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess ||
		r.Status.EnvironmentStatus[0].Status != appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess ||
		r.Status.EnvironmentStatus[0].DisplayStatus != "All GitOpsDeployments are Synced/Healthy" ||
		!stepTimesAre(r.Status.EnvironmentStatus[0], now, metav1.NewTime(now.Add(2*time.Minute))) {
		t.Errorf("status %+v", r.Status)
	}
	f.expectEvents(
		"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
		"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging")

	step("Complete: ignored")
	f.awaitRunCache("promote")
	writes := len(f.gitops.Actions())
	f.sync("promote")
	f.expectEvents()
	// The fake sets no resourceVersion: count the requests instead.
	if after := f.gitops.Actions()[writes:]; len(after) != 0 {
		t.Errorf("a Complete run was acted on: %v", after)
	}
}

func TestExistingBindingIsPointedAndTimesOut(t *testing.T) {
	old := binding("snap-1", "api")
	f := newFixture(t, promotionRun(), snapshot("api"), old, deployment("api", synced, healthy, "new-api"))

	f.sync("promote")
	if b := f.binding("app-staging-binding"); b.Spec.Snapshot != "snap-2" {
		t.Errorf("binding at %q, want snap-2", b.Spec.Snapshot)
	}
	// Synced and Healthy, but at the commits generated before the binding was pointed.
	r := f.run("promote")
	if r.Status.State != appstudiov1alpha1.PromotionRunStateActive ||
		r.Status.EnvironmentStatus[0].DisplayStatus != msgWaitingForRepository("app-staging-binding", "snap-2") ||
		!stepTimesAre(r.Status.EnvironmentStatus[0], now, metav1.Time{}) {
		t.Errorf("status %+v", r.Status)
	}
	f.expectEvents(
		"Normal BindingUpdated Pointed SnapshotEnvironmentBinding app-staging-binding at Snapshot snap-2",
		"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding")

	// Ten minutes on, the timer brings the run back.
	f.awaitRunCache("promote")
	f.eventually("the binding in the cache", func() bool {
		b, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get("app-staging-binding")
		return err == nil && b.Spec.Snapshot == "snap-2"
	})
	f.clock = now.Add(Timeout)
	f.sync("promote")
	r = f.run("promote")
	if r.Status.State != appstudiov1alpha1.PromotionRunStateComplete || r.Status.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultFailure ||
		len(r.Status.Conditions) != 1 || r.Status.Conditions[0].Message != msgTimedOut ||
		r.Status.EnvironmentStatus[0].DisplayStatus != msgTimedOut || !stepTimesAre(r.Status.EnvironmentStatus[0], now, metav1.NewTime(now.Add(Timeout))) {
		t.Errorf("status %+v", r.Status)
	}
	f.expectEvents(
		"Warning StepEnded Step 1 (Environment staging) failed: Promotion Failed. Could not be completed in 10 Minutes.",
		"Warning PromotionFailed Promotion Failed. Could not be completed in 10 Minutes.")
}

// TestApplicationServiceAnswersThePointing plays application-service: it never sets
// observedGeneration, and writes the same commits again when the images are the same.
func TestApplicationServiceAnswersThePointing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// image is the image of snap-1, from which the binding is pointed at snap-2; "" when
		// snap-1 has been deleted.
		image string
		// recorded is the image of snap-1 in the binding's record of its pointing there, "" for
		// no record.
		recorded string
		// commits are those application-service generates for snap-2.
		commits string
		marked  bool
	}{
		{name: "new images, new commits", image: "quay.io/api:1", commits: "new"},
		{name: "the same images, the same commits", image: "quay.io/api:2", commits: "old", marked: true},
		{name: "snap-1 deleted; new images recorded, new commits", recorded: "quay.io/api:1", commits: "new"},
		{name: "snap-1 deleted; the same images recorded, the same commits", recorded: "quay.io/api:2", commits: "old", marked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec *pointing
			if tc.recorded != "" {
				rec = pointedWith("older", false, tc.recorded)
			}
			objs := []runtime.Object{promotionRun(), snapshot("api"), appServiceBinding("snap-1", "old", rec, "api"), deployment("api", synced, healthy, "old-api")}
			if tc.image != "" {
				objs = append(objs, previousSnapshot("api", tc.image))
			}
			f := newFixture(t, objs...)
			bindings := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
			key := ns + "/promote"

			f.sync("promote")
			b := f.binding("app-staging-binding")
			if b.Spec.Snapshot != "snap-2" || b.Annotations[pointingAnnotation] == "" {
				t.Fatalf("binding %+v, want it pointed at snap-2 and the pointing recorded", b)
			}
			if cond := b.Status.GitOpsRepoConditions[0]; (cond.Status == metav1.ConditionUnknown) != tc.marked {
				t.Errorf("condition %+v after the pointing, marked: %v", cond, tc.marked)
			}
			f.awaitQueued(key)

			step := t.Log
			step("the binding at the previous Snapshot's commits, deployed: the run waits")
			f.eventually("the pointed binding in the cache", func() bool {
				cached, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get(b.Name)
				return err == nil && cached.Spec.Snapshot == "snap-2"
			})
			f.awaitRunCache("promote")
			f.sync("promote")
			if r := f.run("promote"); r.Status.State != appstudiov1alpha1.PromotionRunStateActive ||
				r.Status.EnvironmentStatus[0].DisplayStatus != msgWaitingForRepository("app-staging-binding", "snap-2") {
				t.Errorf("status %+v", r.Status)
			}

			step("application-service writes the components, then its condition True, without observedGeneration")
			b = f.binding("app-staging-binding")
			b.Status.Components = appServiceBinding("snap-2", tc.commits, nil, "api").Status.Components
			if b, err := bindings.UpdateStatus(f.ctx, b, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			} else {
				meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
					Status: metav1.ConditionTrue, Reason: "OK", Message: "GitOps repository sync successful"})
				if _, err := bindings.UpdateStatus(f.ctx, b, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			gd := deployment("api", synced, healthy, tc.commits+"-api")
			if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).UpdateStatus(f.ctx, gd, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.eventually("the generated binding and the GitOpsDeployment in the cache", func() bool {
				cached, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get(b.Name)
				got, gdErr := f.c.deployments.GitOpsDeployments(ns).Get(gd.Name)
				return err == nil && gdErr == nil && got.Status.Sync.Revision == tc.commits+"-api" &&
					cached.Status.GitOpsRepoConditions[0].Status == metav1.ConditionTrue && cached.Status.Components[0].GitOpsRepository.CommitID == tc.commits+"-api"
			})
			f.awaitRunCache("promote")
			f.sync("promote")
			if r := f.run("promote"); r.Status.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess {
				t.Errorf("status %+v, want Success", r.Status)
			}
		})
	}
}

func TestOneActivePromotionPerApplicationPerNamespace(t *testing.T) {
	second := promotionRun(func(r *appstudiov1alpha1.PromotionRun) { r.Name, r.CreationTimestamp = "second", now })
	elsewhere := promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
		r.Name, r.Namespace, r.CreationTimestamp = "second", "elsewhere", now
	})
	f := newFixture(t, promotionRun(), second, elsewhere, snapshot("api"), binding("snap-2", "api"))

	f.sync("second")
	if c := f.run("second").Status.Conditions; len(c) != 1 || c[0].Message != msgActivePromotion || c[0].Status != "True" {
		t.Errorf("conditions %+v", c)
	}
	f.expectEvents("Warning ActivePromotionExists PromotionRun promote of Application app is still active; only one PromotionRun per Application may be")

	// The run of another namespace is not held up by this one's: it goes on to look for its
	// Snapshot, of which its namespace has none.
	if err := f.c.sync(f.ctx, "elsewhere/second"); err != nil {
		t.Fatal(err)
	}
	f.expectEvents("Warning SnapshotNotFound Snapshot: snap-2 referred in Binding: app-staging-generated-binding does not exist.")

	// The first completes: its update brings the second back. The two status writes above
	// queued their runs; one handler is given its informer's events in order, so once the
	// later write's key is queued, the earlier one's has been, and both are taken here: the
	// next queuing of the second is the completion's.
	f.awaitQueued("elsewhere/second")
	first := f.run("promote")
	first.Status.State = appstudiov1alpha1.PromotionRunStateComplete
	if _, err := f.gitops.AppStudioV1alpha1().PromotionRuns(ns).UpdateStatus(f.ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitQueued(ns + "/second")
	f.awaitRunCache("promote")
	f.awaitRunCache("second")
	f.sync("second")
	if r := f.run("second"); r.Status.State == "" || r.Status.Conditions[0].Status != "False" {
		t.Errorf("the second run did not proceed: %+v", r.Status)
	}
}

func TestEventsQueueTheRunsThatWaitOnThem(t *testing.T) {
	done := promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
		r.Name, r.Status.State = "done", appstudiov1alpha1.PromotionRunStateComplete
	})
	other := promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
		r.Name, r.Spec.Application, r.Spec.Snapshot = "other", "other", "other-snap"
	})
	f := newFixture(t, promotionRun(), done, other)
	f.drain() // the adds of the start; the handlers are called directly below
	otherBinding := binding("snap-2", "api")
	otherBinding.Spec.Application = "third"
	unlabelled := deployment("api", synced, healthy, "")
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name  string
		event func(*Controller)
		want  string
	}{
		{"the binding of the run's application and Environment", func(c *Controller) { c.onBinding(binding("snap-1", "api")) }, ns + "/promote"},
		{"a deleted binding, as a tombstone", func(c *Controller) {
			c.onBinding(cache.DeletedFinalStateUnknown{Key: ns + "/app-staging-binding", Obj: binding("snap-1", "api")})
		}, ns + "/promote"},
		{"another application's binding", func(c *Controller) { c.onBinding(otherBinding) }, ""},
		{"another application's binding of the name the run would generate", func(c *Controller) {
			occupant := otherBinding.DeepCopy()
			occupant.Name = "app-staging-generated-binding"
			c.onBinding(occupant)
		}, ns + "/promote"},
		{"the run's Snapshot", func(c *Controller) { c.onSnapshot(snapshot()) }, ns + "/promote"},
		{"a GitOpsDeployment of the binding", func(c *Controller) { c.onDeployment(deployment("api", synced, healthy, "")) }, ns + "/promote"},
		{"a GitOpsDeployment of no binding", func(c *Controller) { c.onDeployment(unlabelled) }, ""},
		{"a run of the application that is gone", func(c *Controller) { c.onRunGone(done) }, ns + "/promote"},
	} {
		tc.event(f.c)
		if got := strings.Join(f.drain(), ","); got != tc.want {
			t.Errorf("%s queued %q, want %q", tc.name, got, tc.want)
		}
	}
}

// stepTimesAre tells whether step e started at start and ended at end, or has not ended when
// end is zero.
func stepTimesAre(e appstudiov1alpha1.PromotionRunEnvironmentStatus, start, end metav1.Time) bool {
	if e.StartTime == nil || !e.StartTime.Equal(&start) {
		return false
	}
	if end.IsZero() {
		return e.CompletionTime == nil
	}
	return e.CompletionTime != nil && e.CompletionTime.Equal(&end)
}

// A run deleted between two looks at its key: the retry of a write that failed, and the
// timeout's recheck of a run deleted while Active. Both come back to a key whose run is gone,
// which must be nothing to do (it once panicked, taking every controller of the agent down).
func TestADeletedRunsKeyIsNothingToDo(t *testing.T) {
	f := newFixture(t, promotionRun(), snapshot("api"))
	key := ns + "/promote"

	t.Log("the binding's create fails, as in a namespace being deleted: an error, so a retry")
	f.gitops.PrependReactor("create", "snapshotenvironmentbindings", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: appstudiov1alpha1.SchemeGroupVersion.Group, Resource: "snapshotenvironmentbindings"},
			"app-staging-generated-binding", errors.New("namespace ns is being terminated"))
	})
	if err := f.c.sync(f.ctx, key); err == nil {
		t.Fatal("a failed create reported no error: it would not be retried")
	}
	controllertest.Recorded(f.events)

	t.Log("the run is deleted before the retry: the retry writes nothing, records nothing, queues nothing")
	if err := f.gitops.AppStudioV1alpha1().PromotionRuns(ns).Delete(f.ctx, "promote", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the run gone from the cache", func() bool {
		_, err := f.c.runs.PromotionRuns(ns).Get("promote")
		return apierrors.IsNotFound(err)
	})
	f.drain()
	f.gitops.ClearActions()
	if err := f.c.sync(f.ctx, key); err != nil {
		t.Errorf("sync of a deleted run: %v", err)
	}
	f.expectNothingDone()
}

func TestTheTimeoutRecheckOfARunDeletedWhileActive(t *testing.T) {
	f := newFixture(t, promotionRun(), snapshot("api"), binding("snap-1", "api"), deployment("api", synced, healthy, "new-api"))
	key := ns + "/promote"
	f.sync("promote")
	if r := f.run("promote"); r.Status.State != appstudiov1alpha1.PromotionRunStateActive {
		t.Fatalf("state %q, want Active", r.Status.State)
	}
	controllertest.Recorded(f.events)

	if err := f.gitops.AppStudioV1alpha1().PromotionRuns(ns).Delete(f.ctx, "promote", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the run gone from the cache", func() bool {
		_, err := f.c.runs.PromotionRuns(ns).Get("promote")
		return apierrors.IsNotFound(err)
	})
	f.drain()
	f.gitops.ClearActions()
	// The recheck fires ten minutes on.
	f.clock = now.Add(Timeout)
	if err := f.c.sync(f.ctx, key); err != nil {
		t.Errorf("recheck of a deleted run: %v", err)
	}
	f.expectNothingDone()
}

// expectNothingDone checks that the controller wrote nothing, recorded no Event and queued
// nothing since the fake's actions were last cleared.
func (f *fixture) expectNothingDone() {
	f.t.Helper()
	for _, a := range f.gitops.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			f.t.Errorf("wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	f.expectEvents()
	if n := f.c.Queue.Len(); n != 0 {
		f.t.Errorf("%d keys queued", n)
	}
}

// TestVerificationFailureRollsBack carries out a failed verification: the Job created as the
// deployer, then, once it failed, the binding pointed back, the Environment held, the run failed.
func TestVerificationFailureRollsBack(t *testing.T) {
	env := func(name, parent string) *appstudiov1alpha1.Environment {
		return &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appstudiov1alpha1.EnvironmentSpec{DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, ParentEnvironment: parent}}
	}
	run := automatedRun(withSteps("dev:S:1", "staging:P:2"))
	b := binding("snap-2", "api")
	recordPointing(b, nil, snapshot("api"), false)
	gate := stagingGate(verified, entered())
	f := newFixture(t, run, env("dev", ""), env("staging", "dev"), snapshot("api"), snap1.DeepCopy(), b,
		deployment("api", synced, healthy, "new-api"), gate)
	key := ns + "/" + run.Name

	t.Log("deployed: the verification Job is created as the namespace's deployer, and named in the gate's status")
	f.sync(run.Name)
	job, err := f.kube.BatchV1().Jobs(ns).Get(f.ctx, promotiongate.JobName(run.Name, run.UID, "staging"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no verification Job: %v", err)
	}
	if job.Spec.Template.Spec.ServiceAccountName != "gitops-deployer" || job.Annotations[promotiongate.AnnotationSnapshot] != "snap-2" {
		t.Errorf("job %+v", job)
	}
	g, err := f.gitops.AppStudioV1alpha1().PromotionGates(ns).Get(f.ctx, "staging", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := promotiongate.EntryOf(g.Status, run.Name, run.UID)
	if e.Verification == nil || e.Verification.Job != job.Name || e.HealthyTime == nil || e.Phase != appstudiov1alpha1.GatePhaseVerifying {
		t.Fatalf("gate entry %+v", e)
	}
	f.expectEvents("Normal VerificationStarted Created verification Job " + job.Name + " in namespace " + ns)

	t.Log("the Job fails: rolled back to snap-1 and held")
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: "True", Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
	if _, err := f.kube.BatchV1().Jobs(ns).UpdateStatus(f.ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitQueued(key)
	f.eventually("the gate's entry in the cache", func() bool {
		cached, err := f.c.gates.PromotionGates(ns).Get("staging")
		return err == nil && jsonEqual(cached.Status, g.Status)
	})
	f.awaitRunCache(run.Name)
	f.sync(run.Name)
	if got := f.binding(b.Name); got.Spec.Snapshot != "snap-1" {
		t.Errorf("binding at %s, want snap-1", got.Spec.Snapshot)
	}
	hold, err := f.gitops.AppStudioV1alpha1().EnvironmentHolds(ns).Get(f.ctx, "staging", metav1.GetOptions{})
	if err != nil || hold.Spec.Snapshot != "snap-1" || hold.Spec.PromotionRun != run.Name {
		t.Errorf("hold %+v, %v", hold, err)
	}
	r := f.run(run.Name)
	if r.Status.State != appstudiov1alpha1.PromotionRunStateComplete || r.Status.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultFailure ||
		!strings.Contains(r.Status.EnvironmentStatus[1].DisplayStatus, "rolled back to Snapshot snap-1") {
		t.Errorf("status %+v", r.Status)
	}
	var reasons []string
	for _, ev := range controllertest.Recorded(f.events) {
		reasons = append(reasons, strings.SplitN(ev, " ", 3)[1])
	}
	if strings.Join(reasons, ",") != "BindingUpdated,EnvironmentHeld,EnvironmentHeld,StepEnded,RolledBack,PromotionFailed,RolledBack" {
		t.Errorf("events %v", reasons)
	}
}
