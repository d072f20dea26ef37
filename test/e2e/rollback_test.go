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
	"k8s.io/apimachinery/pkg/util/rand"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
)

// Issue 34's rollback that holds: a GitOpsDeploymentHold keeps an automated deployment at a
// record's revision while new commits arrive, with a Held condition that says who, when and
// why, until it is deleted (released).
var _ = Describe("Rollback that holds", Ordered, func() {
	var (
		ns, dir          string
		commitA, commitC string
		argo             argoclient.Interface
		records          func(g Gomega, ctx context.Context) []managedv1alpha1.DeploymentRecord
	)
	const reason = "v2 breaks checkout"

	cmValue := func(ctx context.Context) (string, error) { return configMapValue(ctx, ns, "held-cm") }
	appName := func(ctx context.Context) string {
		return "gitopsdepl-" + string(getDeployment(ctx, ns, "web").UID)
	}
	heldCondition := func(ctx context.Context) (*managedv1alpha1.GitOpsDeploymentCondition, error) {
		d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for i := range d.Status.Conditions {
			if d.Status.Conditions[i].Type == managedv1alpha1.GitOpsDeploymentConditionHeld {
				return &d.Status.Conditions[i], nil
			}
		}
		return nil, nil
	}

	BeforeAll(func(ctx context.Context) {
		ns = "e2e-hold-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		bindClusterRole(ctx, ns, "view", "bob")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		waitCanI("bob", "get", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		argo = argoclient.NewForConfigOrDie(adminConfig)
		dir = GinkgoT().TempDir()
		records = func(g Gomega, ctx context.Context) []managedv1alpha1.DeploymentRecord {
			list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "spec.gitOpsDeploymentName=web"})
			g.Expect(err).NotTo(HaveOccurred())
			items := list.Items
			for i := 1; i < len(items); i++ { // oldest first
				for j := i; j > 0 && items[j].Spec.StartedAt.Before(&items[j-1].Spec.StartedAt); j-- {
					items[j], items[j-1] = items[j-1], items[j]
				}
			}
			return items
		}
	})

	It("deploys v1, then v2 of the branch under automated sync, with a record each", func(ctx context.Context) {
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("held-cm", "v1")})
		commitA = gitIn(dir, "rev-parse", "HEAD")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: automated
`, ns, repo), "create", "-f", "-")
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))

		commitB := gitCommit(dir, map[string]string{"app/cm.yaml": configMap("held-cm", "v2")})
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v2"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			got := records(g, ctx)
			g.Expect(got).To(HaveLen(2))
			g.Expect(got[0].Spec.Revision).To(Equal(commitA))
			g.Expect(got[1].Spec.Revision).To(Equal(commitB))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("rolls back to the first record's revision when alice holds it there, and says who, when and why", func(ctx context.Context) {
		first := records(Default, ctx)[0]
		// heldBy is the server's: alice's name, whatever she sends.
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentHold
metadata: {name: web, namespace: %s}
spec:
  revision: %s
  deploymentRecord: %s
  reason: %q
  heldBy: mallory
`, ns, first.Spec.Revision, first.Name, reason), "create", "-f", "-")
		hold, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(hold.Spec.HeldBy).To(Equal("alice"))

		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := heldCondition(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(managedv1alpha1.GitOpsConditionStatusTrue))
			g.Expect(c.Reason).To(Equal(managedv1alpha1.GitOpsDeploymentReasonRolledBack))
			g.Expect(c.Message).To(ContainSubstring(commitA))
			g.Expect(c.Message).To(ContainSubstring(first.Name))
			g.Expect(c.Message).To(ContainSubstring(`by "alice"`))
			g.Expect(c.Message).To(ContainSubstring(hold.CreationTimestamp.UTC().Format(time.RFC3339)))
			g.Expect(c.Message).To(ContainSubstring(reason))
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Status.Holding).To(BeTrue(), "%+v", h.Status)
			g.Expect(h.Status.ObservedGeneration).To(Equal(h.Generation))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// The sync back to the first commit is recorded as the rollback alice made.
		Eventually(func(g Gomega, ctx context.Context) {
			got := records(g, ctx)
			g.Expect(got).To(HaveLen(3))
			g.Expect(got[2].Spec.Revision).To(Equal(commitA))
			g.Expect(got[2].Spec.Trigger.Type).To(Equal(managedv1alpha1.DeploymentTriggerRollback))
			g.Expect(got[2].Spec.Trigger.User).To(Equal("alice"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// The deployment's own spec is untouched: the hold overrides it in Argo CD only.
		Expect(getDeployment(ctx, ns, "web").Spec.Source.TargetRevision).To(BeEmpty())
		Expect(must("alice", "get", "gitopsdeploymentholds", "-n", ns)).To(
			MatchRegexp(`NAME\s+REVISION\s+RECORD\s+HELDBY\s+AGE\nweb\s+` + commitA[:7] + `\s+` + first.Name + `\s+alice\s`))
	})

	It("stays at v1 while a new commit arrives and Argo CD looks at the repository again", func(ctx context.Context) {
		commitC = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("held-cm", "v3")})
		after := time.Now().Add(-time.Second) // reconciledAt is kept to the second
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		// Argo CD has refreshed after the commit: it took the refresh annotation off, and
		// reconciled the Application since.
		Eventually(func(g Gomega, ctx context.Context) {
			app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, appName(ctx), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(app.Annotations).NotTo(HaveKey("argocd.argoproj.io/refresh"))
			g.Expect(app.Status.ReconciledAt).NotTo(BeNil())
			g.Expect(app.Status.ReconciledAt.Time).To(BeTemporally(">=", after))
			g.Expect(app.Spec.Source.TargetRevision).To(Equal(commitA))
			g.Expect(app.Status.Sync.Revision).To(Equal(commitA))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(cmValue).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Equal("v1"))
		Expect(getDeployment(ctx, ns, "web").Status.Sync.Revision).To(Equal(commitA))
	})

	It("refuses a hold to a viewer (bob) and to a user of another tenant (carol)", func() {
		hold := fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentHold
metadata: {name: other, namespace: %s}
spec: {revision: %s}
`, ns, commitC)
		for _, user := range []string{"bob", "carol"} {
			stderr := fails(user, hold, "create", "-f", "-")
			Expect(stderr).To(ContainSubstring("forbidden"), user)
			Expect(stderr).To(ContainSubstring(`resource "gitopsdeploymentholds"`), user)
		}
		Expect(fails("bob", "", "delete", "gitopsdeploymenthold", "web", "-n", ns)).To(ContainSubstring("forbidden"))
		Expect(must("bob", "get", "gitopsdeploymenthold", "web", "-n", ns)).To(ContainSubstring("alice"))
	})

	It("deploys the newest commit once alice releases the hold, and the Held condition goes", func(ctx context.Context) {
		must("alice", "delete", "gitopsdeploymenthold", "web", "-n", ns)
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := heldCondition(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c).To(BeNil())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// Refreshed again until the branch resolves to the newest commit: the repo-server may
		// answer from its cache of ls-remote at first.
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v3"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			g.Expect(records(g, ctx)).To(ContainElement(HaveField("Spec.Revision", commitC)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// The hold of a binding's GitOpsDeployment: the binding controller rewrites the deployment's
// targetRevision for every promotion, and the hold keeps what Argo CD deploys all the same.
var _ = Describe("Rollback that holds a binding's deployment", Ordered, func() {
	const app, env, component, binding = "shop", "dev", "web", "shop-dev"
	var (
		ns, repoURL, commitV1, commitV2 string
		deploymentName                  = snapshotenvironmentbinding.DeploymentName(binding, app, env, component)
	)
	cmValue := func(ctx context.Context) (string, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "held-bcm", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cm.Data["value"], nil
	}
	// generateRepository plays application-service: the binding's repository is at commit.
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

	BeforeAll(func(ctx context.Context) {
		dir := GinkgoT().TempDir()
		repoURL = "file://" + gitRepository(dir, map[string]string{"web/cm.yaml": configMap("held-bcm", "v1")})
		commitV1 = gitIn(dir, "rev-parse", "HEAD")
		commitV2 = gitCommit(dir, map[string]string{"web/cm.yaml": configMap("held-bcm", "v2")})
		ns = "e2e-hold-binding-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
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

	It("keeps the held commit deployed while a promotion rewrites the deployment, until released", func(ctx context.Context) {
		bindings := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
		_, err := bindings.Create(ctx, &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding},
			Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "snap-1",
				Components: []appstudiov1alpha1.BindingComponent{{Name: component}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		generateRepository(ctx, commitV1)
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))

		By("alice holding the binding's deployment at snap-1's commit")
		_, err = gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Name: deploymentName},
			Spec:       managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: commitV1, Reason: "snap-2 is bad"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, deploymentName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Status.Holding).To(BeTrue())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("promoting snap-2 through the binding: the deployment's spec moves, what runs does not")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := bindings.Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			b.Spec.Snapshot = "snap-2"
			_, err = bindings.Update(ctx, b, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		generateRepository(ctx, commitV2)
		Eventually(func(ctx context.Context) string {
			return getDeployment(ctx, ns, deploymentName).Spec.Source.TargetRevision
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(commitV2))
		Consistently(cmValue).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Equal("v1"))
		d := getDeployment(ctx, ns, deploymentName)
		Expect(d.Status.Sync.Revision).To(Equal(commitV1))
		Expect(d.Status.Conditions).To(ContainElement(And(HaveField("Type", managedv1alpha1.GitOpsDeploymentConditionHeld),
			HaveField("Message", ContainSubstring("snap-2 is bad")))))

		By("releasing it: the promoted commit runs")
		Expect(gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Delete(ctx, deploymentName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v2"))
	})
})
