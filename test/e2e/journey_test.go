//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotionrun"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
)

// The AppStudio journey of issue 20: an Application with a Component, Environments dev and
// staging, a Snapshot, a binding for dev deployed and reported, then a PromotionRun to staging
// that generates staging's binding and completes once staging is deployed. The spec plays
// application-service, which generates one overlay per environment in the GitOps repository
// (components/web/overlays/<env>) and reports it in the binding's status.
var _ = Describe("AppStudio journey", Ordered, func() {
	const app, component = "journey", "web"
	var ns, repoURL, commit string

	BeforeAll(func(ctx context.Context) {
		dir := GinkgoT().TempDir()
		repoURL = "file://" + gitRepository(dir, map[string]string{
			"components/web/overlays/dev/cm.yaml":     configMap("web-dev", "snap-1"),
			"components/web/overlays/staging/cm.yaml": configMap("web-staging", "snap-1"),
		})
		commit = gitIn(dir, "rev-parse", "HEAD")
		ns = fmt.Sprintf("e2e-journey-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		// First (cleanups run last in, first out): a binding would re-create its
		// GitOpsDeployments as they are deleted.
		DeferCleanup(func(ctx context.Context) {
			Expect(gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		})
	})

	// generate writes, as application-service does, the GitOps repository of the binding's
	// current generation into its status.
	generate := func(ctx context.Context, binding, env string) {
		GinkgoHelper()
		bindings := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := bindings.Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			b.Status.Components = []appstudiov1alpha1.BindingComponentStatus{{Name: component,
				GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
					URL: repoURL, Branch: commit, Path: "components/web/overlays/" + env, GeneratedResources: []string{"cm.yaml"}, CommitID: commit}}}
			meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
				Status: metav1.ConditionTrue, Reason: "GenerateSuccess", ObservedGeneration: b.Generation})
			_, err = bindings.UpdateStatus(ctx, b, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}

	It("deploys a snapshot to dev through a binding, then promotes it to staging through a generated binding", func(ctx context.Context) {
		studio := gitops.AppStudioV1alpha1()
		By("creating the Application, its Component, Environments dev and staging, and a Snapshot")
		_, err := studio.Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Journey"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = studio.Components(ns).Create(ctx, &appstudiov1alpha1.Component{
			ObjectMeta: metav1.ObjectMeta{Name: component},
			Spec:       appstudiov1alpha1.ComponentSpec{ComponentName: component, Application: app, ContainerImage: "registry.invalid/web:1"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i, env := range []string{"dev", "staging"} {
			spec := appstudiov1alpha1.EnvironmentSpec{DisplayName: env, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual}
			if i > 0 {
				spec.ParentEnvironment = "dev"
			}
			_, err = studio.Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: env}, Spec: spec}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = studio.Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "snap-1"},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:1"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("binding the snapshot to dev: generated, Synced, Healthy and reported")
		_, err = studio.SnapshotEnvironmentBindings(ns).Create(ctx, &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "journey-dev"},
			Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: "dev", Snapshot: "snap-1",
				Components: []appstudiov1alpha1.BindingComponent{{Name: component}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		generate(ctx, "journey-dev", "dev")
		expectDeployed(ctx, ns, "journey-dev", snapshotenvironmentbinding.DeploymentName("journey-dev", app, "dev", component))
		Expect(configMapValueIn(ctx, ns, "web-dev")).To(Equal("snap-1"))

		By("promoting the snapshot to staging: the binding is generated with the Snapshot's components")
		_, err = studio.PromotionRuns(ns).Create(ctx, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: "to-staging"},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "snap-1", Application: app,
				ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "staging"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		generated := promotionrun.BindingName(app, "staging")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := studio.SnapshotEnvironmentBindings(ns).Get(ctx, generated, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.Spec).To(Equal(appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: "staging",
				Snapshot: "snap-1", Components: []appstudiov1alpha1.BindingComponent{{Name: component}}}))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("completing the promotion once staging is deployed")
		generate(ctx, generated, "staging")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := studio.PromotionRuns(ns).Get(ctx, "to-staging", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete))
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess))
			g.Expect(r.Status.ActiveBindings).To(Equal([]string{generated}))
			g.Expect(r.Status.EnvironmentStatus).To(HaveLen(1))
			step := r.Status.EnvironmentStatus[0]
			g.Expect(step).To(And(HaveField("Step", int32(1)), HaveField("EnvironmentName", "staging"),
				HaveField("Status", appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess),
				HaveField("DisplayStatus", "All GitOpsDeployments are Synced/Healthy")))
			g.Expect(step.StartTime).NotTo(BeNil())
			g.Expect(step.CompletionTime).NotTo(BeNil())
			g.Expect(step.CompletionTime.Before(step.StartTime)).To(BeFalse())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		expectDeployed(ctx, ns, generated, snapshotenvironmentbinding.DeploymentName(generated, app, "staging", component))
		Expect(configMapValueIn(ctx, ns, "web-staging")).To(Equal("snap-1"))
		Expect(configMapValueIn(ctx, ns, "web-dev")).To(Equal("snap-1"))

		By("recording the promotion's steps as Events")
		Expect(must("admin", "describe", "promotionrun", "to-staging", "-n", ns)).To(And(
			MatchRegexp(`Normal\s+BindingCreated\s+.*Created SnapshotEnvironmentBinding `+generated),
			MatchRegexp(`Normal\s+PromotionSucceeded\s+`)))
	})
})

// expectDeployed waits until binding reports its one GitOpsDeployment, deployment, Synced and
// Healthy ("1 of 1 components deployed").
func expectDeployed(ctx context.Context, ns, binding, deployment string) {
	GinkgoHelper()
	Eventually(func(g Gomega, ctx context.Context) {
		b, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, binding, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(b.Status.GitOpsDeployments).To(ConsistOf(And(HaveField("GitOpsDeployment", deployment),
			HaveField("SyncStatus", "Synced"), HaveField("Health", "Healthy"))))
		c := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, "AllComponentsDeployed")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("1 of 1 components deployed"))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}
