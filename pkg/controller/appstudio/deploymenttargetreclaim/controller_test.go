package deploymenttargetreclaim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetbinder"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// fixture is the controller over a fake clientset, with its informers running; tests call
// sync directly, once the caches show what they wrote.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	gitops  *fake.Clientset
	events  *record.FakeRecorder
	factory externalversions.SharedInformerFactory
	c       *Controller
	clock   time.Time
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), events: record.NewFakeRecorder(100), clock: now.Time}
	f.factory = externalversions.NewSharedInformerFactory(f.gitops, 0)
	appstudio := f.factory.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.DeploymentTargets(), appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargetClasses(), f.gitops, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return f.clock }
	return f
}

func (f *fixture) start() *fixture {
	controllertest.StartInformers(f.t, f.ctx, f.factory)
	return f
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.c.sync(f.ctx, ns+"/dt1"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) target() *targetT {
	f.t.Helper()
	t, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(f.ctx, "dt1", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

// awaitTargetCache waits until the cache holds the target as the server has it.
func (f *fixture) awaitTargetCache() {
	f.t.Helper()
	want := f.target()
	controllertest.Eventually(f.t, f.ctx, "the target in the cache", func() bool {
		got, err := f.c.targets.DeploymentTargets(ns).Get("dt1")
		if want == nil {
			return apierrors.IsNotFound(err)
		}
		return err == nil && apiequality.Semantic.DeepEqual(got, want)
	})
}

func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

func TestRetainReleasesTheTargetOfAGoneClaim(t *testing.T) {
	f := newFixture(t, retainClass, newTarget(withFinalizers(), noConditions, boundTo("c1"))).start()
	f.mustSync()
	got := f.target()
	if got.Spec.ClaimRef != "" || got.Status.Phase != released || !slices.Contains(got.Finalizers, finDT) {
		t.Errorf("target %+v %+v %+v, want released with the DT finalizer", got.ObjectMeta, got.Spec, got.Status)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, "ErrorOccurred"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Success" {
		t.Errorf("ErrorOccurred %+v", c)
	}
	f.expectEvents("Normal Released Released: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass gold has reclaimPolicy Retain")

	// Again: nothing more.
	f.awaitTargetCache()
	before := len(f.gitops.Actions())
	f.mustSync()
	for _, a := range f.gitops.Actions()[before:] {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a released target's sync wrote: %v", a)
		}
	}
	f.expectEvents()
}

func TestDeleteDeletesTheTargetOfAGoneClaim(t *testing.T) {
	f := newFixture(t, deleteClass, newTarget(ofClass(del), boundTo("c1"))).start()
	f.mustSync()
	// The fake deletes at once; the server would keep it, terminating, until the next sync
	// removes the DT finalizer.
	if got := f.target(); got != nil {
		t.Errorf("target %+v not deleted", got)
	}
	var deleted bool
	for _, a := range f.gitops.Actions() {
		deleted = deleted || (a.GetVerb() == "delete" && a.GetResource().Resource == "deploymenttargets")
	}
	if !deleted {
		t.Error("no delete sent")
	}
	f.expectEvents("Normal Deleted Deleting: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass bronze has reclaimPolicy Delete")
}

// A target its provisioner holds past the timeout becomes Failed; until then the controller
// waits on a timer, the only thing no event reports.
func TestDeletionTimeoutMarksTheTargetFailed(t *testing.T) {
	f := newFixture(t, deleteClass, newTarget(ofClass(del), withFinalizers(finDT, finProv), deletedSince(deletedAt))).start()
	f.mustSync()
	got := f.target()
	if strings.Join(got.Finalizers, ",") != finProv || got.Status.Phase == failed {
		t.Fatalf("target %v %q, want only the provisioner's finalizer left, not Failed yet", got.Finalizers, got.Status.Phase)
	}
	f.expectEvents()

	f.awaitTargetCache()
	f.clock = now.Add(DeletionTimeout) // the requeue fires
	f.mustSync()
	got = f.target()
	if got.Status.Phase != failed {
		t.Errorf("phase %q, want Failed", got.Status.Phase)
	}
	msg := msgDeletionTimedOut([]string{finProv})
	if c := meta.FindStatusCondition(got.Status.Conditions, "ErrorOccurred"); c == nil || c.Status != metav1.ConditionTrue || c.Message != msg {
		t.Errorf("ErrorOccurred %+v", c)
	}
	f.expectEvents("Warning DeletionTimedOut " + msg)
}

func TestEventsQueueTheTargetsTheyMatterTo(t *testing.T) {
	f := newFixture(t, retainClass, newTarget(boundTo("c1")),
		func() *targetT { t := newTarget(ofClass(del)); t.Name = "dt2"; return t }()).start()
	// The handlers are called directly below: once the adds of the start are drained, what
	// the queue holds is what each call queued.
	drain := func() []string {
		var keys []string
		for _, k := range controllertest.Drain(t, f.ctx, f.c.Controller) {
			keys = append(keys, strings.TrimPrefix(k, ns+"/"))
		}
		return keys
	}
	drain()
	for _, tc := range []struct {
		name  string
		event func()
		want  string
	}{
		{"the claim a target claims", func() { f.c.onClaim(newClaim("c1")) }, "dt1"},
		{"a claim no target claims", func() { f.c.onClaim(newClaim("c2")) }, ""},
		{"a class", func() { f.c.onClass(deleteClass) }, "dt2"},
	} {
		tc.event()
		if got := strings.Join(drain(), ","); got != tc.want {
			t.Errorf("%s queued %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The binder and this controller together, running as the agent runs them: a claim that
// went without the binder's finalizer leaves its target to this controller, which releases
// it (Retain); a second claim then binds it.
func TestReleasedTargetIsBoundAgain(t *testing.T) {
	f := newFixture(t, retainClass, newTarget(boundTo("gone")))
	appstudio := f.factory.AppStudio().V1alpha1()
	binder, err := deploymenttargetbinder.New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(), appstudio.DeploymentTargetClasses(),
		f.gitops, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	f.start()
	go binder.Run(f.ctx, 1)
	go f.c.Run(f.ctx, 1)

	controllertest.Eventually(t, f.ctx, "the target released", func() bool {
		got := f.target()
		return got.Spec.ClaimRef == "" && got.Status.Phase == released
	})
	claim := newClaim("c2")
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(f.ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the second claim bound to the target", func() bool {
		c, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, "c2", metav1.GetOptions{})
		got := f.target()
		return err == nil && c.Status.Phase == appstudiov1alpha1.DeploymentTargetClaimPhaseBound && c.Spec.TargetName == "dt1" &&
			got.Spec.ClaimRef == "c2" && got.Status.Phase == bound
	})
}

// TestGoneTargetIsLeft: the key of a deleted target (its delete event) syncs to nothing.
func TestGoneTargetIsLeft(t *testing.T) {
	f := newFixture(t).start()
	f.mustSync() // panicked before
	for _, a := range f.gitops.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" {
			t.Errorf("%s %s, want no write", v, a.GetResource().Resource)
		}
	}
	f.expectEvents()
}

// A claim that the cache does not show, or shows as an earlier claim of its name, is looked
// for on the server before its target is reclaimed: the binder (perhaps in another agent) may
// have bound the target to a claim this cache has yet to see.
func TestAClaimTheCacheLacksIsAskedOfTheServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cache func(f *fixture, claims cache.Indexer) // makes the cache lag
	}{
		{"the cache has no claim of the name", func(f *fixture, claims cache.Indexer) {
			_ = claims.Delete(newClaim("c1"))
		}},
		{"the cache has the earlier claim of the name", func(f *fixture, claims cache.Indexer) {
			earlier := newClaim("c1")
			earlier.UID = "deleted-uid"
			_ = claims.Update(earlier)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, deleteClass, newTarget(ofClass(del), boundTo("c1")), newClaim("c1", boundClaim("dt1"))).start()
			controllertest.Eventually(t, f.ctx, "the claim in the cache", func() bool {
				_, err := f.c.claims.DeploymentTargetClaims(ns).Get("c1")
				return err == nil
			})
			tc.cache(f, f.factory.AppStudio().V1alpha1().DeploymentTargetClaims().Informer().GetIndexer())
			f.mustSync()
			if got := f.target(); got == nil || got.DeletionTimestamp != nil || got.Spec.ClaimRef != "c1" {
				t.Errorf("target %+v, want it kept for its claim", got)
			}
			f.expectEvents()
		})
	}
}
