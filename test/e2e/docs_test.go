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
			out, err := shell(ctx, script, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "KUBECONFIG=" + kubeconfig("admin")})
			g.Expect(err).NotTo(HaveOccurred(), "block %d:\n%s\n%s", i+1, script, out)
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	}
}

// runAsReader runs the blocks one after the other in one bash, as a reader who pastes them into
// one terminal in a clone where `make run` is up: its working folder has .local (the stack's
// state, with the kubeconfigs) and bin (the built tools), HOME is empty (no Git identity, no
// kubeconfig) and KUBECONFIG is unset. It returns what the blocks printed.
func runAsReader(ctx context.Context, blocks []string, replace *strings.Replacer) string {
	GinkgoHelper()
	work := GinkgoT().TempDir()
	Expect(os.Symlink(stackDir, filepath.Join(work, ".local"))).To(Succeed())
	Expect(os.Symlink(filepath.Dir(filepath.Dir(kubectl)), filepath.Join(work, "bin"))).To(Succeed())
	var script strings.Builder
	for i, block := range blocks {
		fmt.Fprintf(&script, "echo '--- block %d' >&2\n%s\n", i+1, replace.Replace(block))
	}
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	cmd.Dir = work
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+GinkgoT().TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	Expect(cmd.Run()).To(Succeed(), "%s", out.String())
	return out.String()
}

var _ = Describe("documented commands", func() {
	It("of docs/getting-started.md run as written, in one shell, and say what the page says", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-docs-start-%d", time.Now().UnixNano()%100000)
		demo := filepath.Join(GinkgoT().TempDir(), "demo")
		DeferCleanup(deleteAllDeployments, ns)
		blocks := shellBlocks("../../docs/getting-started.md")
		Expect(len(blocks)).To(BeNumerically(">=", 7), "the steps of the page")
		out := runAsReader(ctx, blocks, strings.NewReplacer("team-a", ns, "/tmp/demo", demo))

		By("each step printed what the page says it prints")
		rev := func(r string) string {
			out, err := exec.Command("git", "-C", demo, "rev-parse", r).Output()
			Expect(err).NotTo(HaveOccurred())
			return strings.TrimSpace(string(out))
		}
		for _, want := range []string{
			"True", // the APIServices are Available
			"yes",  // alice may create GitOpsDeployments
			"hi\n", "hello\n",
			// The binding's message, then the ConfigMap web it deployed (step 5). Not read after
			// the page's clean-up, which deletes the binding and with it what it deployed.
			"1 of 1 components deployed\n1\n",
		} {
			Expect(out).To(ContainSubstring(want))
		}
		// The revision printed in step 4 is the commit it pinned; the web component's
		// commit came after it.
		Expect(out).To(ContainSubstring("\n" + rev("HEAD~1") + "\n"))
		_, _, err := run("admin", "", "-n", ns, "get", "configmap", "hello")
		Expect(err).To(HaveOccurred(), "the deleted deployment's ConfigMap is gone")
	})

	It("of the README's two minutes run as written and print what it shows", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-docs-readme-%d", time.Now().UnixNano()%100000)
		DeferCleanup(deleteAllDeployments, ns)
		blocks := shellBlocks("../../README.md")
		Expect(len(blocks)).To(BeNumerically(">=", 2))
		Expect(blocks[0]).To(ContainSubstring("make run"), "the first block is the two commands, which the suite's own stack stands in for")
		out := runAsReader(ctx, blocks[1:2], strings.NewReplacer("hello-team", ns, "/tmp/hello", filepath.Join(GinkgoT().TempDir(), "hello")))
		Expect(out).To(MatchRegexp(`(?m)^hello\s+Synced\s+Healthy\s`))
		Expect(out).To(ContainSubstring("\nhi\n"))
	})

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
