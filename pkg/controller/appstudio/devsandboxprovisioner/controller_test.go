package devsandboxprovisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

type fixture struct {
	t       *testing.T
	ctx     context.Context
	gitops  *fake.Clientset
	dyn     *dynamicfake.FakeDynamicClient
	disco   *clienttesting.Fake
	discoMu sync.Mutex // the fake's resources are read without its lock
	events  *record.FakeRecorder
	c       *Controller
	clock   time.Time
	created atomic.Int32
	// kube answers the access reviews of CheckAccess: allowed unless denied.
	kube   *kubefake.Clientset
	denied atomic.Bool
}

func newFixture(t *testing.T, served bool, objs []runtime.Object, srs ...*unstructured.Unstructured) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var dynObjs []runtime.Object
	for _, sr := range srs {
		dynObjs = append(dynObjs, sr)
	}
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), events: record.NewFakeRecorder(100), clock: now,
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{spacerequest.Resource: "SpaceRequestList"}, dynObjs...),
		disco: &clienttesting.Fake{}, kube: kubefake.NewClientset()}
	accessReviews(f.kube, func(authorizationv1.ResourceAttributes) bool { return f.denied.Load() })
	// The fake does not generate names.
	f.dyn.PrependReactor("create", "spacerequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		if obj.GetName() == "" {
			obj.SetName(fmt.Sprintf("%sx%d", obj.GetGenerateName(), f.created.Add(1)))
		}
		return false, nil, nil
	})
	if served {
		f.serve()
	}
	gf := externalversions.NewSharedInformerFactory(f.gitops, 0)
	appstudio := gf.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(), appstudio.DeploymentTargetClasses(),
		f.gitops, f.dyn, &fakediscovery.FakeDiscovery{Fake: f.disco}, f.kube, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return f.clock }
	controllertest.StartInformers(t, ctx, gf)
	return f
}

func (f *fixture) serve() {
	f.discoMu.Lock()
	defer f.discoMu.Unlock()
	f.disco.Resources = []*metav1.APIResourceList{{GroupVersion: spacerequest.GroupVersion,
		APIResources: []metav1.APIResource{{Name: "spacerequests", Namespaced: true, Kind: "SpaceRequest"}}}}
}

// activate starts the SpaceRequest informer as Run does once the API is served.
func (f *fixture) activate() {
	f.t.Helper()
	idx, ok := f.c.startInformer(f.ctx)
	if !ok {
		f.t.Fatal("the SpaceRequest informer did not sync")
	}
	f.c.setActive(idx)
}

func (f *fixture) mustSync() {
	f.t.Helper()
	f.mustSyncUnit(claimName)
}

func (f *fixture) mustSyncUnit(claim string) {
	f.t.Helper()
	if err := f.c.sync(f.ctx, ns+"/"+claim); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// runner is Run running: clock is the time of its discovery checks, calls counts its looks at
// served (Run alone calls it), the sync points of the tests in place of sleeps.
type runner struct {
	f     *fixture
	clock atomic.Int64
	calls atomic.Int32
}

// run runs the controller as the agent does, rechecking every 10ms; discovery answers through
// f.disco, under f.discoMu.
func (f *fixture) run() *runner {
	r := &runner{f: f}
	r.clock.Store(now.UnixNano())
	served := spacerequest.Served(lockedDiscovery{&fakediscovery.FakeDiscovery{Fake: f.disco}, &f.discoMu},
		func() time.Time { return time.Unix(0, r.clock.Load()) })
	f.c.served = func() bool {
		defer r.calls.Add(1)
		return served()
	}
	f.c.recheck = 10 * time.Millisecond
	go f.c.Run(f.ctx, 1)
	return r
}

// recheck moves the clock past the next discovery recheck.
func (r *runner) recheck() { r.clock.Add(int64(spacerequest.Recheck)) }

// idle waits until Run has looked at served twice more: what it did after the first look is
// done by the second.
func (r *runner) idle() {
	r.f.t.Helper()
	start := r.calls.Load()
	controllertest.Eventually(r.f.t, r.f.ctx, "two more looks at served", func() bool { return r.calls.Load() >= start+2 })
}

func (f *fixture) spaceRequests() []unstructured.Unstructured {
	f.t.Helper()
	list, err := f.dyn.Resource(spacerequest.Resource).Namespace(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

func (f *fixture) target() *targetT {
	t, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(f.ctx, TargetName(claimName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

// cached waits until the SpaceRequest cache satisfies cond.
func (f *fixture) cached(what string, cond func(objs []interface{}) bool) {
	f.t.Helper()
	controllertest.Eventually(f.t, f.ctx, what, func() bool { return cond(f.c.active().List()) })
}

// TestProvisionAndReclaim: a claim gets a SpaceRequest; once Ready, a target that the
// SpaceRequest is labelled for; deleting the target deletes the SpaceRequest with the
// operator's finalizer, and the target goes once it is gone.
func TestProvisionAndReclaim(t *testing.T) {
	f := newFixture(t, true, []runtime.Object{pendingClaim(), class(appstudiov1alpha1.ReclaimPolicyDelete)})
	f.activate()
	f.mustSync()
	srs := f.spaceRequests()
	if len(srs) != 1 || srs[0].GetLabels()[spacerequest.LabelClaim] != claimName || spacerequest.TierName(&srs[0]) != "appstudio-env" {
		t.Fatalf("SpaceRequests %v", srs)
	}
	controllertest.ExpectEvents(t, f.events, "Normal SpaceRequested Requested a space of tier appstudio-env through a SpaceRequest")

	t.Log("not making a second SpaceRequest while the cache has yet to show the first")
	if err := f.c.sync(f.ctx, ns+"/"+claimName); err != nil && !errors.Is(err, errCacheBehind) {
		t.Fatalf("sync: %v", err)
	}
	if n := len(f.spaceRequests()); n != 1 {
		t.Fatalf("%d SpaceRequests", n)
	}
	f.cached("the SpaceRequest", func(objs []interface{}) bool { return len(objs) == 1 })
	f.mustSync()
	if n := len(f.spaceRequests()); n != 1 {
		t.Fatalf("%d SpaceRequests", n)
	}

	t.Log("making the target once the SpaceRequest is Ready")
	sr := srs[0].DeepCopy()
	ready("space")(sr)
	if _, err := f.dyn.Resource(spacerequest.Resource).Namespace(ns).Update(f.ctx, sr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.cached("the Ready SpaceRequest", func(objs []interface{}) bool { return spacerequest.IsReady(objs[0].(*unstructured.Unstructured)) })
	f.mustSync()
	dt := f.target()
	if dt == nil || dt.Status.Phase != appstudiov1alpha1.DeploymentTargetPhaseAvailable || dt.Spec.ClaimRef != claimName ||
		dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret != "space-secret" || !slices.Contains(dt.Finalizers, Finalizer) {
		t.Fatalf("target %+v", dt)
	}
	if got := f.spaceRequests()[0].GetLabels()[spacerequest.LabelTarget]; got != "preview-dt" {
		t.Errorf("SpaceRequest label dt=%q", got)
	}
	claim, _ := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, claimName, metav1.GetOptions{})
	if c := findCondition(claim.Status.Conditions, ConditionProvisioned); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("claim conditions %v", claim.Status.Conditions)
	}

	t.Log("deleting the SpaceRequest, with the operator's finalizer, when the target is deleted")
	del := metav1.NewTime(now)
	dt.DeletionTimestamp = &del
	if _, err := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Update(f.ctx, dt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the deleted target in the cache", func() bool {
		got, err := f.c.targets.DeploymentTargets(ns).Get(dt.Name)
		return err == nil && got.DeletionTimestamp != nil
	})
	f.cached("the labelled SpaceRequest", func(objs []interface{}) bool {
		return objs[0].(*unstructured.Unstructured).GetLabels()[spacerequest.LabelTarget] != ""
	})
	f.mustSync()
	var finalized bool
	for _, a := range f.dyn.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && slices.Contains(u.GetObject().(*unstructured.Unstructured).GetFinalizers(), spacerequest.Finalizer) {
			finalized = true
		}
	}
	if !finalized || len(f.spaceRequests()) != 0 {
		t.Errorf("finalizer added %v, SpaceRequests left %d", finalized, len(f.spaceRequests()))
	}
	if dt := f.target(); dt == nil || !slices.Contains(dt.Finalizers, Finalizer) {
		t.Fatalf("the target went before its SpaceRequest: %+v", dt)
	}

	t.Log("letting the target go once the SpaceRequest is gone")
	f.cached("no SpaceRequest", func(objs []interface{}) bool { return len(objs) == 0 })
	f.mustSync()
	if dt := f.target(); dt != nil && slices.Contains(dt.Finalizers, Finalizer) {
		t.Errorf("finalizer kept: %v", dt.Finalizers)
	}
}

// TestOrphanDeleted: a SpaceRequest of a claim that is gone, of a Delete class, is deleted.
func TestOrphanDeleted(t *testing.T) {
	f := newFixture(t, true, []runtime.Object{class(appstudiov1alpha1.ReclaimPolicyDelete)}, spaceRequest("preview-abc", ready("space")))
	f.activate()
	f.mustSync()
	if n := len(f.spaceRequests()); n != 0 {
		t.Errorf("%d SpaceRequests left", n)
	}
}

// TestIdlesUntilServed: Run queues nothing and starts no informer while the API is not
// served, starts when it is, and stops the informer when it goes away.
func TestIdlesUntilServed(t *testing.T) {
	f := newFixture(t, false, []runtime.Object{pendingClaim(), class(appstudiov1alpha1.ReclaimPolicyDelete)})
	r := f.run()
	r.idle()
	if f.c.active() != nil || f.c.Queue.Len() != 0 || len(f.dyn.Actions()) != 0 {
		t.Fatalf("not idle: active %v, queued %d, SpaceRequest requests %v", f.c.active() != nil, f.c.Queue.Len(), f.dyn.Actions())
	}
	f.serve()
	r.recheck()
	controllertest.Eventually(t, f.ctx, "a SpaceRequest for the claim", func() bool { return len(f.spaceRequests()) == 1 })

	t.Log("a discovery error that is no answer keeps the informer")
	f.discoMu.Lock()
	f.disco.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("dial tcp: i/o timeout")
	})
	f.discoMu.Unlock()
	r.recheck()
	r.idle()
	if f.c.active() == nil {
		t.Fatal("the informer stopped on a transient discovery error")
	}

	f.discoMu.Lock()
	f.disco.ReactionChain = f.disco.ReactionChain[1:]
	f.disco.Resources = nil
	f.discoMu.Unlock()
	r.recheck()
	controllertest.Eventually(t, f.ctx, "the informer stopped", func() bool { return f.c.active() == nil })
}

// TestIdlesWithoutAccess: served, but without its rights on SpaceRequests, Run starts no
// informer and writes nothing (nor fails); it starts once the rights are there.
func TestIdlesWithoutAccess(t *testing.T) {
	f := newFixture(t, true, []runtime.Object{pendingClaim(), class(appstudiov1alpha1.ReclaimPolicyDelete)})
	f.denied.Store(true)
	r := f.run()
	r.idle()
	r.recheck()
	r.idle()
	if f.c.active() != nil || f.c.Queue.Len() != 0 || len(f.dyn.Actions()) != 0 {
		t.Fatalf("not idle: active %v, queued %d, SpaceRequest requests %v", f.c.active() != nil, f.c.Queue.Len(), f.dyn.Actions())
	}
	if got := controllertest.Recorded(f.events); len(got) != 0 {
		t.Errorf("events %v", got)
	}
	claim, _ := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, claimName, metav1.GetOptions{})
	if len(claim.Status.Conditions) != 0 {
		t.Errorf("claim conditions %v", claim.Status.Conditions)
	}

	f.denied.Store(false)
	r.recheck()
	controllertest.Eventually(t, f.ctx, "a SpaceRequest for the claim", func() bool { return len(f.spaceRequests()) == 1 })
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

type lockedDiscovery struct {
	*fakediscovery.FakeDiscovery
	mu *sync.Mutex
}

func (d lockedDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerResourcesForGroupVersion(gv)
}

// otherClass is a second class of this provisioner, named other.
func otherClass(policy appstudiov1alpha1.ReclaimPolicy) *classT {
	c := class(policy)
	c.Name = "other"
	return c
}

// listSelectors are the label selectors of the SpaceRequest lists made of the server.
func (f *fixture) listSelectors() []string {
	var out []string
	for _, a := range f.dyn.Actions() {
		if l, ok := a.(clienttesting.ListAction); ok && a.GetResource() == spacerequest.Resource {
			out = append(out, l.GetListRestrictions().Labels.String())
		}
	}
	return out
}

// TestTargetClassDecidesReclaim: a target being deleted is reclaimed under its own class
// (Retain: its SpaceRequest is kept), not under that of a new claim of the same name (Delete).
func TestTargetClassDecidesReclaim(t *testing.T) {
	claim := pendingClaim()
	claim.Spec.DeploymentTargetClassName = "other"
	claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner] = "other"
	dt := ourTarget(deleting, func(t *targetT) { t.Spec.ClaimRef = "" })
	f := newFixture(t, true, []runtime.Object{claim, dt, class(appstudiov1alpha1.ReclaimPolicyRetain), otherClass(appstudiov1alpha1.ReclaimPolicyDelete)},
		spaceRequest("preview-abc", ready("space"), labelledTarget))
	f.activate()
	f.mustSync()
	if n := len(f.spaceRequests()); n != 1 {
		t.Fatalf("the SpaceRequest kept under the target's Retain class was deleted: %d left", n)
	}
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "update" || a.GetVerb() == "delete" {
			t.Errorf("SpaceRequest written: %v", a)
		}
	}
	if dt := f.target(); dt == nil || slices.Contains(dt.Finalizers, Finalizer) {
		t.Errorf("the target was not let go: %+v", dt)
	}
}

// TestOrphanOfDeletedClassKept: the SpaceRequest of a claim that is gone, whose recorded class
// is gone too, is not deleted under the only other class of this provisioner.
func TestOrphanOfDeletedClassKept(t *testing.T) {
	f := newFixture(t, true, []runtime.Object{otherClass(appstudiov1alpha1.ReclaimPolicyDelete)}, spaceRequest("preview-abc", ready("space")))
	f.activate()
	f.mustSync()
	if n := len(f.spaceRequests()); n != 1 {
		t.Errorf("%d SpaceRequests left", n)
	}
	if got := controllertest.RecordedReasons(f.events); !slices.Equal(got, []string{"Warning " + EventClassNotFound}) {
		t.Errorf("events %v", got)
	}
}

// TestInvalidClaimName: a claim whose name (or its target's) cannot be a label value is
// reported, and no SpaceRequest is listed with a selector that would select those without the
// label; a target of that name being deleted is let go without one either.
func TestInvalidClaimName(t *testing.T) {
	long := strings.Repeat("a", 61)
	claim := pendingClaim()
	claim.Name = long
	gone := strings.Repeat("b", 61)
	dt := ourTarget(deleting)
	dt.Name, dt.Spec.ClaimRef = TargetName(gone), gone
	unlabelled := spacerequest.New(ns, "", spacerequest.TierAppStudioEnv, nil, nil)
	unlabelled.SetName("unlabelled")
	f := newFixture(t, true, []runtime.Object{claim, dt, class(appstudiov1alpha1.ReclaimPolicyDelete)}, unlabelled)
	f.activate()

	f.mustSyncUnit(long)
	got, _ := f.gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(f.ctx, long, metav1.GetOptions{})
	if c := findCondition(got.Status.Conditions, ConditionProvisioned); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidClaimName {
		t.Errorf("claim conditions %v", got.Status.Conditions)
	}
	if got := controllertest.RecordedReasons(f.events); !slices.Equal(got, []string{"Warning " + ReasonInvalidClaimName}) {
		t.Errorf("events %v", got)
	}

	f.mustSyncUnit(gone)
	if got, _ := f.gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(f.ctx, dt.Name, metav1.GetOptions{}); slices.Contains(got.Finalizers, Finalizer) {
		t.Errorf("the target was not let go: %v", got.Finalizers)
	}
	if n := len(f.spaceRequests()); n != 1 {
		t.Errorf("%d SpaceRequests left", n)
	}
	for _, sel := range f.listSelectors() {
		if strings.Contains(sel, "!") {
			t.Errorf("listed SpaceRequests with %q", sel)
		}
	}
}

// TestServerChecksSeeWhatTheCacheSees: a SpaceRequest the informer does not cache (labelled
// for the target only) does not make the check before a create wait for the cache forever, nor
// one of another tier the check before a target's finalizer goes.
func TestServerChecksSeeWhatTheCacheSees(t *testing.T) {
	stray := spacerequest.New(ns, "", spacerequest.TierAppStudioEnv, map[string]string{spacerequest.LabelTarget: TargetName(claimName)}, nil)
	stray.SetName("stray")
	f := newFixture(t, true, []runtime.Object{pendingClaim(), class(appstudiov1alpha1.ReclaimPolicyDelete)}, stray)
	f.activate()
	f.mustSync()
	if n := len(f.spaceRequests()); n != 2 {
		t.Fatalf("%d SpaceRequests, want the stray one and one made for the claim", n)
	}

	t.Run("another tier", func(t *testing.T) {
		f := newFixture(t, true, []runtime.Object{ourTarget(deleting), class(appstudiov1alpha1.ReclaimPolicyDelete)},
			spaceRequest("preview-base", ready("space"), labelledTarget, tier("base")))
		f.activate()
		f.mustSync()
		if dt := f.target(); dt == nil || slices.Contains(dt.Finalizers, Finalizer) {
			t.Errorf("the target was not let go: %+v", dt)
		}
		if n := len(f.spaceRequests()); n != 1 {
			t.Errorf("the SpaceRequest of another tier was deleted: %d left", n)
		}
	})
}
