package deploymenttargetbinder

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// fixture is the binder over a fake clientset, with its informers running; tests call sync
// directly, once the caches show what they wrote.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	gitops *fake.Clientset
	events *record.FakeRecorder
	c      *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), events: record.NewFakeRecorder(100)}
	factory := externalversions.NewSharedInformerFactory(f.gitops, 0)
	appstudio := factory.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(), appstudio.DeploymentTargetClasses(), f.gitops, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return now.Time }
	controllertest.StartInformers(t, ctx, factory)
	return f
}

func (f *fixture) sync(claim string) error {
	f.t.Helper()
	return f.c.sync(f.ctx, ns+"/"+claim)
}

func (f *fixture) mustSync(claim string) {
	f.t.Helper()
	if err := f.sync(claim); err != nil {
		f.t.Fatalf("sync %s: %v", claim, err)
	}
}

func (f *fixture) claim(name string) *claimT {
	f.t.Helper()
	c, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) target(name string) *targetT {
	f.t.Helper()
	t, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

// awaitCaches waits until the caches hold the claims and targets as the server has them.
func (f *fixture) awaitCaches() {
	f.t.Helper()
	claims, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	targetList, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	controllertest.Eventually(f.t, f.ctx, "the caches", func() bool {
		cached, _ := f.c.claims.DeploymentTargetClaims(ns).List(everything)
		if len(cached) != len(claims.Items) {
			return false
		}
		for i := range claims.Items {
			got, err := f.c.claims.DeploymentTargetClaims(ns).Get(claims.Items[i].Name)
			if err != nil || !equalObjects(got, &claims.Items[i]) {
				return false
			}
		}
		cachedTargets, _ := f.c.targets.DeploymentTargets(ns).List(everything)
		if len(cachedTargets) != len(targetList.Items) {
			return false
		}
		for i := range targetList.Items {
			got, err := f.c.targets.DeploymentTargets(ns).Get(targetList.Items[i].Name)
			if err != nil || !equalObjects(got, &targetList.Items[i]) {
				return false
			}
		}
		return true
	})
}

func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

func errorOccurred(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, "ErrorOccurred")
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + "/" + c.Reason + "/" + c.Message
}

func TestBind(t *testing.T) {
	f := newFixture(t, bothClasses[0], newTarget("dt1"), newClaim(noFinalizer))
	f.mustSync("c1")

	dt := f.target("dt1")
	if dt.Spec.ClaimRef != "c1" || dt.Status.Phase != targetBound {
		t.Errorf("target claimRef %q phase %q, want c1 Bound", dt.Spec.ClaimRef, dt.Status.Phase)
	}
	c := f.claim("c1")
	if c.Spec.TargetName != "dt1" || c.Status.Phase != claimBound || c.Annotations[annBound] != "true" || c.Annotations[annByCtrl] != "true" ||
		!slices.Contains(c.Finalizers, finBinder) {
		t.Errorf("claim %+v %+v %+v", c.ObjectMeta, c.Spec, c.Status)
	}
	if got := errorOccurred(c.Status.Conditions); got != "False/Success/" {
		t.Errorf("ErrorOccurred %s", got)
	}
	f.expectEvents("Normal Bound Bound to DeploymentTarget dt1")

	// The same again: nothing to write.
	f.awaitCaches()
	before := len(f.gitops.Actions())
	f.mustSync("c1")
	for _, a := range f.gitops.Actions()[before:] {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a bound claim's sync wrote: %v", a)
		}
	}
	f.expectEvents()
}

func TestLost(t *testing.T) {
	f := newFixture(t, bothClasses[0], newTarget("dt1", boundTo("c1")), newClaim(bound("dt1"), ok))
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Delete(f.ctx, "dt1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.mustSync("c1")
	c := f.claim("c1")
	if c.Status.Phase != claimLost {
		t.Errorf("phase %q, want Lost", c.Status.Phase)
	}
	if got := errorOccurred(c.Status.Conditions); got != "True/ErrorOccurred/"+lostMsg {
		t.Errorf("ErrorOccurred %s", got)
	}
	f.expectEvents("Warning ClaimLost " + lostMsg)
}

func TestReleaseAndRebind(t *testing.T) {
	f := newFixture(t, bothClasses[0], newTarget("dt1", boundTo("c1")), newClaim(bound("dt1"), ok))

	step := t.Log
	step("the claim is deleted: the binder releases the target (Retain) and lets the claim go")
	c := f.claim("c1")
	c.DeletionTimestamp = &now // the fake keeps objects with finalizers as the server would
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Update(f.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.mustSync("c1")
	dt := f.target("dt1")
	if dt.Spec.ClaimRef != "" || dt.Status.Phase != targetReleased || !slices.Contains(dt.Finalizers, finTarget) || dt.DeletionTimestamp != nil {
		t.Fatalf("target %+v %+v %+v, want kept, Released, claimRef cleared, with the DT finalizer", dt.ObjectMeta, dt.Spec, dt.Status)
	}
	if c := f.claim("c1"); slices.Contains(c.Finalizers, finBinder) {
		t.Fatalf("claim finalizers %v", c.Finalizers)
	}
	f.expectEvents("Normal TargetReleased Released DeploymentTarget dt1")
	if err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(f.ctx, "c1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	step("a second claim binds the Released target")
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(f.ctx, newClaim(named("c2"), noFinalizer), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.mustSync("c2")
	if dt := f.target("dt1"); dt.Spec.ClaimRef != "c2" || dt.Status.Phase != targetBound {
		t.Errorf("target claimRef %q phase %q, want c2 Bound", dt.Spec.ClaimRef, dt.Status.Phase)
	}
	if c := f.claim("c2"); c.Spec.TargetName != "dt1" || c.Status.Phase != claimBound {
		t.Errorf("second claim %+v %+v", c.Spec, c.Status)
	}
	f.expectEvents("Normal Bound Bound to DeploymentTarget dt1")
}

func TestDeleteReclaimPolicyDeletesTheTarget(t *testing.T) {
	f := newFixture(t, bothClasses[1], newTarget("dt1", targetClass(bronze), boundTo("c1")), newClaim(ofClass(bronze), bound("dt1"), ok, deleting))
	f.mustSync("c1")
	// The fake deletes at once what the server would keep, terminating, until the reclaim
	// controller removes the DT finalizer: the writes after the delete find it gone.
	if dt := f.target("dt1"); dt != nil {
		t.Errorf("target %+v not deleted", dt)
	}
	if c := f.claim("c1"); slices.Contains(c.Finalizers, finBinder) {
		t.Errorf("claim finalizers %v", c.Finalizers)
	}
	f.expectEvents("Normal TargetDeleted Deleted DeploymentTarget dt1: its class bronze has reclaimPolicy Delete",
		"Normal TargetReleased Released DeploymentTarget dt1")
}

// The binder writes the target, then the claim. Stopped between the two, it finds on its next
// sync a target that claims the claim, prefers it to any other (even one first by name) and
// finishes the binding: nothing is bound twice and no target is left claimed by a claim bound
// elsewhere.
func TestCrashBetweenTargetAndClaimWritesConverges(t *testing.T) {
	f := newFixture(t, bothClasses[0], newTarget("dt-a"), newTarget("dt-b"), newClaim())
	var stopped atomic.Bool
	stopped.Store(true)
	f.gitops.PrependReactor("update", "deploymenttargetclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if stopped.Load() && a.GetSubresource() == "" {
			return true, nil, errors.New("the binder stopped here")
		}
		return false, nil, nil
	})

	if err := f.sync("c1"); err == nil || !strings.Contains(err.Error(), "the binder stopped here") {
		t.Fatalf("sync: %v, want the injected failure", err)
	}
	if dt := f.target("dt-a"); dt.Spec.ClaimRef != "c1" || dt.Status.Phase != targetBound {
		t.Fatalf("target dt-a %+v %+v: the target should have been written first", dt.Spec, dt.Status)
	}
	c := f.claim("c1")
	if c.Spec.TargetName != "" || isBindCompleted(c) {
		t.Fatalf("claim %+v written despite the failure", c)
	}
	if got := errorOccurred(c.Status.Conditions); got != "True/ErrorOccurred/"+msgInternalError {
		t.Errorf("ErrorOccurred %s, want the generic error", got)
	}
	f.expectEvents("Warning InternalError " + msgInternalError)

	// Meanwhile a target first by name appears.
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Create(f.ctx, newTarget("dt-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stopped.Store(false)
	f.awaitCaches()
	f.mustSync("c1")

	c = f.claim("c1")
	if c.Spec.TargetName != "dt-a" || c.Status.Phase != claimBound || !isBindCompleted(c) {
		t.Errorf("claim %+v %+v, want bound to dt-a", c.Spec, c.Status)
	}
	if got := errorOccurred(c.Status.Conditions); got != "False/Success/" {
		t.Errorf("ErrorOccurred %s", got)
	}
	for _, name := range []string{"dt-0", "dt-b"} {
		if dt := f.target(name); dt.Spec.ClaimRef != "" || dt.Status.Phase != targetAvailable {
			t.Errorf("target %s %+v %+v touched", name, dt.Spec, dt.Status)
		}
	}
	f.expectEvents("Normal Bound Bound to DeploymentTarget dt-a")
}

func TestEventsQueueTheClaimsTheyMatterTo(t *testing.T) {
	f := newFixture(t, bothClasses[0],
		newClaim(named("waiting")),
		newClaim(named("other-class"), ofClass(bronze)),
		newClaim(named("named"), targeting("dt1")),
		newClaim(named("bound"), bound("dt9")),
	)
	// The handlers are called directly below: once the adds of the start are drained, what
	// the queue holds is what each call queued.
	drain := func() []string {
		var keys []string
		for _, k := range controllertest.Drain(t, f.ctx, f.c.Controller) {
			keys = append(keys, strings.TrimPrefix(k, ns+"/"))
		}
		return keys
	}
	drain() // the adds of the start
	for _, tc := range []struct {
		name  string
		event func()
		want  string
	}{
		{"a free target of class gold", func() { f.c.onTarget(newTarget("dt2")) }, "waiting"},
		{"the target a claim names", func() { f.c.onTarget(newTarget("dt1", claiming("x"))) }, "x,named"},
		{"a target that claims a claim", func() { f.c.onTarget(newTarget("dt9", boundTo("bound"))) }, "bound"},
		{"the class", func() { f.c.onClass(bothClasses[0]) }, ""},
	} {
		tc.event()
		got := drain()
		if tc.want == "" {
			// Every claim of class gold, in the index's order.
			if len(got) != 3 {
				t.Errorf("%s queued %v, want the three claims of class gold", tc.name, got)
			}
			continue
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s queued %q, want %q", tc.name, strings.Join(got, ","), tc.want)
		}
	}
}

var everything = labels.Everything()

// equalObjects compares what the cache and the server hold; the fake keeps no
// resourceVersions.
func equalObjects(a, b interface{}) bool { return apiequality.Semantic.DeepEqual(a, b) }

// TestServesSpaceRequests: discovery is asked at most once a SpaceRequestRecheck, and only its
// answer (the group/version not found, or the resource listed) changes whether the API counts
// as served: an error that is no answer (a timeout) keeps the last one, so that the binder
// does not report SpaceRequestAPINotServed for a transient failure.
func TestServesSpaceRequests(t *testing.T) {
	fake := &k8stesting.Fake{}
	var discoveryErr error
	fake.AddReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
		return discoveryErr != nil, nil, discoveryErr
	})
	clock := time.Unix(1000, 0)
	served := spacerequest.Served(&fakediscovery.FakeDiscovery{Fake: fake}, func() time.Time { return clock })
	if served() {
		t.Fatal("served with no such API")
	}
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: "toolchain.dev.openshift.com/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "spacerequests", Namespaced: true, Kind: "SpaceRequest"}}}}
	if served() {
		t.Error("asked again before the recheck")
	}
	clock = clock.Add(SpaceRequestRecheck)
	if !served() {
		t.Error("not served once the API is there")
	}

	discoveryErr = errors.New("dial tcp: i/o timeout")
	clock = clock.Add(SpaceRequestRecheck)
	if !served() {
		t.Error("not served after a transient discovery error")
	}
	discoveryErr = nil
	fake.Resources = nil
	clock = clock.Add(SpaceRequestRecheck)
	if served() {
		t.Error("served once discovery says the API is gone")
	}
	discoveryErr = apierrors.NewServiceUnavailable("unavailable")
	fake.Resources = []*metav1.APIResourceList{{GroupVersion: "toolchain.dev.openshift.com/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "spacerequests", Namespaced: true, Kind: "SpaceRequest"}}}}
	clock = clock.Add(SpaceRequestRecheck)
	if served() {
		t.Error("served after a transient discovery error, with the last answer not served")
	}
}
