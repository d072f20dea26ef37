//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/autopromotion"
)

// Automated promotion through dev → staging → prod, all AppStudioAutomated, with
// application-service played in the background (appservice_player_test.go) and the real Argo CD.
var _ = Describe("Automated promotion", Ordered, func() {
	const app, component = "shop", "web"
	var (
		ns     string
		player *appServicePlayer
	)

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-autopromo-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		player = startAppServicePlayer(ctx, ns)
		studio := gitops.AppStudioV1alpha1()
		_, err := studio.Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range [][2]string{{"dev", ""}, {"staging", "dev"}, {"prod", "staging"}} {
			createEnvironment(ctx, ns, e[0], appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, e[1])
		}
		// A Manual child of dev: never entered automatically.
		createEnvironment(ctx, ns, "perf", appstudiov1alpha1.DeploymentStrategyManual, "dev")
	})

	newSnapshot := func(ctx context.Context, name, tag string) {
		GinkgoHelper()
		// Newest by creation time, to the second: one Snapshot a second.
		time.Sleep(1100 * time.Millisecond)
		_, err := gitops.AppStudioV1alpha1().Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:" + tag}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	run := func(ctx context.Context, snapshot string) (*appstudiov1alpha1.PromotionRun, error) {
		return gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, autopromotion.RunName(snapshot, "dev"), metav1.GetOptions{})
	}
	steps := func(r *appstudiov1alpha1.PromotionRun) []string {
		var out []string
		for _, e := range r.Status.EnvironmentStatus {
			out = append(out, fmt.Sprintf("%d %s %s", e.Step, e.EnvironmentName, e.Status))
		}
		return out
	}
	deployed := func(ctx context.Context, env string) string {
		return configMapValueIn(ctx, ns, "cm-"+component+"-"+env)
	}

	It("promotes a new Snapshot into dev, staging and prod, in order, one step each", func(ctx context.Context) {
		newSnapshot(ctx, "shop-1", "1")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := run(ctx, "shop-1")
			g.Expect(err).NotTo(HaveOccurred(), "no automated PromotionRun for the new Snapshot")
			g.Expect(r.Spec.AutomatedPromotion.InitialEnvironment).To(Equal("dev"))
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete), "steps %v, conditions %+v", steps(r), r.Status.Conditions)
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess), "steps %v, conditions %+v", steps(r), r.Status.Conditions)
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging Success", "3 prod Success"}))
			for i := 1; i < len(r.Status.EnvironmentStatus); i++ {
				prev, cur := r.Status.EnvironmentStatus[i-1], r.Status.EnvironmentStatus[i]
				g.Expect(cur.StartTime.Before(prev.CompletionTime)).To(BeFalse(), "%s started before %s ended", cur.EnvironmentName, prev.EnvironmentName)
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, env := range []string{"dev", "staging", "prod"} {
			Expect(deployed(ctx, env)).To(Equal("registry.invalid/web:1"), env)
		}
		_, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, "shop-perf-generated-binding", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Manual Environment perf was entered: %v", err)
	})

	It("lets a newer Snapshot supersede one still on its way", func(ctx context.Context) {
		player.hold("staging")
		newSnapshot(ctx, "shop-2", "2")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := run(ctx, "shop-2")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging In Progress"}))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		newSnapshot(ctx, "shop-3", "3")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := run(ctx, "shop-2")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete))
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultFailure))
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging Failed"}), "it stops where it is")
			g.Expect(r.Status.Conditions).To(ContainElement(HaveField("Message",
				"Superseded by PromotionRun "+autopromotion.RunName("shop-3", "dev")+" of the newer Snapshot shop-3.")))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		player.release("staging")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := run(ctx, "shop-3")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess), "steps %v, conditions %+v", steps(r), r.Status.Conditions)
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging Success", "3 prod Success"}))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, env := range []string{"dev", "staging", "prod"} {
			Expect(deployed(ctx, env)).To(Equal("registry.invalid/web:3"), env)
		}
		prod, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, "shop-prod-generated-binding", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(prod.Generation).To(Equal(int64(2)), "prod was pointed at shop-1 and shop-3 only, never at the superseded shop-2")
	})

	It("marks the Environments a cycle or a missing parent keeps out of automated promotion", func(ctx context.Context) {
		createEnvironment(ctx, ns, "orphan", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "nowhere")
		graphCondition := func(env string) func(g Gomega, ctx context.Context) {
			return func(g Gomega, ctx context.Context) {
				e, err := gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, env, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(e.Status.Conditions).To(ContainElement(And(HaveField("Type", "PromotionGraphValid"), HaveField("Status", metav1.ConditionFalse),
					HaveField("Reason", "ParentNotFound"), HaveField("Message", "Environment orphan has parentEnvironment nowhere, which does not exist"))))
			}
		}
		Eventually(graphCondition("orphan")).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		By("mending the graph resolves it")
		createEnvironment(ctx, ns, "nowhere", appstudiov1alpha1.DeploymentStrategyManual, "")
		Eventually(func(g Gomega, ctx context.Context) {
			e, err := gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, "orphan", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.Status.Conditions).To(ContainElement(And(HaveField("Type", "PromotionGraphValid"), HaveField("Status", metav1.ConditionTrue),
				HaveField("Reason", "ParentNotFoundResolved"))))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("refuses a walk that starts in a cycle, naming the Environments", func(ctx context.Context) {
		createEnvironment(ctx, ns, "loop-a", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "loop-b")
		createEnvironment(ctx, ns, "loop-b", appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, "loop-a")
		_, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Create(ctx, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: "from-the-loop"},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "shop-3", Application: app,
				AutomatedPromotion: appstudiov1alpha1.AutomatedPromotionConfiguration{InitialEnvironment: "loop-a"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		msg := "Environments loop-a, loop-b are each other's parents (a cycle): none can be promoted into automatically"
		Eventually(func(g Gomega, ctx context.Context) {
			e, err := gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, "loop-b", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.Status.Conditions).To(ContainElement(And(HaveField("Type", "PromotionGraphValid"), HaveField("Reason", "Cycle"),
				HaveField("Message", msg))))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, "from-the-loop", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultFailure))
			g.Expect(r.Status.Conditions).To(ContainElement(HaveField("Message", msg)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// createEnvironment creates an Environment of ns with strategy and parent ("" for none).
func createEnvironment(ctx context.Context, ns, name string, strategy appstudiov1alpha1.DeploymentStrategyType, parent string) {
	GinkgoHelper()
	_, err := gitops.AppStudioV1alpha1().Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: name, DeploymentStrategy: strategy, ParentEnvironment: parent},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}
