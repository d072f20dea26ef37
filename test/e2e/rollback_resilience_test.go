//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Issue 34's hold, with the agent killed while it is in flight: alice's hold is stored, the
// agent dies before or just after acting on it, a newer commit lands and Argo CD (still
// running) is asked to look at the branch. The agent started again must pin the deployment to
// the hold before anything else: an agent that reconciled the deployment before it knew the
// hold would put the Application back on the branch, and Argo CD would deploy the newer commit.
var _ = Describe("Rollback hold survives an agent crash", Ordered, func() {
	var (
		ns, dir, commitA string
		argo             argoclient.Interface
	)
	const reason = "v2 breaks checkout"

	cmValue := func(ctx context.Context) (string, error) { return configMapValue(ctx, ns, "crash-held-cm") }
	application := func(ctx context.Context) (string, error) {
		d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return "gitopsdepl-" + string(d.UID), nil
	}
	appRevision := func(ctx context.Context) (string, error) {
		name, err := application(ctx)
		if err != nil {
			return "", err
		}
		app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if app.Spec.Source == nil {
			return "", nil
		}
		return app.Spec.Source.TargetRevision, nil
	}

	BeforeAll(func(ctx context.Context) {
		ns = "e2e-hold-crash-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		// Registered after the namespace's cleanup, so it runs first: whatever failed, the next
		// specs (and the deployments' cleanup) have an agent.
		DeferCleanup(func() { restartIfKilled("agent") })
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		argo = argoclient.NewForConfigOrDie(adminConfig)
		dir = GinkgoT().TempDir()
	})

	It("pins the deployment to a hold made just before the agent was killed, and never deploys the commit that landed while it was down", func(ctx context.Context) {
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("crash-held-cm", "v1")})
		commitA = gitIn(dir, "rev-parse", "HEAD")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app, targetRevision: main}
  type: automated
`, ns, repo), "create", "-f", "-")
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		gitCommit(dir, map[string]string{"app/cm.yaml": configMap("crash-held-cm", "v2")})
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v2"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())

		By("alice holding it at v1, and the agent SIGKILLed right after the create")
		agentPID := stackPID("agent")
		_, err := gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: commitA, Reason: reason},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		killStackProcess("agent")
		DeferCleanup(func() { restartIfKilled("agent") })
		Eventually(func() error { return syscall.Kill(agentPID, 0) }).WithTimeout(10 * time.Second).
			WithPolling(50 * time.Millisecond).Should(HaveOccurred())
		pinned, err := appRevision(ctx)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("at the kill the Application's targetRevision was %q (pinned before the kill: %v)\n", pinned, pinned == commitA)

		By("v3 landing on the branch while the agent is down, and Argo CD asked for a hard refresh")
		gitCommit(dir, map[string]string{"app/cm.yaml": configMap("crash-held-cm", "v3")})
		// Argo CD deploys the branch's v3 unless the Application was pinned before the kill; either
		// way the world has moved on before the agent comes back.
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			rev, err := appRevision(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			if rev == commitA {
				return
			}
			g.Expect(cmValue(ctx)).To(Equal("v3"), "Argo CD, on the branch, has not deployed v3 yet")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		Expect(syscall.Kill(agentPID, 0)).To(HaveOccurred(), "the agent came back on its own")
		before, _ := cmValue(ctx)
		GinkgoWriter.Printf("with the agent down the ConfigMap is %q\n", before)

		By("the agent started again")
		startStackProcess("agent")
		Expect(stackPID("agent")).NotTo(Equal(agentPID))
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Equal("v1"))
		// Sampled for 30 s: the first v3 fails the spec.
		Consistently(cmValue).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).
			ShouldNot(Equal("v3"), "v3 deployed under alice's hold after the agent's restart")
		Expect(appRevision(ctx)).To(Equal(commitA))
		Eventually(func(g Gomega, ctx context.Context) {
			d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.Conditions).To(ContainElement(And(
				HaveField("Type", managedv1alpha1.GitOpsDeploymentConditionHeld),
				HaveField("Status", managedv1alpha1.GitOpsConditionStatusTrue),
				HaveField("Reason", managedv1alpha1.GitOpsDeploymentReasonRolledBack),
				HaveField("Message", And(ContainSubstring(commitA), ContainSubstring(`by "alice"`), ContainSubstring(reason))))))
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Status.Holding).To(BeTrue(), "%+v", h.Status)
			g.Expect(h.Status.ObservedGeneration).To(Equal(h.Generation))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("alice releasing it: v3 deploys")
		Expect(gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Delete(ctx, "web", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue())
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v3"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			d := getDeployment(ctx, ns, "web")
			g.Expect(d.Status.Conditions).NotTo(ContainElement(HaveField("Type", managedv1alpha1.GitOpsDeploymentConditionHeld)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	// The other side of the same race, made certain: the hold already in effect when the agent
	// dies. Only an agent that reconciles before it knows the hold can deploy the newer commit.
	It("keeps a hold in effect through the agent's restart while a newer commit waits on the branch", func(ctx context.Context) {
		_, err := gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: commitA, Reason: reason},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(appRevision).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Equal(commitA))
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Equal("v1"))

		By("the agent killed, v4 landing on the branch, and Argo CD asked for a hard refresh")
		agentPID := stackPID("agent")
		killStackProcess("agent")
		DeferCleanup(func() { restartIfKilled("agent") })
		gitCommit(dir, map[string]string{"app/cm.yaml": configMap("crash-held-cm", "v4")})
		Eventually(func(g Gomega, ctx context.Context) { hardRefresh(g, ctx, ns, "web") }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(cmValue).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal("v1"))
		Expect(syscall.Kill(agentPID, 0)).To(HaveOccurred(), "the agent came back on its own")

		By("the agent started again: v4 never deploys while the hold stands")
		startStackProcess("agent")
		Consistently(cmValue).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).
			ShouldNot(Equal("v4"), "v4 deployed under alice's hold after the agent's restart")
		Expect(appRevision(ctx)).To(Equal(commitA))

		By("alice releasing it: v4 deploys")
		Expect(gitopsAs("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Delete(ctx, "web", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal("v4"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	})
})
