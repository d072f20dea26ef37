package placement

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fixture is the controller over fake clientsets, with its informers running; tests call sync
// directly, once the caches show what the server has.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	gitops *fake.Clientset
	kube   *kubefake.Clientset
	events *record.FakeRecorder
	c      *Controller
}

// newFixture is the controller with no owner share. The namespaces of the namespaced objects
// exist unless kubeObjs has them already.
func newFixture(t *testing.T, kubeObjs []runtime.Object, objs ...runtime.Object) *fixture {
	return newFixtureWithShare(t, 1, kubeObjs, objs...)
}

func newFixtureWithShare(t *testing.T, share Share, kubeObjs []runtime.Object, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	have := map[string]bool{}
	for _, o := range kubeObjs {
		if ns, ok := o.(*corev1.Namespace); ok {
			have[ns.Name] = true
		}
	}
	for _, o := range objs {
		if ns := objectNamespace(o); ns != "" && !have[ns] {
			have[ns] = true
			kubeObjs = append(kubeObjs, namespace(ns))
		}
	}
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), kube: kubefake.NewClientset(kubeObjs...),
		events: record.NewFakeRecorder(100)}
	factory := externalversions.NewSharedInformerFactory(f.gitops, 0)
	kubeFactory := informers.NewSharedInformerFactory(f.kube, 0)
	m := factory.ManagedGitops().V1alpha1()
	var err error
	f.c, err = New(m.ArgoCDInstances(), m.TenantPlacements(), m.GitOpsDeployments(), m.GitOpsDeploymentManagedEnvironments(),
		m.GitOpsDeploymentRepositoryCredentials(), kubeFactory.Core().V1().Namespaces(), f.gitops, f.events, share)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return now }
	controllertest.StartInformers(t, ctx, factory)
	controllertest.StartInformers(t, ctx, kubeFactory)
	// The fake's watches start after its lists: a write in between would never reach the caches.
	controllertest.Eventually(t, ctx, "the informers' watches", func() bool {
		watched := map[string]bool{}
		for _, a := range append(f.gitops.Actions(), f.kube.Actions()...) {
			if a.GetVerb() == "watch" {
				watched[a.GetResource().Resource] = true
			}
		}
		return len(watched) == 6
	})
	controllertest.Drain(t, ctx, f.c.Controller)
	return f
}

// sync runs one sync once the caches are up to date; writes then tells what it wrote.
func (f *fixture) sync() error {
	f.t.Helper()
	f.awaitCaches()
	f.gitops.ClearActions()
	f.kube.ClearActions()
	return f.c.sync(f.ctx, fleetKey)
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.sync(); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// writes is the write requests of the last sync, as "verb resource[/subresource] name", by
// name: a sync's writes of different objects go out concurrently, in no set order, while those
// of one object (a create, then its status) keep theirs.
func (f *fixture) writes() []string {
	type write struct{ name, line string }
	var out []write
	for _, a := range append(f.gitops.Actions(), f.kube.Actions()...) {
		var name string
		switch a := a.(type) {
		case clienttesting.CreateAction:
			name = objectName(a.GetObject())
		case clienttesting.UpdateAction:
			name = objectName(a.GetObject())
		case clienttesting.DeleteAction:
			name = a.GetName()
		default:
			continue // reads
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		out = append(out, write{name, a.GetVerb() + " " + res + " " + name})
	}
	slices.SortStableFunc(out, func(a, b write) int { return strings.Compare(a.name, b.name) })
	lines := make([]string, len(out))
	for i, w := range out {
		lines[i] = w.line
	}
	return lines
}

func objectNamespace(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetNamespace()
}

func objectName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "?"
	}
	return m.GetName()
}

func (f *fixture) expectWrites(want ...string) {
	f.t.Helper()
	if got := f.writes(); !slices.Equal(got, want) {
		f.t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// awaitCaches waits until the caches hold the instances, placements and deployments as the
// server has them.
func (f *fixture) awaitCaches() {
	f.t.Helper()
	api := f.gitops.ManagedGitopsV1alpha1()
	instances, err := api.ArgoCDInstances().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	placements, err := api.TenantPlacements().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	deployments, err := api.GitOpsDeployments("").List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	namespaces, err := f.kube.CoreV1().Namespaces().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	controllertest.Eventually(f.t, f.ctx, "the caches", func() bool {
		ci, _ := f.c.instances.List(labels.Everything())
		cp, _ := f.c.placements.List(labels.Everything())
		cd, _ := f.c.deployments.List(labels.Everything())
		cn, _ := f.c.namespaces.List(labels.Everything())
		return sameObjects(instances.Items, ci) && sameObjects(placements.Items, cp) && sameObjects(deployments.Items, cd) &&
			sameObjects(namespaces.Items, cn)
	})
}

func sameObjects[T any, P interface {
	*T
	metav1.Object
}](server []T, cached []P) bool {
	if len(server) != len(cached) {
		return false
	}
	byKey := map[string]P{}
	for _, o := range cached {
		byKey[o.GetNamespace()+"/"+o.GetName()] = o
	}
	for i := range server {
		s := P(&server[i])
		if c, ok := byKey[s.GetNamespace()+"/"+s.GetName()]; !ok || !apiequality.Semantic.DeepEqual(c, s) {
			return false
		}
	}
	return true
}

func (f *fixture) placements() map[string]*managedv1alpha1.TenantPlacement {
	f.t.Helper()
	list, err := f.gitops.ManagedGitopsV1alpha1().TenantPlacements().List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*managedv1alpha1.TenantPlacement{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// placedOn is "namespace=spec.instance" of every placement, by namespace.
func (f *fixture) placedOn() []string {
	var out []string
	for name, p := range f.placements() {
		out = append(out, name+"="+p.Spec.Instance)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) expectPlaced(want ...string) {
	f.t.Helper()
	if got := f.placedOn(); !slices.Equal(got, want) {
		f.t.Errorf("placements %v, want %v", got, want)
	}
}

// expectEvents checks the events since the last call, in any order: a sync's writes, and so
// their events, are concurrent.
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	got := controllertest.Recorded(f.events)
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		f.t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type instanceOpt func(*managedv1alpha1.ArgoCDInstance)

// instance is a Ready instance whose agent reported 5 s ago.
func instance(name string, capacity int32, opts ...instanceOpt) *managedv1alpha1.ArgoCDInstance {
	hb := metav1.NewTime(now.Add(-5 * time.Second))
	in := &managedv1alpha1.ArgoCDInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       managedv1alpha1.ArgoCDInstanceSpec{Namespace: "argocd-" + name, Capacity: capacity},
		Status: managedv1alpha1.ArgoCDInstanceStatus{
			Conditions: []metav1.Condition{{Type: managedv1alpha1.ArgoCDInstanceConditionReady, Status: metav1.ConditionTrue,
				Reason: "Heartbeat", LastTransitionTime: hb}},
			LastHeartbeatTime: &hb,
		},
	}
	for _, o := range opts {
		o(in)
	}
	return in
}

func heartbeat(age time.Duration) instanceOpt {
	return func(in *managedv1alpha1.ArgoCDInstance) {
		hb := metav1.NewTime(now.Add(-age))
		in.Status.LastHeartbeatTime = &hb
	}
}

func draining(in *managedv1alpha1.ArgoCDInstance) { in.Spec.Draining = true }

func deployment(namespace string) *managedv1alpha1.GitOpsDeployment {
	return &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "app"}}
}

type placementOpt func(*managedv1alpha1.TenantPlacement)

// placement places namespace on instance, held there.
func placement(namespace, instance string, opts ...placementOpt) *managedv1alpha1.TenantPlacement {
	p := &managedv1alpha1.TenantPlacement{
		ObjectMeta: metav1.ObjectMeta{Name: namespace, UID: types.UID("uid-" + namespace)},
		Spec:       managedv1alpha1.TenantPlacementSpec{Instance: instance},
		Status:     managedv1alpha1.TenantPlacementStatus{Instance: instance},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func pinnedByAdmin(p *managedv1alpha1.TenantPlacement) { p.Spec.Pinned = true }

func status(holder, message string) placementOpt {
	return func(p *managedv1alpha1.TenantPlacement) { p.Status.Instance, p.Status.Message = holder, message }
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestPlacesNewTenantsOnTheLeastLoaded(t *testing.T) {
	f := newFixture(t, nil, instance("a", 2), instance("b", 5), deployment("t1"), deployment("t2"), deployment("t3"))
	f.mustSync()
	// Ties go to the lower name: t1 to a, then b is the least loaded, then a again.
	f.expectPlaced("t1=a", "t2=b", "t3=a")
	f.expectWrites("create tenantplacements t1", "create tenantplacements t2", "create tenantplacements t3")
	f.expectEvents(
		"Normal Placed placed on Argo CD instance a (Unplaced)",
		"Normal Placed placed on Argo CD instance b (Unplaced)",
		"Normal Placed placed on Argo CD instance a (Unplaced)")

	f.mustSync()
	f.expectWrites()
	f.expectEvents()
	f.expectPlaced("t1=a", "t2=b", "t3=a")
}

func TestOtherGitOpsObjectsMakeTenants(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5),
		&managedv1alpha1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: "env", Name: "e"}},
		&managedv1alpha1.GitOpsDeploymentRepositoryCredential{ObjectMeta: metav1.ObjectMeta{Namespace: "cred", Name: "c"}})
	f.mustSync()
	f.expectPlaced("cred=a", "env=a")
}

// An instance whose agent stopped reporting takes no tenant, and is shown not Ready (once).
func TestStaleInstanceTakesNoTenant(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5, heartbeat(HeartbeatTimeout+time.Second)), instance("b", 5),
		deployment("t1"), deployment("t2"))
	f.mustSync()
	f.expectPlaced("t1=b", "t2=b")
	a, err := f.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(f.ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Status.Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != reasonAgentLost || !strings.Contains(c.Message, "no agent has reported") {
		t.Errorf("a's Ready condition %+v, want False for a lost agent", c)
	}
	f.mustSync()
	f.expectWrites()
}

func TestNotReadyInstanceTakesNoTenant(t *testing.T) {
	notReady := func(in *managedv1alpha1.ArgoCDInstance) { in.Status.Conditions[0].Status = metav1.ConditionFalse }
	f := newFixture(t, nil, instance("a", 5, notReady), instance("b", 5), deployment("t1"))
	f.mustSync()
	f.expectPlaced("t1=b")
}

func TestRequeuesWhenAHeartbeatGoesStale(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5, heartbeat(HeartbeatTimeout-50*time.Millisecond)))
	f.mustSync()
	f.expectWrites()
	controllertest.Eventually(t, f.ctx, "the key queued when a's heartbeat goes stale", func() bool { return f.c.Queue.Len() == 1 })
}

func TestDrainingMovesUnpinnedTenants(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5, draining), instance("b", 5),
		placement("t1", "a"), placement("t2", "a", pinnedByAdmin), deployment("t1"), deployment("t2"))
	f.mustSync()
	f.expectPlaced("t1=b", "t2=a")
	f.expectWrites("update tenantplacements t1")
	f.expectEvents("Normal Moved moved from Argo CD instance a to b (Draining)")
	// The hand-over is the agents': the holder is left as it was.
	if p := f.placements()["t1"]; p.Status.Instance != "a" || p.Spec.Pinned {
		t.Errorf("t1 after the move: %+v %+v", p.Spec, p.Status)
	}

	f.mustSync()
	f.expectWrites()
}

func TestNoRoomThenRoom(t *testing.T) {
	f := newFixture(t, nil, instance("a", 1), placement("t0", "a"), deployment("t0"), deployment("t1"))
	f.mustSync()
	f.expectPlaced("t0=a", "t1=")
	f.expectWrites("create tenantplacements t1", "update tenantplacements/status t1")
	if msg := f.placements()["t1"].Status.Message; !strings.HasPrefix(msg, "no Argo CD instance has room: ") {
		t.Errorf("message %q", msg)
	}
	f.expectEvents()

	f.mustSync()
	f.expectWrites()

	if _, err := f.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Create(f.ctx, instance("b", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	f.expectPlaced("t0=a", "t1=b")
	f.expectWrites("update tenantplacements t1", "update tenantplacements/status t1")
	if p := f.placements()["t1"]; p.Status.Message != "" || p.Status.Instance != "" {
		t.Errorf("t1 status %+v, want no message and no holder yet", p.Status)
	}
	f.expectEvents("Normal Placed placed on Argo CD instance b (Unplaced)")

	f.mustSync()
	f.expectWrites()
}

// Without ArgoCDInstances the service is no fleet: its one agent serves every namespace, and
// nothing is placed.
func TestNoFleetPlacesNothing(t *testing.T) {
	f := newFixture(t, nil, deployment("t1"))
	f.mustSync()
	f.expectPlaced()
	f.expectWrites()
}

func TestStuckOnADrainingInstance(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5, draining), placement("t1", "a"), deployment("t1"))
	f.mustSync()
	f.expectPlaced("t1=a")
	f.expectWrites("update tenantplacements/status t1")
	if p := f.placements()["t1"]; p.Status.Instance != "a" || !strings.Contains(p.Status.Message, "draining instance a") {
		t.Errorf("t1 status %+v", p.Status)
	}
	f.mustSync()
	f.expectWrites()
}

func TestStaleMessages(t *testing.T) {
	waiting := "released by instance b; waiting for instance a to take it"
	f := newFixture(t, nil, instance("a", 5),
		placement("held", "a", status("a", "an old story")), deployment("held"),
		placement("moving", "a", status("", waiting)), deployment("moving"))
	f.mustSync()
	// A hand-over under way is the agents' to explain.
	f.expectWrites("update tenantplacements/status held")
	ps := f.placements()
	if ps["held"].Status.Message != "" || ps["held"].Status.Instance != "a" || ps["moving"].Status.Message != waiting {
		t.Errorf("held %+v, moving %+v", ps["held"].Status, ps["moving"].Status)
	}
}

func TestGarbage(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("kept")}, instance("a", 5), placement("gone", "a"), placement("kept", "a"))
	f.mustSync()
	f.expectPlaced("kept=a")
	f.expectWrites("delete tenantplacements gone")
	var deleted clienttesting.DeleteAction
	for _, a := range f.gitops.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			deleted = d
		}
	}
	if uid := deleted.GetDeleteOptions().Preconditions; uid == nil || uid.UID == nil || *uid.UID != "uid-gone" {
		t.Errorf("delete without the UID precondition: %+v", deleted.GetDeleteOptions())
	}

	f.mustSync()
	f.expectWrites()
}

func TestConflictDoesNotStopOtherMoves(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5, draining), instance("b", 5),
		placement("t1", "a"), placement("t2", "a"), deployment("t1"), deployment("t2"))
	f.gitops.PrependReactor("update", "tenantplacements", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" && objectName(a.(clienttesting.UpdateAction).GetObject()) == "t1" {
			return true, nil, apierrors.NewConflict(managedv1alpha1.Resource("tenantplacements"), "t1", errors.New("changed"))
		}
		return false, nil, nil
	})
	err := f.sync()
	if !apierrors.IsConflict(err) {
		t.Errorf("sync: %v, want a conflict", err)
	}
	f.expectPlaced("t1=a", "t2=b")
	f.expectEvents("Normal Moved moved from Argo CD instance a to b (Draining)")
}

func TestRun(t *testing.T) {
	f := newFixture(t, nil, instance("a", 5), deployment("t1"))
	go f.c.Run(f.ctx, 1)
	controllertest.Eventually(t, f.ctx, "t1 placed", func() bool { return slices.Equal(f.placedOn(), []string{"t1=a"}) })
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments("t2").Create(f.ctx, deployment("t2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Its namespace reaches the cache after its first object: that is what places it.
	if _, err := f.kube.CoreV1().Namespaces().Create(f.ctx, namespace("t2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "t2 placed", func() bool { return slices.Equal(f.placedOn(), []string{"t1=a", "t2=a"}) })
}

// A tenant whose namespace the cache does not have yet is not placed: it would count as its
// own owner, whatever its labels say.
func TestWaitsForTheNamespace(t *testing.T) {
	f := newFixture(t, []runtime.Object{namespace("t1")}, instance("a", 5), deployment("t1"))
	if err := f.kube.CoreV1().Namespaces().Delete(f.ctx, "t1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	f.expectPlaced()
	f.expectWrites()
}

func ownedBy(name, owner string) *corev1.Namespace {
	ns := namespace(name)
	ns.Labels = map[string]string{managedv1alpha1.LabelTenantOwner: owner}
	return ns
}

// provisioned is a namespace the namespace provisioner made for a claim in claimNamespace.
func provisioned(name, claimNamespace string) *corev1.Namespace {
	ns := namespace(name)
	ns.Labels = map[string]string{appstudiov1alpha1.LabelProvisionedTarget: "dt", appstudiov1alpha1.LabelProvisionedClaimNamespace: claimNamespace}
	return ns
}

// One owner's namespaces take half of each instance and no more; the next is stuck with a
// message naming the owner and the share, while another owner's tenant is still placed.
func TestOwnerShare(t *testing.T) {
	f := newFixtureWithShare(t, 0.5, []runtime.Object{ownedBy("o1", "acme"), ownedBy("o2", "acme"), provisioned("o3", "o1"), namespace("x")},
		instance("a", 2), instance("b", 2), deployment("o1"), deployment("o2"), deployment("o3"), deployment("x"))
	f.mustSync()
	f.expectPlaced("o1=a", "o2=b", "o3=", "x=a")
	want := `no Argo CD instance has room for owner "acme": it holds its share (50% of each instance's capacity, ` +
		`--placement-max-owner-share) of every instance with room; the tenant waits to be placed`
	if msg := f.placements()["o3"].Status.Message; msg != want {
		t.Errorf("o3's message %q, want %q", msg, want)
	}
	f.mustSync()
	f.expectWrites()

	// The owner's label taken off its first namespace, o1 is its own owner, and so is o3, made
	// for a claim in o1: it finds room.
	ns, err := f.kube.CoreV1().Namespaces().Get(f.ctx, "o1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = nil
	if _, err := f.kube.CoreV1().Namespaces().Update(f.ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the label change cached", func() bool {
		n, _ := f.c.namespaces.Get("o1")
		return n != nil && len(n.Labels) == 0
	})
	f.mustSync()
	f.expectPlaced("o1=a", "o2=b", "o3=b", "x=a")
	if msg := f.placements()["o3"].Status.Message; msg != "" {
		t.Errorf("o3's message %q after it was placed", msg)
	}
}
