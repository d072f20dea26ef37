//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apiserver"
	gitopsapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

func newSnapshot(name string) *appstudiov1alpha1.Snapshot {
	return &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appstudiov1alpha1.SnapshotSpec{
			Application: "paged",
			Components:  []appstudiov1alpha1.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v1"}},
		},
	}
}

func newDeployment(name string) *gitopsv1alpha1.GitOpsDeployment {
	return &gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: placeholderRepo, Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
}

var _ = Describe("client-go", func() {
	It("sees adds, updates and deletes in order through a generated informer", func(ctx context.Context) {
		ns := "e2e-informer"
		createNamespace(ctx, ns)
		factory := externalversions.NewSharedInformerFactoryWithOptions(gitops, 0, externalversions.WithNamespace(ns))
		informer := factory.ManagedGitops().V1alpha1().GitOpsDeployments().Informer()
		var mu sync.Mutex
		var events []string
		_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, "add "+obj.(*gitopsv1alpha1.GitOpsDeployment).Spec.Source.Path)
			},
			UpdateFunc: func(_, obj interface{}) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, "update "+obj.(*gitopsv1alpha1.GitOpsDeployment).Spec.Source.Path)
			},
			DeleteFunc: func(obj interface{}) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, "delete")
			},
		})
		Expect(err).NotTo(HaveOccurred())
		stop := make(chan struct{})
		defer close(stop)
		factory.Start(stop)
		Expect(cache.WaitForCacheSync(stop, informer.HasSynced)).To(BeTrue())

		client := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
		d, err := client.Create(ctx, newDeployment("watched"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i := 1; i <= 3; i++ {
			d.Spec.Source.Path = fmt.Sprintf("deploy/%d", i)
			d, err = client.Update(ctx, d, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(client.Delete(ctx, "watched", metav1.DeleteOptions{})).To(Succeed())

		want := []string{"add deploy", "update deploy/1", "update deploy/2", "update deploy/3", "delete"}
		Eventually(func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), events...)
		}).WithTimeout(30 * time.Second).Should(Equal(want))
	})

	It("server-side applies a generated apply configuration through the aggregation layer", func(ctx context.Context) {
		client := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(tenantA)
		config := gitopsapply.GitOpsDeployment("applied", tenantA).
			WithLabels(map[string]string{"owner": "e2e"}).
			WithSpec(gitopsapply.GitOpsDeploymentSpec().
				WithSource(gitopsapply.ApplicationSource().WithRepoURL(placeholderRepo).WithPath("deploy")).
				WithType(gitopsv1alpha1.GitOpsDeploymentSpecTypeManual))
		d, err := client.Apply(ctx, config, metav1.ApplyOptions{FieldManager: "e2e-client"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { deleteDeploymentAndWait(ctx, tenantA, "applied") })
		Expect(d.Spec.Type).To(Equal(gitopsv1alpha1.GitOpsDeploymentSpecTypeManual))

		// A second manager taking spec.type conflicts unless it forces.
		other := gitopsapply.GitOpsDeployment("applied", tenantA).
			WithSpec(gitopsapply.GitOpsDeploymentSpec().WithType(gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated))
		_, err = client.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "someone-else"})
		Expect(err).To(MatchError(ContainSubstring("conflict")))
	})

	It("pages through 1,000 objects with kubectl --chunk-size", func(ctx context.Context) {
		// Snapshots, which no controller acts on: 1,000 GitOpsDeployments would give the agent and
		// Argo CD 1,000 Applications to work through while the rest of the suite runs.
		ns := "e2e-paging"
		createNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			Expect(gitops.AppStudioV1alpha1().Snapshots(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		})
		client := gitops.AppStudioV1alpha1().Snapshots(ns)
		names := make(chan string)
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for name := range names {
					_, err := client.Create(ctx, newSnapshot(name), metav1.CreateOptions{})
					errs <- err
				}
			}()
		}
		for i := 0; i < 1000; i++ {
			names <- fmt.Sprintf("paged-%04d", i)
		}
		close(names)
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}

		out := must("admin", "get", "snapshots", "-n", ns, "--chunk-size=150", "--no-headers")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(1000))
		Expect(lines[0]).To(HavePrefix("paged-0000 "))
		Expect(lines[999]).To(HavePrefix("paged-0999 "))

		list, err := client.List(ctx, metav1.ListOptions{Limit: 400})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(400))
		Expect(list.Continue).NotTo(BeEmpty())
		Expect(*list.RemainingItemCount).To(Equal(int64(600)))
	})

	It("loses nothing when gitops-apiserver is killed and restarted", func(ctx context.Context) {
		// Snapshots, which nothing in the stack writes: every change in the namespace is the
		// spec's own, so the watch's history can be checked against the writes one for one.
		ns := "e2e-restart"
		createNamespace(ctx, ns)
		client := gitops.AppStudioV1alpha1().Snapshots(ns)
		Expect(client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		})
		window := compactionWindow()

		initial, err := client.List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		// Every RV the watch will ever deliver was committed after this instant.
		watchStart := time.Now()
		hist := followSnapshots(watchCtx, client, initial.ResourceVersion)

		stop := make(chan struct{})
		writers := make([]*snapshotWriter, 4)
		var wg sync.WaitGroup
		for i := range writers {
			writers[i] = &snapshotWriter{client: client, names: []string{
				fmt.Sprintf("w%d-a", i), fmt.Sprintf("w%d-b", i), fmt.Sprintf("w%d-c", i),
			}}
			wg.Add(1)
			go func(w *snapshotWriter) {
				defer GinkgoRecover()
				defer wg.Done()
				w.run(ctx, stop)
			}(writers[i])
		}
		stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer stopWriters()
		// ackedAtLeast waits until every writer has n more acknowledged writes than in base.
		ackedAtLeast := func(base []int64, n int64) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				for i, w := range writers {
					g.Expect(w.acked.Load()).To(BeNumerically(">=", base[i]+n), "writer %d", i)
				}
			}).WithTimeout(time.Minute).WithPolling(10 * time.Millisecond).Should(Succeed())
		}
		acked := func() []int64 {
			var n []int64
			for _, w := range writers {
				n = append(n, w.acked.Load())
			}
			return n
		}

		By("killing gitops-apiserver while the writers keep writing")
		ackedAtLeast(make([]int64, len(writers)), 20)
		killedAt := time.Now()
		DeferCleanup(restartIfKilled, "gitops-apiserver")
		killStackProcess("gitops-apiserver")
		startStackProcess("gitops-apiserver")
		ackedAtLeast(acked(), 20)
		stopWriters()

		var writes []snapshotWrite
		for _, w := range writers {
			writes = append(writes, w.writes...)
		}
		inFlight, ambiguous := 0, 0
		for _, w := range writes {
			if w.start.Before(killedAt) && w.end.After(killedAt) {
				inFlight++
			}
			if w.err != nil {
				ambiguous++
			}
		}
		Expect(inFlight).To(BeNumerically(">", 0), "no write was in flight when gitops-apiserver was killed")

		By("finding every acknowledged write in the final state")
		final, err := client.List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		finalState := map[string]snapshotVersion{}
		for _, s := range final.Items {
			finalState[s.Name] = versionOf(&s)
		}
		unwritten := maps.Clone(finalState)
		for _, w := range writers {
			for _, name := range w.names {
				// A write after the object's last acknowledged one may or may not have landed;
				// anything older must have been overwritten by that acknowledged one.
				var allowed []string
				var last *snapshotWrite
				for i := range w.writes {
					wr := &w.writes[i]
					switch {
					case wr.name != name:
					case wr.err == nil:
						last, allowed = wr, []string{wr.content}
					default:
						allowed = append(allowed, wr.content)
					}
				}
				got, ok := finalState[name]
				if last != nil {
					Expect(ok).To(BeTrue(), "%s, acknowledged at RV %s, is gone", name, last.rv)
					Expect(rvNumber(got.rv)).To(BeNumerically(">=", rvNumber(last.rv)), "%s went back in time", name)
				}
				if ok {
					Expect(allowed).To(ContainElement(got.content), "%s holds a write that was overwritten", name)
				}
				delete(unwritten, name)
			}
		}
		Expect(unwritten).To(BeEmpty(), "objects no writer wrote")

		By("replaying the watch, resumed after the restart, into the final state")
		Eventually(func(g Gomega) {
			events, gone, _ := hist.result()
			if gone != nil {
				return
			}
			g.Expect(replay(initial.Items, events)).To(Equal(finalState))
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		stopWatch()
		events, gone, resumes := hist.wait()
		if gone != nil {
			Expect(gone.at.Sub(watchStart)).To(BeNumerically(">", window),
				"410 Gone resuming from RV %s %v after the watch began: with a compaction window of %v, none of its RVs can have been compacted",
				gone.rv, gone.at.Sub(watchStart).Round(time.Millisecond), window)
			Skip(fmt.Sprintf("the spec outlived the compaction window (%v): the watch's history may have been compacted", window))
		}
		Expect(resumes).To(BeNumerically(">", 0), "the watch never broke: was gitops-apiserver killed?")
		for i := 1; i < len(events); i++ {
			Expect(rvNumber(events[i].rv)).To(BeNumerically(">", rvNumber(events[i-1].rv)),
				"event %d (%+v) is not newer than the one before (%+v)", i, events[i], events[i-1])
		}
		seen := map[snapshotEvent]bool{}
		for _, e := range events {
			seen[e] = true
		}
		var missing []snapshotEvent
		for _, w := range writes {
			e := snapshotEvent{typ: w.typ, snapshotVersion: snapshotVersion{name: w.name, rv: w.rv, content: w.content}}
			if w.err == nil && !seen[e] {
				missing = append(missing, e)
			}
		}
		Expect(missing).To(BeEmpty(), "acknowledged writes the watch did not deliver")

		By("finding every committed write in the audit trail, and no entry of a write that did not commit")
		// The watch delivered every committed write, acknowledged or not (above): the trail of the
		// namespace's Snapshots since the watch began must be exactly that history.
		trail, err := gitops.ManagedGitopsV1alpha1().AuditEntries(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "object.resource=snapshots"})
		Expect(err).NotTo(HaveOccurred())
		recorded := map[string]string{}
		for _, e := range trail.Items {
			if rvNumber(e.Object.ResourceVersion) > rvNumber(initial.ResourceVersion) {
				recorded[e.Object.ResourceVersion] = e.Object.Name
			}
		}
		committed := map[string]string{}
		for _, e := range events {
			committed[e.rv] = e.name
		}
		Expect(recorded).To(Equal(committed), "audit entries (RV: name) against the writes the watch delivered")
		GinkgoWriter.Printf("%d writes (%d in flight at the kill, %d failed), %d events and audit entries, the watch resumed %d times\n",
			len(writes), inFlight, ambiguous, len(events), resumes)
	})
})

// snapshotVersion is what a write made of a Snapshot: its RV and the description the spec
// writes into it.
type snapshotVersion struct {
	name, rv, content string
}

func versionOf(s *appstudiov1alpha1.Snapshot) snapshotVersion {
	return snapshotVersion{name: s.Name, rv: s.ResourceVersion, content: s.Spec.DisplayDescription}
}

// snapshotWrite is one create or update: acknowledged (err nil, with the RV it got) or
// ambiguous (it may or may not have been applied).
type snapshotWrite struct {
	typ        watch.EventType
	name       string
	content    string
	rv         string
	err        error
	start, end time.Time
}

// snapshotWriter keeps creating and updating its own Snapshots, one request at a time.
type snapshotWriter struct {
	client interface {
		Create(context.Context, *appstudiov1alpha1.Snapshot, metav1.CreateOptions) (*appstudiov1alpha1.Snapshot, error)
		Update(context.Context, *appstudiov1alpha1.Snapshot, metav1.UpdateOptions) (*appstudiov1alpha1.Snapshot, error)
		Get(context.Context, string, metav1.GetOptions) (*appstudiov1alpha1.Snapshot, error)
	}
	names  []string
	writes []snapshotWrite
	acked  atomic.Int64
}

func (w *snapshotWriter) run(ctx context.Context, stop <-chan struct{}) {
	type object struct {
		known bool                        // whether cur is what the server has
		cur   *appstudiov1alpha1.Snapshot // nil: not created
	}
	objects := make([]object, len(w.names))
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		o := &objects[i%len(w.names)]
		name := w.names[i%len(w.names)]
		if !o.known {
			// After an ambiguous write, write on top of whatever the server has.
			cur, err := w.client.Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				o.known, o.cur = true, nil
			case err == nil:
				o.known, o.cur = true, cur
			default:
				pause(stop)
				continue
			}
		}
		wr := snapshotWrite{name: name, content: fmt.Sprintf("%s #%d", name, i), start: time.Now()}
		var got *appstudiov1alpha1.Snapshot
		if o.cur == nil {
			wr.typ = watch.Added
			s := newSnapshot(name)
			s.Spec.DisplayDescription = wr.content
			got, wr.err = w.client.Create(ctx, s, metav1.CreateOptions{})
		} else {
			wr.typ = watch.Modified
			s := o.cur.DeepCopy()
			s.Spec.DisplayDescription = wr.content
			got, wr.err = w.client.Update(ctx, s, metav1.UpdateOptions{})
		}
		wr.end = time.Now()
		if wr.err == nil {
			wr.rv, o.cur = got.ResourceVersion, got
			w.acked.Add(1)
		} else {
			o.known = false
		}
		w.writes = append(w.writes, wr)
		if wr.err != nil {
			pause(stop)
		}
	}
}

// pause spaces the retries of a writer while the server is down.
func pause(stop <-chan struct{}) {
	select {
	case <-stop:
	case <-time.After(50 * time.Millisecond):
	}
}

type snapshotEvent struct {
	typ watch.EventType
	snapshotVersion
}

type goneAt struct {
	rv string
	at time.Time
}

// snapshotHistory is what followSnapshots received.
type snapshotHistory struct {
	mu      sync.Mutex
	events  []snapshotEvent
	gone    *goneAt
	resumes int
	done    chan struct{}
}

func (h *snapshotHistory) result() ([]snapshotEvent, *goneAt, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]snapshotEvent(nil), h.events...), h.gone, h.resumes
}

// wait waits for followSnapshots to return, once its context is done.
func (h *snapshotHistory) wait() ([]snapshotEvent, *goneAt, int) {
	<-h.done
	return h.result()
}

// followSnapshots watches the Snapshots of client from rv on, as a reflector does, but never
// relists: when the stream breaks, it watches again from the last RV it received. It stops at
// a 410 Gone, or when ctx is done.
func followSnapshots(ctx context.Context, client interface {
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}, rv string) *snapshotHistory {
	h := &snapshotHistory{done: make(chan struct{})}
	gone := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.gone = &goneAt{rv: rv, at: time.Now()}
	}
	go func() {
		defer GinkgoRecover()
		defer close(h.done)
		for first := true; ctx.Err() == nil; {
			w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				gone()
				return
			}
			if err != nil {
				// gitops-apiserver is down: kube-apiserver answers 503 until it is back.
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if !first {
				h.mu.Lock()
				h.resumes++
				h.mu.Unlock()
			}
			first = false
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					err := apierrors.FromObject(ev.Object)
					if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
						w.Stop()
						gone()
						return
					}
					if ctx.Err() == nil {
						GinkgoWriter.Printf("the watch broke after RV %s: %v\n", rv, err)
					}
					break
				}
				s, ok := ev.Object.(*appstudiov1alpha1.Snapshot)
				if !ok {
					continue // a bookmark, which this watch does not ask for
				}
				h.mu.Lock()
				h.events = append(h.events, snapshotEvent{typ: ev.Type, snapshotVersion: versionOf(s)})
				h.mu.Unlock()
				rv = s.ResourceVersion
			}
			w.Stop()
		}
	}()
	return h
}

// replay applies events to the objects a list returned, by name.
func replay(items []appstudiov1alpha1.Snapshot, events []snapshotEvent) map[string]snapshotVersion {
	state := map[string]snapshotVersion{}
	for i := range items {
		state[items[i].Name] = versionOf(&items[i])
	}
	for _, e := range events {
		if e.typ == watch.Deleted {
			delete(state, e.name)
		} else {
			state[e.name] = e.snapshotVersion
		}
	}
	return state
}

// rvNumber is a resourceVersion of gitops-apiserver, which are PostgreSQL sequence numbers.
func rvNumber(rv string) int64 {
	GinkgoHelper()
	n, err := strconv.ParseInt(rv, 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// compactionWindow is how long the stack's gitops-apiserver keeps change history: its
// --postgres-compaction-window, read from its command line with its own flags (and so their
// defaults).
func compactionWindow() time.Duration {
	GinkgoHelper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", stackPID("gitops-apiserver")))
	Expect(err).NotTo(HaveOccurred())
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	fs := pflag.NewFlagSet("gitops-apiserver", pflag.ContinueOnError)
	apiserver.NewOptions(io.Discard, io.Discard).AddFlags(fs)
	Expect(fs.Parse(args[1:])).To(Succeed())
	window, err := time.ParseDuration(fs.Lookup("postgres-compaction-window").Value.String())
	Expect(err).NotTo(HaveOccurred())
	return window
}
