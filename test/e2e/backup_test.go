//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apiserver"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	appstudiotyped "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/appstudio/v1alpha1"
)

// The "Backup and restore" section of docs/operator-guide.md, run as written against the stack's
// PostgreSQL: its sh blocks are the backup, the restore and the resourceVersion step, in that
// order. gitops-apiserver is stopped between the backup and the restore and started again,
// exactly as hack/local-up.sh started it, as an operator scales the replicas to zero and back.
//
// The whole stack (the agent, and the other specs' objects) shares the database. Specs run one
// at a time, so between the backup and the restore only this spec's writes and the agents'
// status reports happen; the objects of other namespaces that were there at the backup and did
// not change until the restore must come back as they were.
var _ = Describe("backup and restore", func() {
	It("of docs/operator-guide.md keeps every object, and watches from before the restore get 410 Gone and recover by relisting",
		NodeTimeout(15*time.Minute), func(ctx SpecContext) {
			blocks := shellBlocks("../../docs/operator-guide.md")
			Expect(blocks).To(HaveLen(3), "docs/operator-guide.md: the backup, restore and resourceVersion blocks are its only sh blocks")
			backupBlock, restoreBlock, rvBlock := blocks[0], blocks[1], blocks[2]
			Expect(backupBlock).To(ContainSubstring("pg_dump"))
			Expect(restoreBlock).To(ContainSubstring("pg_restore"))
			Expect(rvBlock).To(And(ContainSubstring("UPDATE state"), ContainSubstring("compaction")))

			// Namespace deletions of earlier specs go on in the background. One that ended between
			// the backup and the restore would have its objects brought back by the restore, into a
			// namespace that no longer exists: wait for them to end first. One that does not end
			// (a finalizer held) is still there after the restore, and deletes them again.
			waitForNamespaceDeletions(ctx, 2*time.Minute)

			ns := fmt.Sprintf("e2e-backup-%d", time.Now().UnixNano()%100000)
			createNamespace(ctx, ns)
			snapshots := gitops.AppStudioV1alpha1().Snapshots(ns)
			DeferCleanup(func(ctx context.Context) {
				deleteAllDeployments(ctx, ns)
				for _, err := range []error{
					snapshots.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
					gitops.AppStudioV1alpha1().Environments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
					gitops.AppStudioV1alpha1().Applications(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
				} {
					Expect(err).NotTo(HaveOccurred())
				}
			})

			server := captureStackProcess("gitops-apiserver")
			// Registered after the namespace's cleanup, so it runs before it: whatever fails,
			// the stack gets its gitops-apiserver back.
			DeferCleanup(func(ctx context.Context) {
				if !processAlive(stackPID("gitops-apiserver")) {
					server.start()
					server.waitServing(ctx, ns)
				}
			})
			backupFile := filepath.Join(GinkgoT().TempDir(), "gitops.dump")
			shellEnv := []string{
				"PATH=" + postgresBin() + ":" + os.Getenv("PATH"),
				"GITOPS_PG_DSN=" + server.postgresDSN(),
				"BACKUP=" + backupFile,
				"PGCONNECT_TIMEOUT=10",
			}
			argo := argoclient.NewForConfigOrDie(adminConfig)

			var highest uint64 // the highest resourceVersion this spec saw served before the restore
			saw := func(rv string) {
				GinkgoHelper()
				n, err := strconv.ParseUint(rv, 10, 64)
				Expect(err).NotTo(HaveOccurred(), "resourceVersion %q", rv)
				highest = max(highest, n)
			}

			By("writing objects of several kinds before the backup")
			app, err := gitops.AppStudioV1alpha1().Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
				ObjectMeta: metav1.ObjectMeta{Name: "shop"},
				Spec:       appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop", Description: "before the backup"},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			env, err := gitops.AppStudioV1alpha1().Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
				ObjectMeta: metav1.ObjectMeta{Name: "dev"},
				Spec: appstudiov1alpha1.EnvironmentSpec{
					DisplayName: "Development", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual,
				},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			backedUp := map[string]*appstudiov1alpha1.Snapshot{}
			for i := 1; i <= 3; i++ {
				s := backupSnapshot(fmt.Sprintf("snap-%d", i), "before the backup")
				created, err := snapshots.Create(ctx, s, metav1.CreateOptions{})
				Expect(err).NotTo(HaveOccurred())
				backedUp[created.Name] = created
			}
			web := createDeploymentOfType(ctx, ns, "web", placeholderRepo, "deploy", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
			Eventually(applicationsOf(argo, ns)).WithContext(ctx).WithTimeout(2*time.Minute).
				Should(ConsistOf(argocd.ApplicationName(web.UID)), "the agent deploys web before the backup")

			By("starting an informer and a watch on the namespace's Snapshots")
			informer := startSnapshotInformer(ctx, snapshots)
			initial, err := snapshots.List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			saw(initial.ResourceVersion)
			watcher := startRelistingWatcher(ctx, snapshots, initial)
			restoredState := map[string]string{"snap-1": "before the backup", "snap-2": "before the backup", "snap-3": "before the backup"}
			Eventually(informer.state).Should(Equal(restoredState))

			others := apiObjects(ctx, ns)
			Expect(others).NotTo(BeEmpty(), "the stack holds objects of other namespaces (placements, instances, Operations)")

			By("backing up, as documented")
			runShell(ctx, backupBlock, shellEnv)
			Expect(os.Stat(backupFile)).To(HaveField("Size()", BeNumerically(">", 0)))

			By("writing after the backup: creates, updates and a delete")
			late := createDeploymentOfType(ctx, ns, "late", placeholderRepo, "deploy", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
			saw(late.ResourceVersion)
			created, err := snapshots.Create(ctx, backupSnapshot("snap-4", "after the backup"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			saw(created.ResourceVersion)
			s3 := backedUp["snap-3"].DeepCopy()
			s3.Spec.DisplayDescription = "changed after the backup"
			updated, err := snapshots.Update(ctx, s3, metav1.UpdateOptions{})
			Expect(err).NotTo(HaveOccurred())
			saw(updated.ResourceVersion)
			Expect(snapshots.Delete(ctx, "snap-2", metav1.DeleteOptions{})).To(Succeed())
			Eventually(func(ctx context.Context) error {
				cur, err := gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, "dev", metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Spec.DisplayName = "Development, renamed after the backup"
				got, err := gitops.AppStudioV1alpha1().Environments(ns).Update(ctx, cur, metav1.UpdateOptions{})
				if err == nil {
					saw(got.ResourceVersion)
				}
				return err
			}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
			afterBackup := map[string]string{"snap-1": "before the backup", "snap-3": "changed after the backup", "snap-4": "after the backup"}
			Eventually(watcher.state).WithTimeout(time.Minute).Should(Equal(afterBackup))
			Eventually(informer.state).WithTimeout(time.Minute).Should(Equal(afterBackup))
			Eventually(applicationsOf(argo, ns)).WithContext(ctx).WithTimeout(2*time.Minute).
				Should(ConsistOf(argocd.ApplicationName(web.UID), argocd.ApplicationName(late.UID)), "the agent deploys late")
			oldRV := watcher.resourceVersion()
			saw(oldRV)
			// The objects of the rest of the stack that did not change since the backup; those that
			// did (an instance's heartbeat, say) go back to their backed-up state, which is not checked.
			unchanged := map[string]objectState{}
			for key, now := range apiObjects(ctx, ns) {
				if before, ok := others[key]; ok && before == now {
					unchanged[key] = now
				}
			}
			Expect(unchanged).NotTo(BeEmpty())

			By("stopping gitops-apiserver, as scaling its replicas to zero does")
			server.stop()

			By("restoring and moving the resourceVersion on, as documented")
			// The restore block refuses to run while sessions of the stopped server linger.
			Eventually(func() error { return tryShell(ctx, restoreBlock, shellEnv) }).
				WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			GinkgoWriter.Printf("resourceVersion step:\n%s\n", runShell(ctx, rvBlock, shellEnv))

			By("starting gitops-apiserver again")
			server.start()
			server.waitServing(ctx, ns)

			By("every object of the backup is back as it was, and what came after it is gone")
			for name, want := range backedUp {
				got, err := snapshots.Get(ctx, name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred(), "Snapshot %s", name)
				Expect(got.UID).To(Equal(want.UID), "Snapshot %s", name)
				Expect(got.Spec).To(Equal(want.Spec), "Snapshot %s", name)
				Expect(got.Labels).To(Equal(want.Labels), "Snapshot %s", name)
			}
			gotApp, err := gitops.AppStudioV1alpha1().Applications(ns).Get(ctx, "shop", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(gotApp.UID).To(Equal(app.UID))
			Expect(gotApp.Spec).To(Equal(app.Spec))
			gotEnv, err := gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, "dev", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(gotEnv.UID).To(Equal(env.UID))
			Expect(gotEnv.Spec).To(Equal(env.Spec))
			gotWeb, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(gotWeb.UID).To(Equal(web.UID))
			Expect(gotWeb.Spec).To(Equal(web.Spec))
			_, err = snapshots.Get(ctx, "snap-4", metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "snap-4, created after the backup: %v", err)
			_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "late", metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "late, created after the backup: %v", err)
			labelled, err := snapshots.List(ctx, metav1.ListOptions{LabelSelector: "e2e-backup=kept"})
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshotNames(labelled.Items)).To(ConsistOf("snap-1", "snap-2", "snap-3"), "a label-selected list reads the restored label index")

			By("the objects of the rest of the stack are back")
			restored := apiObjects(ctx, ns)
			var lost []string
			for key, want := range unchanged {
				if restored[key] != want {
					lost = append(lost, key)
				}
			}
			Expect(lost).To(BeEmpty(), "objects of other namespaces present at the backup, unchanged until the restore, missing or different after it")
			GinkgoWriter.Printf("%d objects of other namespaces checked\n", len(unchanged))

			By("the resourceVersion is past every one served before the restore")
			now, err := snapshots.List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(strconv.ParseUint(now.ResourceVersion, 10, 64)).To(BeNumerically(">", highest),
				"a list after the restore is at resourceVersion %s, not past %d, served before it", now.ResourceVersion, highest)

			By("reads and watches from a resourceVersion served before the restore get 410 Gone")
			for _, rv := range []string{initial.ResourceVersion, oldRV} {
				Expect(watchFrom(ctx, snapshots, rv)).To(Satisfy(isExpired),
					"a watch from resourceVersion %s, served before the restore", rv)
			}
			_, err = snapshots.List(ctx, metav1.ListOptions{ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			Expect(err).To(Satisfy(isExpired), "a list at exactly resourceVersion %s, served before the restore", oldRV)

			By("the watch open before the restore got 410 Gone resuming from its resourceVersion, listed again and follows the restored state")
			Eventually(watcher.expired).WithTimeout(2*time.Minute).Should(ContainElement(oldRV),
				"resuming from resourceVersion %s after the restart", oldRV)
			Eventually(watcher.state).WithTimeout(time.Minute).Should(Equal(restoredState))
			Expect(watcher.relists()).To(BeNumerically(">=", 1))

			By("the informer started before the backup converges to the restored state")
			Eventually(informer.state).WithTimeout(2 * time.Minute).Should(Equal(restoredState))

			By("both see a write made after the restore")
			fresh, err := snapshots.Create(ctx, backupSnapshot("snap-5", "after the restore"), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(strconv.ParseUint(fresh.ResourceVersion, 10, 64)).To(BeNumerically(">", highest))
			withFresh := maps.Clone(restoredState)
			withFresh["snap-5"] = "after the restore"
			Eventually(watcher.state).WithTimeout(time.Minute).Should(Equal(withFresh))
			Eventually(informer.state).WithTimeout(time.Minute).Should(Equal(withFresh))
			GinkgoWriter.Printf("the watch got 410 Gone at %v and listed again %d times; the informer's requests:\n%s",
				watcher.expired(), watcher.relists(), strings.Join(informer.requests(), "\n"))

			By("the agent removes from Argo CD the deployment the restore took away, and keeps the other")
			Eventually(applicationsOf(argo, ns)).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).
				Should(ConsistOf(argocd.ApplicationName(web.UID)))
		})
})

// backupSnapshot is a Snapshot labelled as this spec's, whose description says when it was written.
func backupSnapshot(name, description string) *appstudiov1alpha1.Snapshot {
	return &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e-backup": "kept"}},
		Spec: appstudiov1alpha1.SnapshotSpec{
			Application:        "shop",
			DisplayDescription: description,
			Components:         []appstudiov1alpha1.SnapshotComponent{{Name: "web", ContainerImage: "quay.io/example/web:v1"}},
		},
	}
}

func snapshotNames(items []appstudiov1alpha1.Snapshot) []string {
	var names []string
	for i := range items {
		names = append(names, items[i].Name)
	}
	return names
}

// waitForNamespaceDeletions waits until no namespace is terminating, or timeout has passed.
func waitForNamespaceDeletions(ctx context.Context, timeout time.Duration) {
	GinkgoHelper()
	deadline := time.Now().Add(timeout)
	for {
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var terminating []string
		for _, n := range list.Items {
			if n.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, n.Name)
			}
		}
		if len(terminating) == 0 {
			return
		}
		if time.Now().After(deadline) {
			GinkgoWriter.Printf("namespaces still terminating after %v, going on: %v\n", timeout, terminating)
			return
		}
		sleepCtx(ctx, time.Second)
	}
}

// postgresBin is where hack/local-up.sh finds PostgreSQL's programs.
func postgresBin() string {
	if bin := os.Getenv("PG_BIN"); bin != "" {
		return bin
	}
	return "/usr/lib/postgresql/15/bin"
}

// runShell runs a documented block with bash, env added to the suite's environment, and fails
// the spec unless it succeeds. It returns the block's output.
func runShell(ctx context.Context, block string, env []string) string {
	GinkgoHelper()
	out, err := shell(ctx, block, env)
	Expect(err).NotTo(HaveOccurred(), "%s\n%s", block, out)
	return out
}

func tryShell(ctx context.Context, block string, env []string) error {
	out, err := shell(ctx, block, env)
	if err != nil {
		return fmt.Errorf("%w:\n%s", err, out)
	}
	return nil
}

func shell(ctx context.Context, block string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// objectState is what is compared of an object across the restore.
type objectState struct {
	uid  types.UID
	spec string
}

// apiObjects reads every object of both API groups, in every namespace but except, by
// "resource/namespace/name".
func apiObjects(ctx context.Context, except string) map[string]objectState {
	GinkgoHelper()
	dyn := dynamic.NewForConfigOrDie(adminConfig)
	objects := map[string]objectState{}
	for _, gv := range []schema.GroupVersion{managedv1alpha1.SchemeGroupVersion, appstudiov1alpha1.SchemeGroupVersion} {
		resources, err := kube.Discovery().ServerResourcesForGroupVersion(gv.String())
		Expect(err).NotTo(HaveOccurred())
		for _, r := range resources.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			list, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), "listing %s", r.Name)
			for _, item := range list.Items {
				if item.GetNamespace() == except || item.GetDeletionTimestamp() != nil {
					continue
				}
				spec, err := json.Marshal(item.Object["spec"])
				Expect(err).NotTo(HaveOccurred())
				objects[r.Name+"/"+item.GetNamespace()+"/"+item.GetName()] = objectState{uid: item.GetUID(), spec: string(spec)}
			}
		}
	}
	return objects
}

// watchFrom starts a watch of client's objects at rv and returns the error it ends with: the
// request's, or the first event's if that is an error. Any other first event, or none within
// 15 s, is an error of its own.
func watchFrom(ctx context.Context, client appstudiotyped.SnapshotInterface, rv string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		switch {
		case !ok:
			return fmt.Errorf("the watch from %s ended without an event", rv)
		case ev.Type == watch.Error:
			return apierrors.FromObject(ev.Object)
		default:
			return fmt.Errorf("the watch from %s began with a %s event", rv, ev.Type)
		}
	case <-ctx.Done():
		return fmt.Errorf("the watch from %s sent nothing for 15s", rv)
	}
}

// relistingWatcher follows a namespace's Snapshots as a client that keeps its own state does:
// when a watch ends it watches again from the last resourceVersion it received; only when that
// gets 410 Gone does it list again and watch from the list's resourceVersion.
type relistingWatcher struct {
	mu      sync.Mutex
	objects map[string]string // name: description
	rv      string
	gone    []string // the resourceVersions a watch got 410 Gone from
	listed  int
}

func startRelistingWatcher(ctx context.Context, client appstudiotyped.SnapshotInterface, initial *appstudiov1alpha1.SnapshotList) *relistingWatcher {
	w := &relistingWatcher{}
	w.replace(initial)
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			rv := w.resourceVersion()
			expired := false
			stream, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			switch {
			case isExpired(err):
				expired = true
			case err != nil:
				// gitops-apiserver is down: the kube-apiserver answers 503 until it is back.
				sleepCtx(ctx, 200*time.Millisecond)
				continue
			default:
				for ev := range stream.ResultChan() {
					if ev.Type == watch.Error {
						expired = isExpired(apierrors.FromObject(ev.Object))
						break
					}
					if s, ok := ev.Object.(*appstudiov1alpha1.Snapshot); ok {
						w.apply(ev.Type, s)
					}
				}
				stream.Stop()
			}
			if !expired {
				continue
			}
			w.mu.Lock()
			w.gone = append(w.gone, rv)
			w.mu.Unlock()
			for ctx.Err() == nil {
				list, err := client.List(ctx, metav1.ListOptions{})
				if err == nil {
					w.replace(list)
					break
				}
				sleepCtx(ctx, 200*time.Millisecond)
			}
		}
	}()
	return w
}

// isExpired tells a 410 Gone: reason Expired, as for a compacted resourceVersion, or Gone.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (w *relistingWatcher) replace(list *appstudiov1alpha1.SnapshotList) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.objects != nil {
		w.listed++
	}
	w.objects = map[string]string{}
	for i := range list.Items {
		w.objects[list.Items[i].Name] = list.Items[i].Spec.DisplayDescription
	}
	w.rv = list.ResourceVersion
}

func (w *relistingWatcher) apply(typ watch.EventType, s *appstudiov1alpha1.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if typ == watch.Deleted {
		delete(w.objects, s.Name)
	} else {
		w.objects[s.Name] = s.Spec.DisplayDescription
	}
	w.rv = s.ResourceVersion
}

func (w *relistingWatcher) state() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.objects)
}

func (w *relistingWatcher) resourceVersion() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rv
}

func (w *relistingWatcher) expired() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.gone)
}

func (w *relistingWatcher) relists() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.listed
}

// snapshotInformer is a client-go informer of a namespace's Snapshots whose list and watch
// requests are recorded.
type snapshotInformer struct {
	informer cache.SharedIndexInformer
	mu       sync.Mutex
	log      []string
}

func startSnapshotInformer(ctx context.Context, client appstudiotyped.SnapshotInterface) *snapshotInformer {
	GinkgoHelper()
	si := &snapshotInformer{}
	record := func(format string, args ...any) {
		si.mu.Lock()
		defer si.mu.Unlock()
		si.log = append(si.log, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			list, err := client.List(ctx, o)
			if err != nil {
				record("list from %q: %v", o.ResourceVersion, err)
			} else {
				record("list from %q: resourceVersion %s", o.ResourceVersion, list.ResourceVersion)
			}
			return list, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			w, err := client.Watch(ctx, o)
			if err != nil {
				record("watch from %q: %v", o.ResourceVersion, err)
				return nil, err
			}
			record("watch from %q", o.ResourceVersion)
			return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				if ev.Type == watch.Error {
					record("watch from %q ended: %v", o.ResourceVersion, apierrors.FromObject(ev.Object))
				}
				return ev, true
			}), nil
		},
	}
	si.informer = cache.NewSharedIndexInformer(lw, &appstudiov1alpha1.Snapshot{}, 0, cache.Indexers{})
	go si.informer.Run(ctx.Done())
	Eventually(si.informer.HasSynced).WithTimeout(time.Minute).Should(BeTrue())
	return si
}

func (si *snapshotInformer) state() map[string]string {
	objects := map[string]string{}
	for _, obj := range si.informer.GetStore().List() {
		s := obj.(*appstudiov1alpha1.Snapshot)
		objects[s.Name] = s.Spec.DisplayDescription
	}
	return objects
}

func (si *snapshotInformer) requests() []string {
	si.mu.Lock()
	defer si.mu.Unlock()
	return slices.Clone(si.log)
}

// stackProcess is how hack/local-up.sh started a process of the stack, read from /proc, so that
// it can be started again the same way.
type stackProcess struct {
	name string
	argv []string
	env  []string
	dir  string
}

func captureStackProcess(name string) *stackProcess {
	GinkgoHelper()
	pid := stackPID(name)
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	Expect(err).NotTo(HaveOccurred())
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	Expect(err).NotTo(HaveOccurred())
	split := func(b []byte) []string {
		var out []string
		for _, s := range strings.Split(string(b), "\x00") {
			if s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	p := &stackProcess{name: name, argv: split(cmdline), env: split(environ), dir: dir}
	Expect(p.argv).NotTo(BeEmpty())
	return p
}

// flag is the value of one of gitops-apiserver's flags in the process's command line.
func (p *stackProcess) flag(name string) string {
	GinkgoHelper()
	fs := pflag.NewFlagSet(p.name, pflag.ContinueOnError)
	apiserver.NewOptions(io.Discard, io.Discard).AddFlags(fs)
	Expect(fs.Parse(p.argv[1:])).To(Succeed())
	return fs.Lookup(name).Value.String()
}

// postgresDSN is the connection string gitops-apiserver uses (hack/local-up.sh's start_postgres
// writes it into the stack's postgres.dsn, which --postgres-dsn-file names).
func (p *stackProcess) postgresDSN() string {
	GinkgoHelper()
	file := p.flag("postgres-dsn-file")
	Expect(file).NotTo(BeEmpty(), "gitops-apiserver runs without --postgres-dsn-file")
	dsn, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(dsn))
}

// stop sends SIGTERM, as the kubelet does, and waits until the process is gone.
func (p *stackProcess) stop() {
	GinkgoHelper()
	pid := stackPID(p.name)
	Expect(syscall.Kill(pid, syscall.SIGTERM)).To(Succeed())
	Eventually(func() bool { return processAlive(pid) }).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).
		Should(BeFalse(), "%s (%d) did not stop on SIGTERM", p.name, pid)
}

// start starts the process again as it was started, its output appended to its log and its PID
// in its pid file, so that hack/local-up.sh stop stops it.
func (p *stackProcess) start() {
	GinkgoHelper()
	log, err := os.OpenFile(filepath.Join(stackDir, "logs", p.name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	Expect(err).NotTo(HaveOccurred())
	defer log.Close()
	fmt.Fprintf(log, "--- started again by the e2e spec %q at %s\n", CurrentSpecReport().LeafNodeText, time.Now().Format(time.RFC3339))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = p.env, p.dir, log, log
	// Its own process group, like the stack's other processes: not stopped with the suite's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	Expect(cmd.Start()).To(Succeed())
	Expect(os.WriteFile(filepath.Join(stackDir, "pids", p.name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)).To(Succeed())
	go func() { _ = cmd.Wait() }() // reaps it, should it end while the suite runs
}

// waitServing waits until gitops-apiserver is ready, its APIServices are Available and the
// kube-apiserver serves namespace ns's Snapshots through them.
func (p *stackProcess) waitServing(ctx context.Context, ns string) {
	GinkgoHelper()
	readyz := "https://" + net.JoinHostPort(p.flag("bind-address"), p.flag("secure-port")) + "/readyz"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	Eventually(func() (int, error) {
		resp, err := client.Get(readyz)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Equal(http.StatusOK), "%s", readyz)
	must("admin", "wait", "--for=condition=Available", "--timeout=2m",
		"apiservice/v1alpha1.managed-gitops.redhat.com", "apiservice/v1alpha1.appstudio.redhat.com")
	Eventually(func(ctx context.Context) error {
		_, err := gitops.AppStudioV1alpha1().Snapshots(ns).List(ctx, metav1.ListOptions{})
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
}

// processAlive tells whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold anything.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
