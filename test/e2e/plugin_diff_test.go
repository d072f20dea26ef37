//go:build e2e

package e2e

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
)

// kubectl gitops diff: the two newest records of a deployment, as a person reads them and as
// YAML, run as the plugin's users run it.
var _ = Describe("kubectl gitops diff", func() {
	It("shows the changed field of the two newest records, a Secret's only as markers", func(ctx context.Context) {
		ns := "e2e-plugin-diff-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "get", "deploymentrecords.managed-gitops.redhat.com", ns)

		gitopsPlugin := func(user string, args ...string) (string, string, int) {
			GinkgoHelper()
			return runPlugin(user, ns, args...)
		}

		recA, recB := twoRecordedCommits(ctx, ns)

		By("alice's diff of the two newest records")
		text, stderr, code := gitopsPlugin("alice", "diff", "web")
		Expect(code).To(Equal(0), stderr)
		Expect(text).To(HavePrefix("gitopsdeployment web: " + recA.Name + " (" + recA.Status.ManifestsDigest + ") → " + recB.Name))
		// Objects as rendered: Git's have no namespace (Argo CD puts them in the destination's).
		Expect(text).To(ContainSubstring("~ ConfigMap diff-cm\n    .data.color: \"blue\" → \"red\"\n"))
		Expect(text).To(MatchRegexp(`~ Secret diff-secret\n    \.data\.password: "redacted:[0-9a-f]{16}" → "redacted:[0-9a-f]{16}"\n`))
		Expect(strings.Count(text, "\n    ")).To(Equal(2), text)
		Expect(text).NotTo(ContainSubstring("diff-pass"))

		By("the same as YAML, with the records named")
		yaml, stderr, code := gitopsPlugin("alice", "diff", "web", "--from", recA.Name, "--to", recB.Name, "-o", "yaml")
		Expect(code).To(Equal(0), stderr)
		Expect(yaml).To(ContainSubstring("kind: DeploymentRecordDiff"))
		Expect(yaml).To(ContainSubstring("path: .data.color"))

		By("carol, of another namespace, may not")
		_, stderr, code = gitopsPlugin("carol", "diff", "web")
		Expect(code).To(Equal(1))
		Expect(stderr).To(ContainSubstring("you may not list deploymentrecords.managed-gitops.redhat.com"))
	})
})
