package devsandboxprovisioner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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
		disco: &clienttesting.Fake{}}
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
		f.gitops, f.dyn, &fakediscovery.FakeDiscovery{Fake: f.disco}, f.events)
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
	if err := f.c.sync(f.ctx, ns+"/"+claimName); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
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
	if err := f.c.sync(f.ctx, ns+"/"+claimName); err != nil && len(f.spaceRequests()) != 1 {
		t.Fatalf("sync: %v; %d SpaceRequests", err, len(f.spaceRequests()))
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
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	tick := func() time.Time { return time.Unix(0, clock.Load()) }
	f.c.served = spacerequest.Served(lockedDiscovery{&fakediscovery.FakeDiscovery{Fake: f.disco}, &f.discoMu}, tick)
	f.c.recheck = 10 * time.Millisecond
	go f.c.Run(f.ctx, 1)
	time.Sleep(50 * time.Millisecond)
	if f.c.active() != nil || f.c.Queue.Len() != 0 || len(f.dyn.Actions()) != 0 {
		t.Fatalf("not idle: active %v, queued %d, SpaceRequest requests %v", f.c.active() != nil, f.c.Queue.Len(), f.dyn.Actions())
	}
	f.serve()
	clock.Add(int64(spacerequest.Recheck))
	controllertest.Eventually(t, f.ctx, "a SpaceRequest for the claim", func() bool { return len(f.spaceRequests()) == 1 })

	f.discoMu.Lock()
	f.disco.Resources = nil
	f.discoMu.Unlock()
	clock.Add(int64(spacerequest.Recheck))
	controllertest.Eventually(t, f.ctx, "the informer stopped", func() bool { return f.c.active() == nil })
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
