//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
)

// SnapshotEnvironmentBindings and PromotionRuns on the real stack. The spec plays
// application-service: it writes the binding's status.components (the GitOps repository of
// each component) and gitopsRepoConditions, as that service does after generating the
// repository. Each snapshot's repository state is pinned to a commit ("branch" is its SHA), so
// that a deployment at the new snapshot is told apart from one at the old.
var _ = Describe("SnapshotEnvironmentBinding and PromotionRun", Ordered, func() {
	const app, env, component, binding = "shop", "dev", "web", "shop-dev"
	var (
		ns, repoURL, commitV1, commitV2 string
		deploymentName                  = snapshotenvironmentbinding.DeploymentName(binding, app, env, component)
	)

	BeforeAll(func(ctx context.Context) {
		dir := GinkgoT().TempDir()
		repoURL = "file://" + gitRepository(dir, map[string]string{"web/cm.yaml": configMap("cm-web", "v1")})
		commitV1 = gitIn(dir, "rev-parse", "HEAD")
		commitV2 = gitCommit(dir, map[string]string{"web/cm.yaml": configMap("cm-web", "v2")})
		ns = fmt.Sprintf("e2e-binding-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)

		// No cluster configured: the binding deploys into its own namespace.
		createApplicationWithManualEnvironments(ctx, ns, app, "Shop", map[string]string{env: "Dev"})
		for _, snap := range []string{"snap-1", "snap-2"} {
			_, err := gitops.AppStudioV1alpha1().Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
				ObjectMeta: metav1.ObjectMeta{Name: snap},
				Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
					Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:" + snap}}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
	})

	// generateRepository writes what application-service would once it has generated the
	// binding's GitOps repository at commit for the binding's current generation.
	generateRepository := func(ctx context.Context, commit string) {
		GinkgoHelper()
		bindings := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := bindings.Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			b.Status.Components = []appstudiov1alpha1.BindingComponentStatus{{Name: component,
				GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
					URL: repoURL, Branch: commit, Path: "web", GeneratedResources: []string{"cm.yaml"}, CommitID: commit}}}
			meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
				Status: metav1.ConditionTrue, Reason: "GenerateSuccess", ObservedGeneration: b.Generation})
			_, err = bindings.UpdateStatus(ctx, b, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}

	It("generates a GitOpsDeployment per component, keeps it as generated and reports it deployed", func(ctx context.Context) {
		_, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Create(ctx, &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding},
			Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "snap-1",
				Components: []appstudiov1alpha1.BindingComponent{{Name: component}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("waiting for application-service's component status")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(b.Status.BindingConditions, "Reconciled")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(appstudiov1alpha1.BindingReasonWaitingForComponentStatus))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		generateRepository(ctx, commitV1)
		deployments := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
		Eventually(func(g Gomega, ctx context.Context) {
			d, err := deployments.Get(ctx, deploymentName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Spec.Source).To(Equal(managedv1alpha1.ApplicationSource{RepoURL: repoURL, Path: "web", TargetRevision: commitV1}))
			g.Expect(d.Spec.Type).To(Equal(managedv1alpha1.GitOpsDeploymentSpecTypeAutomated))
			g.Expect(d.Labels).To(HaveKeyWithValue("appstudio.openshift.io/component", component))
			g.Expect(d.OwnerReferences).To(ContainElement(HaveField("Name", binding)))
			g.Expect(d.Status.Sync.Status).To(BeEquivalentTo("Synced"))
			g.Expect(d.Status.Health.Status).To(BeEquivalentTo("Healthy"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(configMapValueIn(ctx, ns, "cm-web")).To(Equal("v1"))

		Eventually(func(g Gomega, ctx context.Context) {
			b, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.Status.GitOpsDeployments).To(ConsistOf(HaveField("GitOpsDeployment", deploymentName)))
			c := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, "AllComponentsDeployed")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(Equal("1 of 1 components deployed"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("reverting a manual edit of the generated GitOpsDeployment")
		Eventually(func(g Gomega, ctx context.Context) {
			d, err := deployments.Get(ctx, deploymentName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			d.Spec.Source.Path = "elsewhere"
			_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			d, err := deployments.Get(ctx, deploymentName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Spec.Source.Path).To(Equal("web"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		out := must("admin", "describe", "snapshotenvironmentbinding", binding, "-n", ns)
		Expect(out).To(ContainSubstring("GitOpsDeploymentCreated"))
	})

	It("promotes a snapshot through the binding and completes once it is deployed", func(ctx context.Context) {
		runs := gitops.AppStudioV1alpha1().PromotionRuns(ns)
		_, err := runs.Create(ctx, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: "to-dev"},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "snap-2", Application: app,
				ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: env}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("pointing the application's existing binding at the snapshot")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.Spec.Snapshot).To(Equal("snap-2"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega, ctx context.Context) {
			r, err := runs.Get(ctx, "to-dev", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).NotTo(Equal(appstudiov1alpha1.PromotionRunStateComplete),
				"complete before the repository was generated for the new snapshot")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		generateRepository(ctx, commitV2)
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := runs.Get(ctx, "to-dev", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete))
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess))
			g.Expect(r.Status.ActiveBindings).To(Equal([]string{binding}))
			g.Expect(r.Status.EnvironmentStatus).To(ConsistOf(HaveField("EnvironmentName", env)))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(configMapValueIn(ctx, ns, "cm-web")).To(Equal("v2"))
		out := must("admin", "describe", "promotionrun", "to-dev", "-n", ns)
		Expect(out).To(ContainSubstring("PromotionSucceeded"))
	})

	It("deletes the binding's GitOpsDeployments with the binding", func(ctx context.Context) {
		Expect(gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Delete(ctx, binding, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, deploymentName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeTrue())
	})
})

// configMapValueIn is the value key of a ConfigMap of namespace ns, "" if it is missing.
func configMapValueIn(ctx context.Context, ns, name string) string {
	GinkgoHelper()
	var value string
	Eventually(func(g Gomega, ctx context.Context) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		value = cm.Data["value"]
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	return value
}
