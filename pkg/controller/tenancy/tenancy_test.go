package tenancy

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

const argoNamespace = "argocd-a"

// placement is a tenant's placement; a held one carries HeldFinalizer, as its holder puts it.
func placement(name, spec, status string) *managedv1alpha1.TenantPlacement {
	p := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: spec}, Status: managedv1alpha1.TenantPlacementStatus{Instance: status}}
	if status != "" {
		p.Finalizers = []string{HeldFinalizer}
	}
	return p
}

func deleted(p *managedv1alpha1.TenantPlacement) *managedv1alpha1.TenantPlacement {
	p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)}
	return p
}

func unguarded(p *managedv1alpha1.TenantPlacement) *managedv1alpha1.TenantPlacement {
	p.Finalizers = nil
	return p
}

func application(name, tenant string) *argov1alpha1.Application {
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNamespace,
		Labels: map[string]string{argocd.LabelDeploymentNamespace: tenant}}}
}

func TestDecide(t *testing.T) {
	withFinalizer := func(p *managedv1alpha1.TenantPlacement) *managedv1alpha1.TenantPlacement {
		p.Finalizers = []string{HeldFinalizer}
		return p
	}
	for _, tc := range []struct {
		name string
		p    *managedv1alpha1.TenantPlacement
		want step
	}{
		{"placed here, held by none", placement("jane", "a", ""), take},
		{"placed here, held here", placement("jane", "a", "a"), stay},
		{"held here without the finalizer (an earlier agent took it)", unguarded(placement("jane", "a", "a")), guard},
		{"placed here, still held by the old instance", placement("jane", "a", "b"), stay},
		{"moved away, held here", placement("jane", "b", "a"), release},
		{"moved away, released", placement("jane", "b", ""), stay},
		{"another instance's", placement("jane", "b", "b"), stay},
		// An admin emptied spec.instance: the tenant stays until the plan places it, rather
		// than have its Applications removed and made again should it land here.
		{"placed nowhere, held here", placement("jane", "", "a"), stay},
		{"deleted, held here", deleted(placement("jane", "a", "a")), release},
		{"deleted while moving, held here", deleted(placement("jane", "b", "a")), release},
		{"deleted, released, finalizer left", deleted(withFinalizer(placement("jane", "a", ""))), unblock},
		{"deleted, held by another", deleted(placement("jane", "b", "b")), stay},
		{"deleted, nobody holds it, no finalizer", deleted(placement("jane", "a", "")), stay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(tc.p, "a"); got != tc.want {
				t.Errorf("decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHeld(t *testing.T) {
	for _, tc := range []struct {
		p    *managedv1alpha1.TenantPlacement
		want bool
	}{
		{placement("jane", "a", "a"), true},
		{placement("jane", "", "a"), true},   // placed nowhere yet: kept until the plan decides
		{placement("jane", "b", "a"), false}, // moving away: its Applications go
		{placement("jane", "a", ""), false},  // not taken yet
		{placement("jane", "a", "b"), false}, // the old holder still has it
		{deleted(placement("jane", "a", "a")), false},
		{nil, false},
	} {
		if got := Held(tc.p, "a"); got != tc.want {
			t.Errorf("Held(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	var all *Tenants
	held, done := all.Serving("anything")
	done()
	if !all.Holds("anything") || !all.Keeps("anything") || !held || all.Watch(nil, nil) != nil {
		t.Error("a nil Tenants serves every namespace and watches nothing")
	}
}

// A controller learns of the namespaces it gains and loses, and of no other change.
func TestTenantsWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gitops := gitopsfake.NewSimpleClientset(placement("jane", "a", "a"), placement("joe", "b", "b"))
	factory := externalversions.NewSharedInformerFactory(gitops, 0)
	tenants := NewTenants("a", factory.ManagedGitops().V1alpha1().TenantPlacements())
	var mu sync.Mutex
	var requeued []string
	ctl := framework.NewController("test", func(context.Context, string) error { return nil })
	if err := tenants.Watch(ctl, func(ns string) { mu.Lock(); requeued = append(requeued, ns); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, factory)
	got := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(requeued) }
	controllertest.Eventually(t, ctx, "jane gained", func() bool { return slices.Equal(got(), []string{"jane"}) })
	if !tenants.Holds("jane") || tenants.Holds("joe") || tenants.Holds("nobody") {
		t.Error("Holds: want jane only")
	}

	client := gitops.ManagedGitopsV1alpha1().TenantPlacements()
	// joe moving between other instances, and jane's message, change nothing here.
	if _, err := client.UpdateStatus(ctx, placement("joe", "c", "b"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	jane := placement("jane", "a", "a")
	jane.Status.Message = "noted"
	if _, err := client.UpdateStatus(ctx, jane, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// jane moves away; kim arrives.
	if _, err := client.Update(ctx, placement("jane", "b", "a"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Create(ctx, placement("kim", "a", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "jane lost and kim gained", func() bool {
		return slices.Equal(got(), []string{"jane", "jane", "kim"})
	})
	if tenants.Holds("jane") || !tenants.Keeps("jane") {
		t.Error("jane, moving away: want kept (its credentials stay) but not held (its Applications go)")
	}
	// Released: its credentials go too.
	if _, err := client.UpdateStatus(ctx, placement("jane", "b", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "jane released", func() bool { return slices.Equal(got(), []string{"jane", "jane", "kim", "jane"}) })
	if err := client.Delete(ctx, "kim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "kim lost", func() bool { return slices.Equal(got(), []string{"jane", "jane", "kim", "jane", "kim"}) })
}

type handoverFixture struct {
	gitops  *gitopsfake.Clientset
	argo    *argofake.Clientset
	tenants *Tenants
	h       *Handover
	rec     *record.FakeRecorder
}

func newHandover(t *testing.T, ctx context.Context, instance string, objs []runtime.Object, apps ...runtime.Object) handoverFixture {
	t.Helper()
	f := handoverFixture{gitops: gitopsfake.NewSimpleClientset(objs...), argo: argofake.NewSimpleClientset(apps...), rec: record.NewFakeRecorder(10)}
	gitopsInformers := externalversions.NewSharedInformerFactory(f.gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactory(f.argo, 0)
	placements := gitopsInformers.ManagedGitops().V1alpha1().TenantPlacements()
	f.tenants = NewTenants(instance, placements)
	var err error
	f.h, err = NewHandover(f.tenants, argoNamespace, placements, argoInformers.Argoproj().V1alpha1().Applications(), f.gitops, f.argo, f.rec)
	if err != nil {
		t.Fatal(err)
	}
	// Only the events the tests cause queue a placement: no timer does.
	f.h.recheck = time.Hour
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers)
	controllertest.Drain(t, ctx, f.h.Controller)
	return f
}

func (f handoverFixture) placement(t *testing.T, ctx context.Context, name string) *managedv1alpha1.TenantPlacement {
	t.Helper()
	p, err := f.gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// synced waits until the cache shows the placement as the server has it.
func (f handoverFixture) synced(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	want := f.placement(t, ctx, name)
	controllertest.Eventually(t, ctx, "the cache to show "+name, func() bool {
		p, err := f.h.placements.Get(name)
		return err == nil && p.ResourceVersion == want.ResourceVersion && equality.Semantic.DeepEqual(p, want)
	})
}

func TestHandoverTakesAPlacedTenant(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{placement("jane", "a", ""), placement("joe", "b", "")})
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	f.h.now = func() time.Time { return now }
	f.gitops.ClearActions()
	for _, key := range []string{"jane", "joe", "gone"} {
		if err := f.h.sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	p := f.placement(t, ctx, "jane")
	if st := p.Status; st.Instance != "a" || st.Message != "" || !st.LastTransitionTime.Time.Equal(now) {
		t.Errorf("jane: %+v, want taken by a now", st)
	}
	// The finalizer first: a placement deleted once taken waits for its release.
	if !slices.Equal(p.Finalizers, []string{HeldFinalizer}) {
		t.Errorf("jane's finalizers %v, want %s", p.Finalizers, HeldFinalizer)
	}
	var writes []string
	for _, a := range f.gitops.Actions() {
		if a.GetVerb() == "update" {
			writes = append(writes, a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	if !slices.Equal(writes, []string{"tenantplacements/", "tenantplacements/status"}) {
		t.Errorf("writes %v, want the finalizer, then the holder", writes)
	}
	if st := f.placement(t, ctx, "joe").Status; st.Instance != "" {
		t.Errorf("joe, placed on b, was taken: %+v", st)
	}
	controllertest.ExpectEvents(t, f.rec, "Normal Taken instance a holds the tenant")
}

// The old instance lets its tenant go only once the server shows none of its Applications
// left: not while the cache lags behind an Application just made. Meanwhile the placement
// says what it waits for.
func TestHandoverReleasesOnceNoApplicationIsLeft(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{placement("jane", "b", "a")}, application("gitopsdepl-1", "jane"), application("other", "joe"))
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if st := f.placement(t, ctx, "jane").Status; st.Instance != "a" || !strings.Contains(st.Message, "removing the tenant's 1 Application(s)") {
		t.Fatalf("jane: %+v, want held, and saying what it waits for", st)
	}
	controllertest.Drain(t, ctx, f.h.Controller) // its own status write
	if err := f.argo.ArgoprojV1alpha1().Applications(argoNamespace).Delete(ctx, "gitopsdepl-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deletion queues the tenant's placement (no timer does here).
	controllertest.Eventually(t, ctx, "the deletion queued", func() bool { return f.h.Queue.Len() > 0 })
	if keys := controllertest.Drain(t, ctx, f.h.Controller); !slices.Equal(keys, []string{"jane"}) {
		t.Errorf("queued %v after the Application's deletion, want jane", keys)
	}
	// An Application the cache has not seen holds the release back all the same.
	f.synced(t, ctx, "jane")
	serverHasOne := true
	var mu sync.Mutex
	f.argo.PrependReactor("list", "applications", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if !serverHasOne {
			return false, nil, nil
		}
		return true, &argov1alpha1.ApplicationList{Items: []argov1alpha1.Application{*application("gitopsdepl-2", "jane")}}, nil
	})
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if st := f.placement(t, ctx, "jane").Status; st.Instance != "a" {
		t.Fatalf("released while the server lists an Application: %+v", st)
	}
	mu.Lock()
	serverHasOne = false
	mu.Unlock()
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	p := f.placement(t, ctx, "jane")
	if p.Status.Instance != "" || !strings.Contains(p.Status.Message, "released by instance a; waiting for instance b") {
		t.Errorf("jane: %+v, want released", p.Status)
	}
	if len(p.Finalizers) != 0 {
		t.Errorf("finalizers %v left on a released placement", p.Finalizers)
	}
	controllertest.ExpectEvents(t, f.rec, "Normal Released released by instance a; waiting for instance b to take it")
}

// A deleted placement is released like a move, and its finalizer goes with the hold.
func TestHandoverReleasesADeletedPlacement(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{deleted(placement("jane", "a", "a"))})
	if f.tenants.Holds("jane") {
		t.Error("a deleted placement is held")
	}
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	p := f.placement(t, ctx, "jane")
	if p.Status.Instance != "" || len(p.Finalizers) != 0 || p.Status.Message != "released by instance a" {
		t.Errorf("jane: %+v %v, want released with its finalizer gone", p.Status, p.Finalizers)
	}
}

// A reconcile that saw the tenant held writes its Application before the release looks: the
// release then finds it and waits, rather than hand over a tenant with an Application left.
func TestHandoverWaitsForAReconcileInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{placement("jane", "a", "a")})
	held, done := f.tenants.Serving("jane")
	if !held {
		t.Fatal("jane not held")
	}
	moved := placement("jane", "b", "a")
	if _, err := f.gitops.ManagedGitopsV1alpha1().TenantPlacements().Update(ctx, moved, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.synced(t, ctx, "jane")
	released := make(chan error, 1)
	go func() { released <- f.h.sync(ctx, "jane") }()
	select {
	case err := <-released:
		t.Fatalf("the release did not wait for the reconcile holding the tenant (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	// The reconcile writes its Application, then finishes.
	if _, err := f.argo.ArgoprojV1alpha1().Applications(argoNamespace).Create(ctx, application("gitopsdepl-1", "jane"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if st := f.placement(t, ctx, "jane").Status; st.Instance != "a" {
		t.Errorf("released with the reconcile's Application left: %+v", st)
	}
}

func TestReporter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inst := &managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: managedv1alpha1.ArgoCDInstanceSpec{Namespace: argoNamespace, Capacity: 10}}
	gitops := gitopsfake.NewSimpleClientset(inst, placement("jane", "a", "a"), placement("joe", "b", "a"), placement("kim", "a", ""))
	argo := argofake.NewSimpleClientset(application("gitopsdepl-1", "jane"), application("gitopsdepl-2", "joe"),
		&argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: argoNamespace}})
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactory(argo, 0)
	r := NewReporter("a", "agent-0", argoNamespace, gitops, gitopsInformers.ManagedGitops().V1alpha1().TenantPlacements().Lister(),
		argoInformers.Argoproj().V1alpha1().Applications().Lister())
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers)
	if err := r.report(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status
	// joe, moving away, is still held here until released.
	if st.Leader != "agent-0" || st.Tenants != 2 || st.Applications != 2 || !st.LastHeartbeatTime.Time.Equal(now) {
		t.Errorf("status %+v, want agent-0 holding 2 tenants with 2 Applications, heard of now", st)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != "Ready" || st.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("conditions %+v, want Ready", st.Conditions)
	}
	// The next report moves the heartbeat on, and keeps the condition's transition time.
	then := now.Add(HeartbeatInterval)
	r.now = func() time.Time { return then }
	if err := r.report(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, "a", metav1.GetOptions{})
	if !again.Status.LastHeartbeatTime.Time.Equal(then) || !again.Status.Conditions[0].LastTransitionTime.Equal(&st.Conditions[0].LastTransitionTime) {
		t.Errorf("second report %+v", again.Status)
	}
}

func TestCheckInstance(t *testing.T) {
	ctx := context.Background()
	gitops := gitopsfake.NewSimpleClientset(&managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: managedv1alpha1.ArgoCDInstanceSpec{Namespace: argoNamespace, Capacity: 10}})
	for _, tc := range []struct{ instance, namespace, want string }{
		{"a", argoNamespace, ""},
		{"b", argoNamespace, "--instance b: no ArgoCDInstance b"},
		{"a", "argocd", "--instance a runs Argo CD in namespace argocd-a, but the agent drives namespace argocd"},
	} {
		err := CheckInstance(ctx, gitops, tc.instance, tc.namespace)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckInstance(%s, %s) = %v, want %q", tc.instance, tc.namespace, err, tc.want)
		}
	}
	// An instance deleted while it holds a tenant starts, to release it.
	holding := gitopsfake.NewSimpleClientset(placement("jane", "a", "gone"))
	if err := CheckInstance(ctx, holding, "gone", argoNamespace); err != nil {
		t.Errorf("CheckInstance of a gone instance holding a tenant: %v", err)
	}
}
