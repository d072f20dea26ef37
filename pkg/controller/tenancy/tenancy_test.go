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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

const argoNamespace = "argocd-a"

func placement(name, spec, status string) *managedv1alpha1.TenantPlacement {
	return &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name"},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: spec}, Status: managedv1alpha1.TenantPlacementStatus{Instance: status}}
}

func application(name, tenant string) *argov1alpha1.Application {
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNamespace,
		Labels: map[string]string{argocd.LabelDeploymentNamespace: tenant}}}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name         string
		spec, status string
		want         step
	}{
		{"placed here, held by none", "a", "", take},
		{"placed here, held here", "a", "a", stay},
		{"placed here, still held by the old instance", "a", "b", stay},
		{"moved away, held here", "b", "a", release},
		{"moved away, released", "b", "", stay},
		{"another instance's", "b", "b", stay},
		{"not placed, held here (no instance had room after a drain)", "", "a", release},
		{"not placed, held by none", "", "", stay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(placement("jane", tc.spec, tc.status), "a"); got != tc.want {
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
		{placement("jane", "b", "a"), false}, // moving away: its objects go
		{placement("jane", "a", ""), false},  // not taken yet
		{placement("jane", "a", "b"), false}, // the old holder still has it
		{nil, false},
	} {
		if got := Held(tc.p, "a"); got != tc.want {
			t.Errorf("Held(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	var all *Tenants
	if !all.Holds("anything") || all.Instance() != "" || all.Watch(nil, nil) != nil {
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
	if err := client.Delete(ctx, "kim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "kim lost", func() bool { return slices.Equal(got(), []string{"jane", "jane", "kim", "kim"}) })
}

type handoverFixture struct {
	gitops *gitopsfake.Clientset
	argo   *argofake.Clientset
	h      *Handover
	rec    *record.FakeRecorder
}

func newHandover(t *testing.T, ctx context.Context, instance string, objs []runtime.Object, apps ...runtime.Object) handoverFixture {
	t.Helper()
	f := handoverFixture{gitops: gitopsfake.NewSimpleClientset(objs...), argo: argofake.NewSimpleClientset(apps...), rec: record.NewFakeRecorder(10)}
	gitopsInformers := externalversions.NewSharedInformerFactory(f.gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactory(f.argo, 0)
	var err error
	f.h, err = NewHandover(instance, argoNamespace, gitopsInformers.ManagedGitops().V1alpha1().TenantPlacements(),
		argoInformers.Argoproj().V1alpha1().Applications(), f.gitops, f.argo, f.rec)
	if err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers)
	controllertest.Drain(t, ctx, f.h.Controller)
	return f
}

func (f handoverFixture) holder(t *testing.T, ctx context.Context, name string) managedv1alpha1.TenantPlacementStatus {
	t.Helper()
	p, err := f.gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status
}

func TestHandoverTakesAPlacedTenant(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{placement("jane", "a", ""), placement("joe", "b", "")})
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	f.h.now = func() time.Time { return now }
	for _, key := range []string{"jane", "joe", "gone"} {
		if err := f.h.sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.holder(t, ctx, "jane"); st.Instance != "a" || st.Message != "" || !st.LastTransitionTime.Time.Equal(now) {
		t.Errorf("jane: %+v, want taken by a now", st)
	}
	if st := f.holder(t, ctx, "joe"); st.Instance != "" {
		t.Errorf("joe, placed on b, was taken: %+v", st)
	}
	controllertest.ExpectEvents(t, f.rec, "Normal Taken instance a holds the tenant")
}

// The old instance lets its tenant go only once the server shows none of its Applications
// left: not while the cache lags behind an Application just made.
func TestHandoverReleasesOnceNoApplicationIsLeft(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newHandover(t, ctx, "a", []runtime.Object{placement("jane", "b", "a")}, application("gitopsdepl-1", "jane"), application("other", "joe"))
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if st := f.holder(t, ctx, "jane"); st.Instance != "a" {
		t.Fatalf("released with an Application left: %+v", st)
	}
	if err := f.argo.ArgoprojV1alpha1().Applications(argoNamespace).Delete(ctx, "gitopsdepl-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The deletion queues the tenant's placement.
	controllertest.Eventually(t, ctx, "the deletion queued", func() bool { return f.h.Queue.Len() > 0 })
	keys := controllertest.Drain(t, ctx, f.h.Controller)
	if !slices.Contains(keys, "jane") {
		t.Errorf("queued %v after the Application's deletion, want jane", keys)
	}
	// An Application the cache has not seen holds the release back all the same.
	f.argo.PrependReactor("list", "applications", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &argov1alpha1.ApplicationList{Items: []argov1alpha1.Application{*application("gitopsdepl-2", "jane")}}, nil
	})
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	if st := f.holder(t, ctx, "jane"); st.Instance != "a" {
		t.Fatalf("released while the server lists an Application: %+v", st)
	}
	f.argo.ReactionChain = f.argo.ReactionChain[1:]
	if err := f.h.sync(ctx, "jane"); err != nil {
		t.Fatal(err)
	}
	st := f.holder(t, ctx, "jane")
	if st.Instance != "" || !strings.Contains(st.Message, "released by instance a; waiting for instance b") {
		t.Errorf("jane: %+v, want released", st)
	}
	controllertest.ExpectEvents(t, f.rec, "Normal Released released by instance a; waiting for instance b to take it")
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
}
