//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotionrun"
)

// A tenant deletes a PromotionRun while the agent still has a look at it pending: its timeout's
// recheck, or the retry of a write that failed. The agent once panicked on the key of the run
// that was gone, and the process went down with every tenant it served. Here the agent keeps
// running, the same process, and another tenant's deployment still syncs afterwards.
var _ = Describe("PromotionRun deleted while the agent still looks at it", Ordered, func() {
	const app, env, component = "shop", "dev", "web"
	// hold is a finalizer of the spec's own: it keeps an object in a terminating namespace for
	// as long as the spec needs it.
	const hold = "e2e.gitops-service.dev/hold"
	var (
		agentPID int
		// logFrom is the agent log's length when the specs began: only what follows is theirs.
		logFrom int
	)
	agentLog := func() string {
		GinkgoHelper()
		raw, err := os.ReadFile(filepath.Join(stackDir, "logs", "agent.log"))
		Expect(err).NotTo(HaveOccurred())
		if len(raw) < logFrom {
			return string(raw) // rotated by a restart
		}
		return string(raw[logFrom:])
	}
	// expectAgentUp checks, for a while, that the agent is the process it was and logged no panic.
	expectAgentUp := func(ctx context.Context, during time.Duration) {
		GinkgoHelper()
		Consistently(func(g Gomega) {
			g.Expect(syscall.Kill(agentPID, 0)).To(Succeed(), "the agent process is gone")
			g.Expect(stackPID("agent")).To(Equal(agentPID), "the agent was restarted")
			log := agentLog()
			g.Expect(log).NotTo(ContainSubstring("Observed a panic"))
			g.Expect(log).NotTo(ContainSubstring("reconcile panicked"))
		}).WithContext(ctx).WithTimeout(during).WithPolling(500 * time.Millisecond).Should(Succeed())
	}
	// tenant makes a namespace with an Application, an Environment and a Snapshot of it; the
	// Snapshot with hold when held.
	tenant := func(ctx context.Context, prefix string, held bool) string {
		GinkgoHelper()
		ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		createApplicationWithManualEnvironments(ctx, ns, app, "Shop", map[string]string{env: env, "other": "other"})
		snap := &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "snap"},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:1"}}},
		}
		if held {
			snap.Finalizers = []string{hold}
		}
		_, err := gitops.AppStudioV1alpha1().Snapshots(ns).Create(ctx, snap, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return ns
	}
	createRun := func(ctx context.Context, ns, name, target string, held bool) {
		GinkgoHelper()
		r := &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "snap", Application: app,
				ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: target}},
		}
		if held {
			r.Finalizers = []string{hold}
		}
		_, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Create(ctx, r, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	awaitActive := func(ctx context.Context, ns, name string) *appstudiov1alpha1.PromotionRun {
		GinkgoHelper()
		var run *appstudiov1alpha1.PromotionRun
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			// Its binding generated, it waits for application-service, which never comes here.
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateActive))
			g.Expect(r.Status.PromotionStartTime.IsZero()).To(BeFalse())
			run = r
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		return run
	}
	// release drops the finalizers of a run or of the Snapshot.
	release := func(ctx context.Context, ns, resource, name string) {
		GinkgoHelper()
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		var err error
		if resource == "promotionruns" {
			_, err = gitops.AppStudioV1alpha1().PromotionRuns(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		} else {
			_, err = gitops.AppStudioV1alpha1().Snapshots(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}

	BeforeAll(func() {
		agentPID = stackPID("agent")
		raw, err := os.ReadFile(filepath.Join(stackDir, "logs", "agent.log"))
		Expect(err).NotTo(HaveOccurred())
		logFrom = len(raw)
		// A failure here must not leave the next specs without an agent.
		DeferCleanup(func() { restartIfKilled("agent") })
	})

	It("keeps the agent up when an Active run is deleted before its timeout's recheck", func(ctx context.Context) {
		ns := tenant(ctx, "e2e-promotion-recheck", false)
		DeferCleanup(func(ctx context.Context) { _ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
		createRun(ctx, ns, "active", env, false)
		run := awaitActive(ctx, ns, "active")

		By("moving the promotion's start back, so that its timeout's recheck is due in seconds")
		const dueIn = 8 * time.Second
		runs := gitops.AppStudioV1alpha1().PromotionRuns(ns)
		run.Status.PromotionStartTime = metav1.NewTime(time.Now().Add(-promotionrun.Timeout + dueIn))
		_, err := runs.UpdateStatus(ctx, run, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// The controller has looked at the new start once it has written the status again
		// (the step's display message is rewritten with the same content, or nothing is): give
		// its watch a moment, well short of the recheck.
		time.Sleep(2 * time.Second)

		By("deleting the run while its recheck is pending")
		Expect(runs.Delete(ctx, "active", metav1.DeleteOptions{})).To(Succeed())
		expectAgentUp(ctx, dueIn+5*time.Second)
	})

	It("keeps the agent up when a run whose write keeps failing is deleted", func(ctx context.Context) {
		ns := tenant(ctx, "e2e-promotion-failing", true)
		runs := gitops.AppStudioV1alpha1().PromotionRuns(ns)
		DeferCleanup(func(ctx context.Context) {
			release(ctx, ns, "promotionruns", "second")
			release(ctx, ns, "snapshots", "snap")
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})

		By("a first run Active into another Environment; a second, held, waiting its turn")
		createRun(ctx, ns, "first", "other", false)
		awaitActive(ctx, ns, "first")
		createRun(ctx, ns, "second", env, true)
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := runs.Get(ctx, "second", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			// Held up by the first: the active-promotion error, its binding not generated.
			g.Expect(r.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appstudiov1alpha1.PromotionRunConditionErrorOccurred),
				HaveField("Message", ContainSubstring("active promotions")))))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("deleting the namespace: the first run goes, the second's turn comes, and its binding cannot be created there")
		Expect(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
		failed := fmt.Sprintf("creating SnapshotEnvironmentBinding %s/%s", ns, promotionrun.BindingName(app, env))
		Eventually(agentLog).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).
			Should(ContainSubstring(failed), "the second run's binding was never refused")

		By("releasing the second run while its write is retried")
		release(ctx, ns, "promotionruns", "second")
		Eventually(func(ctx context.Context) bool {
			_, err := runs.Get(ctx, "second", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		// The retries back off from 5 ms, doubling: within seconds of the failures, the next
		// comes in a few more.
		expectAgentUp(ctx, 15*time.Second)
	})

	It("still syncs another tenant's GitOpsDeployment afterwards, from the same agent process", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-promotion-bystander-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		repo := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"deploy/cm.yaml": configMap("cm-bystander", "v1")})
		createDeployment(ctx, ns, "bystander", repo, "deploy", false)
		waitSyncedHealthy(ctx, ns, "bystander", "cm-bystander")
		Expect(stackPID("agent")).To(Equal(agentPID))
		Expect(syscall.Kill(agentPID, 0)).To(Succeed())
		Expect(strings.Contains(agentLog(), "Observed a panic")).To(BeFalse())
	})
})
