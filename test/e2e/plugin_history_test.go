//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
)

// kubectl gitops history, run as a user runs it (a process with the tenant's kubeconfig)
// against the real API, agent and Argo CD: alice's two syncs of a manual deployment are two
// lines with her name, newest first, and carol, of another namespace, is refused the records.
var _ = Describe("kubectl gitops history", func() {
	It("lists a deployment's syncs newest first with who started them, and names the refused list", func(ctx context.Context) {

		ns := "e2e-history-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "list", "deploymentrecords.managed-gitops.redhat.com", ns)
		dir := GinkgoT().TempDir()
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("history-cm", "v1")})
		commit := gitIn(dir, "rev-parse", "HEAD")

		By("alice creates a manual deployment and syncs it twice")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: manual
`, ns, repo), "create", "-f", "-")
		for i := 0; i < 2; i++ {
			stdout, stderr, code := runPlugin("alice", ns, "sync", "web", "--wait", "--timeout=3m")
			Expect(code).To(Equal(0), "sync %d: %s%s", i+1, stdout, stderr)
		}

		By("history: two lines, each with her name and the commit, newest first")
		var lines []string
		Eventually(func(g Gomega) {
			stdout, stderr, code := runPlugin("alice", ns, "history", "web")
			g.Expect(code).To(Equal(0), stderr)
			lines = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			g.Expect(lines).To(HaveLen(3))
			g.Expect(strings.Fields(lines[0])).To(Equal([]string{"REVISION", "TRIGGER", "USER", "PHASE", "STARTED", "DURATION", "RECORD"}))
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				g.Expect(f).To(HaveLen(7), l)
				g.Expect(f[:4]).To(Equal([]string{commit[:7], "SyncRun", "alice", "Succeeded"}), l)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		newer, older := strings.Fields(lines[1])[4], strings.Fields(lines[2])[4]
		Expect(newer >= older).To(BeTrue(), "newest first: %s then %s", newer, older)

		By("--audit: her creation of the deployment, under the syncs")
		stdout, stderr, code := runPlugin("alice", ns, "history", "web", "--audit")
		Expect(code).To(Equal(0), stderr)
		Expect(stdout).To(MatchRegexp(`(?m)^-\s+write: create\s+alice\s+-\s+\S+\s+-\s+rv \d+$`))
		Expect(strings.Index(stdout, "write: create")).To(BeNumerically(">", strings.LastIndex(stdout, "SyncRun")))

		By("carol, of another namespace, is refused the records, with the verb and the resource")
		_, stderr, code = runPlugin("carol", ns, "history", "web")
		Expect(code).To(Equal(1))
		Expect(stderr).To(Equal(fmt.Sprintf(`Error: you may not list deploymentrecords.managed-gitops.redhat.com in namespace %q: `+
			`User "carol" cannot list resource "deploymentrecords" in API group "managed-gitops.redhat.com" in the namespace %q`+"\n", ns, ns)))

		By("an unknown deployment is named")
		_, stderr, code = runPlugin("alice", ns, "history", "nope")
		Expect(code).To(Equal(1))
		Expect(stderr).To(Equal(fmt.Sprintf("Error: gitopsdeployment \"nope\" not found in namespace %q\n", ns)))
	})
})
