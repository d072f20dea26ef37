//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
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
		ns := "e2e-restart"
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		client := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
		for i := 0; i < 20; i++ {
			_, err := client.Create(ctx, newDeployment(fmt.Sprintf("before-%02d", i)), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		list, err := client.List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		lastRV := list.ResourceVersion

		killStackProcess("gitops-apiserver")
		startStackProcess("gitops-apiserver")

		// Writes after the restart, then a watch from the last resourceVersion seen before it:
		// it must deliver exactly those writes, or 410 Gone (then a relist has them all).
		var created []string
		Eventually(func() error {
			_, err := client.Create(ctx, newDeployment("after-00"), metav1.CreateOptions{})
			return err
		}).WithTimeout(time.Minute).Should(Succeed())
		created = append(created, "after-00")
		for i := 1; i < 5; i++ {
			name := fmt.Sprintf("after-%02d", i)
			_, err := client.Create(ctx, newDeployment(name), metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			created = append(created, name)
		}

		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var seen []string
		gone := false
		Eventually(func() []string {
			select {
			case ev := <-w.ResultChan():
				if ev.Type == watch.Error {
					status, ok := ev.Object.(*metav1.Status)
					Expect(ok && status.Code == 410).To(BeTrue(), "watch error other than 410 Gone: %+v", ev.Object)
					gone = true
					return created
				}
				// The agent writes the deployments' status meanwhile: MODIFIED events of any of
				// them come in between, and only the creates after the restart are ADDED.
				Expect(ev.Type).To(BeElementOf(watch.Added, watch.Modified), "event %+v", ev)
				if ev.Type == watch.Added {
					seen = append(seen, ev.Object.(*gitopsv1alpha1.GitOpsDeployment).Name)
				}
			default:
			}
			return seen
		}).WithTimeout(30 * time.Second).WithPolling(10 * time.Millisecond).Should(Equal(created))
		GinkgoWriter.Printf("watch from before the restart: 410 Gone = %v\n", gone)

		// Every acknowledged write is there, whether the watch resumed or the client relists.
		list, err = client.List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(25))
	})
})
