package snapshotenvironmentbinding

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
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
	events *record.FakeRecorder
	c      *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(objs...), events: record.NewFakeRecorder(100)}
	informers := externalversions.NewSharedInformerFactory(f.gitops, 0)
	appstudio := informers.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.SnapshotEnvironmentBindings(), appstudio.Applications(), appstudio.Environments(),
		appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(), informers.ManagedGitops().V1alpha1().GitOpsDeployments(),
		f.gitops, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return now.Time }
	controllertest.StartInformers(t, ctx, informers)
	return f
}

// eventually waits for cond, which reads the caches.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	controllertest.Eventually(f.t, f.ctx, what, cond)
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.sync(f.ctx, ns+"/seb"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) binding() *appstudiov1alpha1.SnapshotEnvironmentBinding {
	f.t.Helper()
	b, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(f.ctx, "seb", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// deployments are the GitOpsDeployments in the API, by name.
func (f *fixture) deployments() map[string]*managedv1alpha1.GitOpsDeployment {
	f.t.Helper()
	list, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*managedv1alpha1.GitOpsDeployment{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// awaitCaches waits for the caches to show the binding and GitOpsDeployments as the API has
// them.
func (f *fixture) awaitCaches() {
	f.t.Helper()
	want := f.deployments()
	b := f.binding()
	f.eventually("the caches", func() bool {
		cached, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get("seb")
		if err != nil || cached.ResourceVersion != b.ResourceVersion || len(cached.Status.BindingConditions) != len(b.Status.BindingConditions) ||
			len(cached.Status.GitOpsDeployments) != len(b.Status.GitOpsDeployments) || len(cached.Status.Components) != len(b.Status.Components) {
			return false
		}
		list, _ := f.c.deployments.GitOpsDeployments(ns).List(labels.Everything())
		if len(list) != len(want) {
			return false
		}
		for _, d := range list {
			w := want[d.Name]
			if w == nil || w.ResourceVersion != d.ResourceVersion || w.Spec != d.Spec || w.Status.Sync != d.Status.Sync ||
				w.Status.Health != d.Status.Health {
				return false
			}
		}
		return true
	})
}

// expectEvents checks the Events recorded since the last call.
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

func names(m map[string]*managedv1alpha1.GitOpsDeployment) string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestBindingLifecycle(t *testing.T) {
	f := newFixture(t, binding(), application(), env(withCredentials("prod-ns")))
	step := t.Log

	step("a GitOpsDeployment per component, controlled by the binding, deploying to the Environment's cluster")
	f.sync()
	got := f.deployments()
	if names(got) != "seb-app-staging-a,seb-app-staging-b" {
		t.Fatalf("GitOpsDeployments %s", names(got))
	}
	a := got["seb-app-staging-a"]
	if r := a.OwnerReferences; len(r) != 1 || !reflect.DeepEqual(r[0], ownerOf(binding())) {
		t.Errorf("owners %+v", r)
	}
	if d := a.Spec.Destination; d.Environment != "managed-environment-staging" || d.Namespace != "prod-ns" {
		t.Errorf("destination %+v", d)
	}
	if a.Spec.Source.Path != "components/a/overlays/staging" || a.Spec.Type != managedv1alpha1.GitOpsDeploymentSpecTypeAutomated ||
		a.Labels["appstudio.openshift.io/component"] != "a" {
		t.Errorf("GitOpsDeployment %+v", a)
	}
	st := f.binding().Status
	if len(st.GitOpsDeployments) != 2 || st.GitOpsDeployments[0].ComponentName != "a" || st.GitOpsDeployments[1].GitOpsDeployment != "seb-app-staging-b" {
		t.Errorf("status.gitopsDeployments %+v", st.GitOpsDeployments)
	}
	if c := meta.FindStatusCondition(st.ComponentDeploymentConditions, "AllComponentsDeployed"); c == nil || c.Status != metav1.ConditionFalse ||
		c.Message != "0 of 2 components deployed" {
		t.Errorf("AllComponentsDeployed %+v", c)
	}
	if c := meta.FindStatusCondition(st.BindingConditions, "Reconciled"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciled %+v", c)
	}
	if len(st.Components) != 2 || len(st.GitOpsRepoConditions) != 1 {
		t.Errorf("application-service's status fields lost: %+v", st)
	}
	f.expectEvents(
		"Normal GitOpsDeploymentCreated Created GitOpsDeployment seb-app-staging-a for component a",
		"Normal GitOpsDeploymentCreated Created GitOpsDeployment seb-app-staging-b for component b")

	step("the same again: nothing written")
	f.awaitCaches()
	f.sync()
	f.expectEvents()

	step("Argo CD deploys them: the status follows")
	for _, d := range f.deployments() {
		d.Status.Sync = managedv1alpha1.SyncStatus{Status: managedv1alpha1.SyncStatusCodeSynced, Revision: "abc"}
		d.Status.Health = managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCodeHealthy}
		if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).UpdateStatus(f.ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.awaitCaches()
	f.sync()
	st = f.binding().Status
	if c := meta.FindStatusCondition(st.ComponentDeploymentConditions, "AllComponentsDeployed"); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != "CommitsSynced" || c.Message != "2 of 2 components deployed" {
		t.Errorf("AllComponentsDeployed %+v", c)
	}
	if e := st.GitOpsDeployments[0]; e.SyncStatus != "Synced" || e.Health != "Healthy" || e.CommitID != "abc" {
		t.Errorf("entry %+v", e)
	}

	step("a manual edit is reverted")
	edited := f.deployments()["seb-app-staging-a"]
	edited.Spec.Source.Path = "elsewhere"
	edited.Labels["user"] = "kept"
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Update(f.ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.sync()
	if d := f.deployments()["seb-app-staging-a"]; d.Spec.Source.Path != "components/a/overlays/staging" || d.Labels["user"] != "kept" {
		t.Errorf("after the revert: %+v", d)
	}
	f.expectEvents("Normal GitOpsDeploymentUpdated Updated GitOpsDeployment seb-app-staging-a for component a")

	step("a deleted GitOpsDeployment is created again")
	if err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(f.ctx, "seb-app-staging-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.sync()
	if names(f.deployments()) != "seb-app-staging-a,seb-app-staging-b" {
		t.Errorf("GitOpsDeployments %s", names(f.deployments()))
	}
	f.expectEvents("Normal GitOpsDeploymentCreated Created GitOpsDeployment seb-app-staging-b for component b")

	step("a component no longer reported: its GitOpsDeployment goes")
	f.awaitCaches()
	b := f.binding()
	b.Status.Components = b.Status.Components[1:] // b, reported first
	if _, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).UpdateStatus(f.ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitCaches()
	f.sync()
	if names(f.deployments()) != "seb-app-staging-a" {
		t.Errorf("GitOpsDeployments %s", names(f.deployments()))
	}
	if c := meta.FindStatusCondition(f.binding().Status.ComponentDeploymentConditions, "AllComponentsDeployed"); c == nil || c.Message != "1 of 1 components deployed" {
		t.Errorf("AllComponentsDeployed %+v", c)
	}
	f.expectEvents("Normal GitOpsDeploymentDeleted Deleted GitOpsDeployment seb-app-staging-b")

	step("the binding is deleted: its GitOpsDeployments go")
	f.awaitCaches()
	if err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Delete(f.ctx, "seb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the binding gone from the cache", func() bool {
		_, err := f.c.bindings.SnapshotEnvironmentBindings(ns).Get("seb")
		return apierrors.IsNotFound(err)
	})
	f.sync()
	if n := names(f.deployments()); n != "" {
		t.Errorf("GitOpsDeployments %s outlived their binding", n)
	}
	f.expectEvents()
}

func TestProblemIsReportedOnce(t *testing.T) {
	f := newFixture(t, binding(), application(), env(withCredentials("")))
	f.sync()
	conds := f.binding().Status.BindingConditions
	if c := meta.FindStatusCondition(conds, "Reconciled"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ErrorGeneratingGitOpsDeployment" ||
		c.Message != msgMissingTargetNamespace {
		t.Errorf("Reconciled %+v", c)
	}
	if c := meta.FindStatusCondition(conds, "ErrorOccurred"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "ErrorOccurred" {
		t.Errorf("ErrorOccurred %+v", c)
	}
	if n := names(f.deployments()); n != "" {
		t.Errorf("GitOpsDeployments %s made despite the problem", n)
	}
	f.expectEvents("Warning ErrorGeneratingGitOpsDeployment " + msgMissingTargetNamespace)
	f.awaitCaches()
	f.sync()
	f.expectEvents()
}

func TestOrphanRule(t *testing.T) {
	created := metav1.NewTime(now.Add(-orphanGrace))
	young := binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.CreationTimestamp = created })
	f := newFixture(t, young, env())

	// Ten milliseconds before the grace ends, the key comes back then.
	f.c.now = func() time.Time { return now.Add(-10 * time.Millisecond) }
	for f.c.Queue.Len() > 0 { // the adds of the start
		k, _ := f.c.Queue.Get()
		f.c.Queue.Done(k)
		f.c.Queue.Forget(k)
	}
	f.sync()
	f.binding()
	f.eventually("the key requeued once the grace ends", func() bool { return f.c.Queue.Len() == 1 })
	f.expectEvents()

	f.c.now = func() time.Time { return now.Time }
	f.sync()
	if _, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(f.ctx, "seb", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the orphan binding is still there: %v", err)
	}
	f.expectEvents("Normal BindingDeleted Deleted: Application app does not exist")
}

// A cache that lags behind the API deletes neither a binding whose Application it has not
// seen yet nor the GitOpsDeployments of a binding it has not seen yet.
func TestLaggingCacheDeletesNothing(t *testing.T) {
	f := newFixture(t)
	if _, err := f.gitops.AppStudioV1alpha1().Applications(ns).Create(f.ctx, application(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := f.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Create(f.ctx, binding(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(f.ctx, deployment("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.act(f.ctx, state{namespace: ns, name: "seb", binding: b}, plan{deleteBinding: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.c.act(f.ctx, state{namespace: ns, name: "seb"}, plan{delete: []*managedv1alpha1.GitOpsDeployment{d}}); err != nil {
		t.Fatal(err)
	}
	f.binding()
	if names(f.deployments()) != "seb-app-staging-a" {
		t.Error("the GitOpsDeployment of a binding the cache had not seen was deleted")
	}
	f.expectEvents()
}

func TestEventsQueueTheBindingsThatUseThem(t *testing.T) {
	unrelated := binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
		b.Name, b.Spec.Application, b.Spec.Environment = "unrelated", "other-app", "other-env"
	})
	f := newFixture(t, binding(), unrelated, env(withClaim), claim("dt"), target("dt", "", "space"))
	// The handlers are called directly below: once the adds of the start are drained, what
	// the queue holds is what each call queued.
	drain := func() []string { return controllertest.Drain(t, f.ctx, f.c.Controller) }
	drain()
	for _, tc := range []struct {
		name  string
		event func(*Controller)
		want  string
	}{
		{"the Application", func(c *Controller) { c.onApplication(application()) }, ns + "/seb"},
		{"the Environment", func(c *Controller) { c.onEnvironment(env()) }, ns + "/seb"},
		{"the Environment's claim", func(c *Controller) { c.onClaim(claim("dt")) }, ns + "/seb"},
		{"the target the claim names", func(c *Controller) { c.onTarget(target("dt", "", "space")) }, ns + "/seb"},
		{"a target that claims the claim", func(c *Controller) { c.onTarget(target("other", "claim", "")) }, ns + "/seb"},
		{"a target nobody uses", func(c *Controller) { c.onTarget(target("other", "", "")) }, ""},
		{"a GitOpsDeployment the binding controls", func(c *Controller) { c.onDeployment(deployment("a")) }, ns + "/seb"},
		{"a GitOpsDeployment of a binding that is gone", func(c *Controller) {
			c.onDeployment(deployment("a", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences[0].Name = "gone" }))
		}, ns + "/gone"},
		{"a GitOpsDeployment the binding only owns", func(c *Controller) {
			c.onDeployment(deployment("a", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences[0].Controller = nil }))
		}, ""},
		{"a deleted GitOpsDeployment, as a tombstone", func(c *Controller) {
			c.onDeployment(cache.DeletedFinalStateUnknown{Key: ns + "/seb-app-staging-a", Obj: deployment("a")})
		}, ns + "/seb"},
	} {
		tc.event(f.c)
		if got := strings.Join(drain(), ","); got != tc.want {
			t.Errorf("%s queued %q, want %q", tc.name, got, tc.want)
		}
	}

	// Status writes of the GitOpsDeployment controller that the binding does not copy queue
	// nothing. One handler is given its informer's events in order, so a write that queues
	// another binding ("marker") after them is the sync point: once its key is queued, the
	// writes before it have been handled.
	deployments := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
	marker := deployment("m", func(d *managedv1alpha1.GitOpsDeployment) {
		d.OwnerReferences = []metav1.OwnerReference{ownerOf(unrelated)}
	})
	if _, err := deployments.Create(f.ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitMarker := func() []string {
		t.Helper()
		var keys []string
		f.eventually("the marker's binding queued", func() bool {
			keys = append(keys, drain()...)
			return slices.Contains(keys, ns+"/unrelated")
		})
		// A key may come twice: an update queues the binding of the old object and the new.
		slices.Sort(keys)
		return slices.DeleteFunc(slices.Compact(keys), func(k string) bool { return k == ns+"/unrelated" })
	}
	bumpMarker := func() {
		t.Helper()
		if marker.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced {
			marker.Status.Sync.Status = managedv1alpha1.SyncStatusCodeOutOfSync
		} else {
			marker.Status.Sync.Status = managedv1alpha1.SyncStatusCodeSynced
		}
		if _, err := deployments.UpdateStatus(f.ctx, marker, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	awaitMarker() // its own add
	d, err := deployments.Create(f.ctx, deployment("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bumpMarker()
	if got := awaitMarker(); !slices.Equal(got, []string{ns + "/seb"}) {
		t.Fatalf("the create of a GitOpsDeployment queued %v", got)
	}
	d.Status.Resources = []managedv1alpha1.ResourceStatus{{Kind: "Deployment", Name: "a"}}
	if d, err = deployments.UpdateStatus(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bumpMarker()
	if got := awaitMarker(); len(got) != 0 {
		t.Errorf("a status write of resources queued %v", got)
	}
	d.Status.Health.Status = managedv1alpha1.HealthStatusCodeHealthy
	if _, err = deployments.UpdateStatus(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bumpMarker()
	if got := strings.Join(awaitMarker(), ","); got != ns+"/seb" {
		t.Errorf("a change of health queued %q", got)
	}
}
