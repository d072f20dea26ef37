//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// shellBlocks are the ```sh blocks of a Markdown file, in order.
func shellBlocks(path string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	re := regexp.MustCompile("(?ms)^```sh\n(.*?)^```\n")
	var blocks []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// runDocumented runs each block with bash as the stack's admin would, kubectl on its PATH,
// with every "team-a" the documentation names replaced by namespace. A block that fails is
// retried for a while: some wait for a controller (a PromotionRun the service creates).
func runDocumented(ctx context.Context, blocks []string, namespace string) {
	GinkgoHelper()
	bin := GinkgoT().TempDir()
	Expect(os.Symlink(kubectl, filepath.Join(bin, "kubectl"))).To(Succeed())
	for i, block := range blocks {
		script := strings.ReplaceAll(block, "team-a", namespace)
		Eventually(func(g Gomega) {
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfig("admin"))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			g.Expect(cmd.Run()).To(Succeed(), "block %d:\n%s\n%s", i+1, script, out.String())
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	}
}

var _ = Describe("documented commands", func() {
	It("of docs/promotion.md run as written", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-docs-promo-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		blocks := shellBlocks("../../docs/promotion.md")
		Expect(len(blocks)).To(BeNumerically(">=", 8), "the worked examples")
		runDocumented(ctx, blocks, ns)

		By("what they made is there")
		Expect(must("admin", "-n", ns, "get", "promotiongate", "prod", "-o", "jsonpath={.spec.freezes[0].reason}")).To(Equal("Quarterly close"))
		Expect(must("admin", "-n", ns, "get", "promotionapprovals", "-o", "jsonpath={.items[*].spec.username}")).NotTo(BeEmpty())
		stdout, _, err := run("admin", "", "-n", ns, "get", "environmenthold", "staging")
		Expect(err).To(HaveOccurred(), "the hold was released: %s", stdout)
	})
})
