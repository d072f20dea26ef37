//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// kubectl gitops rollback and release, built and run as a user runs them, against the real
// API, agent and Argo CD: the default target is the sync before the current one.
var _ = Describe("kubectl gitops rollback and release", Ordered, func() {
	var ns, dir, commitA, commitB string

	rbPlugin := func(user string, args ...string) (string, string, int) {
		GinkgoHelper()
		return runPlugin(user, ns, args...)
	}
	cmValue := func(ctx context.Context) (string, error) { return configMapValue(ctx, ns, "plugin-held-cm") }
	// untilValue refreshes the Application hard (as a Git webhook would) until the ConfigMap
	// has value: a normal refresh may resolve the branch from the repo-server's cache.
	untilValue := func(ctx context.Context, value string) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(cmValue(ctx)).To(Equal(value))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	}

	BeforeAll(func(ctx context.Context) {
		ns = "e2e-plugin-rb-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		bindClusterRole(ctx, ns, "view", "carol")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		waitCanI("carol", "list", "deploymentrecords.managed-gitops.redhat.com", ns)
		dir = GinkgoT().TempDir()
	})

	It("rolls an automated deployment back to the sync before the current one, and releases it", func(ctx context.Context) {
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("plugin-held-cm", "v1")})
		commitA = gitIn(dir, "rev-parse", "HEAD")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: automated
`, ns, repo), "create", "-f", "-")
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		commitB = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("plugin-held-cm", "v2")})
		untilValue(ctx, "v2")
		Eventually(func(g Gomega, ctx context.Context) {
			list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(2))
			for _, r := range list.Items {
				g.Expect(r.Status.Phase).To(BeEquivalentTo("Succeeded"))
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("carol, a viewer, may not roll it back")
		_, stderr, code := rbPlugin("carol", "rollback", "web")
		Expect(code).To(Equal(1))
		Expect(stderr).To(ContainSubstring(`Error: you may not create gitopsdeploymentholds.managed-gitops.redhat.com in namespace "` + ns + `"`))

		By("alice rolls it back, to commit A by default")
		stdout, stderr, code := rbPlugin("alice", "rollback", "web", "--reason", "v2 breaks checkout")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(Equal("gitopsdeploymenthold.managed-gitops.redhat.com/web rolled back\n"))
		hold, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(hold.Spec.Revision).To(Equal(commitA))
		Expect(hold.Spec.HeldBy).To(Equal("alice"))
		Expect(hold.Spec.Reason).To(Equal("v2 breaks checkout"))
		Eventually(cmValue).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))

		By("alice releases it: the branch's newest commit again")
		stdout, stderr, code = rbPlugin("alice", "release", "web")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(Equal("gitopsdeploymenthold.managed-gitops.redhat.com/web released\n"))
		untilValue(ctx, "v2")
		Eventually(func(ctx context.Context) string { return getDeployment(ctx, ns, "web").Status.Sync.Revision }).
			WithContext(ctx).WithTimeout(time.Minute).Should(Equal(commitB))
		_, stderr, code = rbPlugin("alice", "release", "web")
		Expect(code).To(Equal(1))
		Expect(stderr).To(Equal(`Error: gitopsdeployment "web" in namespace "` + ns + `" is not held: there is no gitopsdeploymenthold "web"` + "\n"))
	})
})
