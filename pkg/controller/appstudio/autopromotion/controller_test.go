package autopromotion

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

func environment(name string, strategy appstudiov1alpha1.DeploymentStrategyType, parent string) *appstudiov1alpha1.Environment {
	return &appstudiov1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec:       appstudiov1alpha1.EnvironmentSpec{DeploymentStrategy: strategy, ParentEnvironment: parent},
	}
}

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
	if f.c, err = New(appstudio.Snapshots(), appstudio.Environments(), appstudio.PromotionRuns(), f.gitops, f.events); err != nil {
		t.Fatal(err)
	}
	controllertest.StartInformers(t, ctx, factory)
	return f
}

func (f *fixture) sync(key string) {
	f.t.Helper()
	if err := f.c.sync(f.ctx, key); err != nil {
		f.t.Fatalf("sync %s: %v", key, err)
	}
}

// runs are the names of the namespace's PromotionRuns, read from the API, not the cache.
func (f *fixture) runs() map[string]bool {
	f.t.Helper()
	list, err := f.gitops.AppStudioV1alpha1().PromotionRuns("team").List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range list.Items {
		out[r.Name] = true
	}
	return out
}

func TestANewSnapshotStartsAtTheRoots(t *testing.T) {
	f := newFixture(t,
		environment("dev", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, ""),
		environment("staging", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "dev"),
		environment("sandbox", appstudiov1alpha1.DeploymentStrategyManual, ""),
		snapshot("s1", 0))
	f.sync("team/s1")
	if got := f.runs(); len(got) != 1 || !got["s1.dev-auto"] {
		t.Fatalf("runs = %v, want s1.dev-auto alone", got)
	}
	run, _ := f.gitops.AppStudioV1alpha1().PromotionRuns("team").Get(f.ctx, "s1.dev-auto", metav1.GetOptions{})
	if run.Spec.AutomatedPromotion.InitialEnvironment != "dev" || run.Spec.Snapshot != "s1" {
		t.Errorf("run spec = %+v", run.Spec)
	}
	controllertest.ExpectEvents(t, f.events, "Normal AutomatedPromotionStarted Promoting Snapshot s1 automatically from Environment dev: PromotionRun s1.dev-auto")

	// Again, once the cache has the run: nothing more.
	controllertest.Eventually(t, f.ctx, "the run in the cache", func() bool {
		_, err := f.c.runs.PromotionRuns("team").Get("s1.dev-auto")
		return err == nil
	})
	f.sync("team/s1")
	if got := f.runs(); len(got) != 1 {
		t.Fatalf("runs = %v after a second pass", got)
	}
}

func TestDeletingTheNewestSnapshotPromotesNoOlderOne(t *testing.T) {
	f := newFixture(t, environment("dev", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, ""),
		snapshot("s1", 0), snapshot("s2", time.Second))
	f.sync("team/s1")
	f.sync("team/s2")
	if got := f.runs(); len(got) != 1 || !got["s2.dev-auto"] {
		t.Fatalf("runs = %v, want the newest's alone", got)
	}
	if err := f.gitops.AppStudioV1alpha1().Snapshots("team").Delete(f.ctx, "s2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "s2 out of the cache and its run in", func() bool {
		_, gone := f.c.snapshots.Snapshots("team").Get("s2")
		_, run := f.c.runs.PromotionRuns("team").Get("s2.dev-auto")
		return gone != nil && run == nil
	})
	f.sync("team/s1")
	if got := f.runs(); got["s1.dev-auto"] {
		t.Fatalf("the older Snapshot was promoted after the newest was deleted: %v", got)
	}
}

// What the informer lists at start is promoted only if it is recent: an upgrade or a restart
// sends no old Snapshot to production.
func TestSnapshotsListedAtStart(t *testing.T) {
	old, recent := snapshot("old", 0), snapshot("recent", 0)
	recent.CreationTimestamp = metav1.Now()
	f := newFixture(t, environment("dev", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, ""), old, recent)
	queued := controllertest.Drain(t, f.ctx, f.c.Controller)
	if len(queued) != 1 || queued[0] != "team/recent" {
		t.Fatalf("queued %v, want team/recent alone", queued)
	}
	// A Snapshot created afterwards is new, whatever its age says.
	late := snapshot("late", 0)
	if _, err := f.gitops.AppStudioV1alpha1().Snapshots("team").Create(f.ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the new Snapshot queued", func() bool { return f.c.Queue.Len() == 1 })
}

// A Snapshot whose sync ran before the cache had its Environments (the informers relist one
// by one after gitops-apiserver restarts) is promoted once they arrive; an Environment created
// after a Snapshot, or a Snapshot long past, is not sent on its way.
func TestEnvironmentsLearntLateStillPromote(t *testing.T) {
	now := metav1.Now()
	envCreated := metav1.NewTime(now.Add(-2 * time.Second))
	s1 := snapshot("s1", 0)
	s1.CreationTimestamp = now
	f := newFixture(t, s1)
	controllertest.Drain(t, f.ctx, f.c.Controller)
	f.sync("team/s1")
	if got := f.runs(); len(got) != 0 {
		t.Fatalf("runs = %v without a graph", got)
	}

	dev := environment("dev", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "")
	dev.CreationTimestamp = envCreated
	if _, err := f.gitops.AppStudioV1alpha1().Environments("team").Create(f.ctx, dev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the Snapshot queued again", func() bool { return f.c.Queue.Len() == 1 })
	if queued := controllertest.Drain(t, f.ctx, f.c.Controller); len(queued) != 1 || queued[0] != "team/s1" {
		t.Fatalf("queued %v, want team/s1", queued)
	}
	f.sync("team/s1")
	if got := f.runs(); len(got) != 1 || !got["s1.dev-auto"] {
		t.Fatalf("runs = %v, want s1.dev-auto", got)
	}

	// An Environment made after the Snapshot does not queue it.
	later := environment("later", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "")
	later.CreationTimestamp = metav1.NewTime(now.Add(time.Second))
	if _, err := f.gitops.AppStudioV1alpha1().Environments("team").Create(f.ctx, later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, f.ctx, "the later Environment in the cache", func() bool {
		_, err := f.c.environments.Environments("team").Get("later")
		return err == nil
	})
	if n := f.c.Queue.Len(); n != 0 {
		t.Fatalf("%d keys queued by an Environment made after the Snapshot", n)
	}
}

func TestARunNameTakenIsTold(t *testing.T) {
	f := newFixture(t, environment("dev", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, ""), snapshot("s1", 0),
		&appstudiov1alpha1.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: RunName("s1", "dev"), Namespace: "team"}})
	f.sync("team/s1")
	controllertest.ExpectEvents(t, f.events,
		"Warning RunNameTaken PromotionRun s1.dev-auto, which would promote Snapshot s1 automatically from Environment dev, exists and is not that promotion")
}
