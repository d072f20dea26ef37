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
	"k8s.io/apimachinery/pkg/util/rand"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
)

// Issue 34's rollback that holds "until a newer commit arrives": a GitOpsDeploymentHold with
// releaseOn NewCommit is released by the agent itself once the deployment's branch moves past
// the commit that was current at the rollback.
var _ = Describe("Rollback that holds until a newer commit", Ordered, func() {
	var (
		ns, dir          string
		commitB, commitC string
	)
	cmValue := func(ctx context.Context) (string, error) { return configMapValue(ctx, ns, "newer-cm") }

	BeforeAll(func(ctx context.Context) {
		ns = "e2e-newer-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		dir = GinkgoT().TempDir()
	})

	It("refuses an unknown releaseOn with its field path", func() {
		stderr := fails("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentHold
metadata: {name: web, namespace: %s}
spec: {revision: main, releaseOn: Later}
`, ns), "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("spec.releaseOn"))
		Expect(stderr).To(ContainSubstring(`Unsupported value: "Later"`))
	})

	It("holds at v1 after v2, records v2 as the base, and releases itself when v3 arrives", func(ctx context.Context) {
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("newer-cm", "v1")})
		commitA := gitIn(dir, "rev-parse", "HEAD")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app, targetRevision: main}
  type: automated
`, ns, repo), "create", "-f", "-")
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		commitB = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("newer-cm", "v2")})
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v2"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())

		By("alice holding it at v1 until a newer commit")
		_, err := gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: commitA, Reason: "v2 is broken",
				ReleaseOn: managedv1alpha1.HoldReleaseNewCommit},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		Eventually(func(g Gomega, ctx context.Context) {
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Status.Holding).To(BeTrue(), "%+v", h.Status)
			g.Expect(h.Status.BaseRevision).To(Equal(commitB), "%+v", h.Status)
			g.Expect(h.Status.Message).To(ContainSubstring("released when main moves past " + commitB))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// A plain hold defaults to Manual; this one kept what alice asked.
		Expect(must("alice", "get", "gitopsdeploymenthold", "web", "-n", ns, "-o", "jsonpath={.spec.releaseOn}")).To(Equal("NewCommit"))

		By("v3 arriving on the branch")
		commitC = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("newer-cm", "v3")})
		Eventually(func(ctx context.Context) bool {
			_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v3"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			d := getDeployment(ctx, ns, "web")
			g.Expect(d.Status.Conditions).NotTo(ContainElement(HaveField("Type", managedv1alpha1.GitOpsDeploymentConditionHeld)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=GitOpsDeployment,involvedObject.name=web,reason=" + gitopsdeployment.EventHoldReleased})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(ContainElement(HaveField("Message",
				"released: a newer commit "+commitC+" arrived after "+commitB)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	// The base is the branch's commit when alice asked for the hold as it is now: a hold made, or
	// moved, after the branch advanced waits for the next commit, and a Manual hold has none.
	It("takes the base again for a hold made, switched or moved after the branch advanced", func(ctx context.Context) {
		holds := gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns)
		holdStatus := func(g Gomega, ctx context.Context) *managedv1alpha1.GitOpsDeploymentHold {
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Status.ObservedGeneration).To(Equal(h.Generation), "%+v", h.Status)
			return h
		}
		// stays checks, for longer than the agent's NewCommit interval (10 s in the stack), that
		// the hold is not released and the ConfigMap stays at value.
		stays := func(ctx context.Context, value string) {
			GinkgoHelper()
			Consistently(func(g Gomega, ctx context.Context) {
				_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred(), "the hold was released")
				g.Expect(cmValue(ctx)).To(Equal(value))
			}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		}
		commitA := gitIn(dir, "rev-parse", "HEAD~2")

		By("alice holding it at v1 again, until a newer commit, after v3 arrived: the base is v3")
		_, err := holds.Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: commitA, Reason: "v3 is broken too",
				ReleaseOn: managedv1alpha1.HoldReleaseNewCommit},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		Eventually(func(g Gomega, ctx context.Context) {
			h := holdStatus(g, ctx)
			g.Expect(h.Status.Holding).To(BeTrue(), "%+v", h.Status)
			g.Expect(h.Status.BaseRevision).To(Equal(commitC), "%+v", h.Status)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		stays(ctx, "v1")

		By("alice switching it to Manual: no base")
		Eventually(func(g Gomega, ctx context.Context) {
			h, err := holds.Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			h.Spec.ReleaseOn = managedv1alpha1.HoldReleaseManual
			_, err = holds.Update(ctx, h, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			h := holdStatus(g, ctx)
			g.Expect(h.Spec.ReleaseOn).To(Equal(managedv1alpha1.HoldReleaseManual))
			g.Expect(h.Status.BaseRevision).To(BeEmpty(), "%+v", h.Status)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("v4 arriving on the branch: a Manual hold stays")
		commitD := gitCommit(dir, map[string]string{"app/cm.yaml": configMap("newer-cm", "v4")})
		stays(ctx, "v1")

		By("alice moving it to v2 until a newer commit, with kubectl gitops rollback: the base is v4, not v3")
		out, stderr, code := runPlugin("alice", ns, "rollback", "web", "--revision", commitB, "--until-new-commit", "--reason", "v1 lacks the v2 fix")
		Expect(code).To(BeZero(), "stdout %s, stderr %s", out, stderr)
		Eventually(func(g Gomega, ctx context.Context) {
			h := holdStatus(g, ctx)
			g.Expect(h.Spec.Revision).To(Equal(commitB))
			g.Expect(h.Spec.ReleaseOn).To(Equal(managedv1alpha1.HoldReleaseNewCommit))
			g.Expect(h.Status.BaseRevision).To(Equal(commitD), "%+v", h.Status)
			g.Expect(h.Status.Message).To(ContainSubstring("released when main moves past " + commitD))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v2"))
		stays(ctx, "v2")

		By("v5 arriving: released, v5 deploys")
		commitE := gitCommit(dir, map[string]string{"app/cm.yaml": configMap("newer-cm", "v5")})
		Eventually(func(ctx context.Context) bool {
			_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v5"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=GitOpsDeployment,involvedObject.name=web,reason=" + gitopsdeployment.EventHoldReleased})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(ContainElement(HaveField("Message",
				"released: a newer commit "+commitE+" arrived after "+commitD)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})
