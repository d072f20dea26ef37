//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// "What would change if this deployed now" (issue 34): a manual deployment synced at commit A,
// commit B pushed and not synced; the diff of its record with what Git holds now, through a
// DeploymentPreview the agent renders with Argo CD's repo-server.
var _ = Describe("Deployment previews", func() {
	It("diff what was deployed with what Git holds now, a Secret's values only redacted, for editors; viewers read them", func(ctx context.Context) {
		ns := "e2e-preview-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		bindClusterRole(ctx, ns, "view", "bob")
		waitCanI("alice", "create", "deploymentpreviews.managed-gitops.redhat.com", ns)
		waitCanI("bob", "get", "deploymentpreviews.managed-gitops.redhat.com", ns)
		plain := []string{"diff-pass-one", "diff-pass-two"}
		for _, p := range append([]string{}, plain...) {
			plain = append(plain, base64.StdEncoding.EncodeToString([]byte(p)))
		}
		previews := gitops.ManagedGitopsV1alpha1().DeploymentPreviews(ns)

		By("a manual deployment synced at commit A")
		dir := GinkgoT().TempDir()
		repo := "file://" + gitRepository(dir, diffFixture("blue", "diff-pass-one"))
		commitA := gitIn(dir, "rev-parse", "HEAD")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: manual
`, ns, repo), "create", "-f", "-")
		createSyncRun(ctx, ns, "sync-a", "web", "")
		var recA *managedv1alpha1.DeploymentRecord
		Eventually(func(g Gomega, ctx context.Context) {
			list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.gitOpsDeploymentName=web"})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(1))
			recA = &list.Items[0]
			g.Expect(recA.Spec.Revision).To(Equal(commitA))
			g.Expect(recA.Status.Phase).To(Equal(managedv1alpha1.DeploymentRecordSucceeded))
			g.Expect(recA.Status.ManifestsDigest).To(HavePrefix("sha256:"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("commit B pushed (red, another password), not synced")
		commitB := gitCommit(dir, diffFixture("red", "diff-pass-two"))

		By("alice's kubectl gitops diff web --git: exactly the color and the Secret's markers")
		text, stderr, code := runPlugin("alice", ns, "diff", "web", "--git", "--timeout", "2m")
		Expect(code).To(Equal(0), stderr)
		Expect(stderr).To(ContainSubstring("waiting up to 2m0s for the agent to render HEAD of gitopsdeployment web from Git"))
		Expect(text).To(HavePrefix("gitopsdeployment web: " + recA.Name + " (" + recA.Status.ManifestsDigest + ") → Git HEAD (" + commitB + ")\n"))
		Expect(text).To(ContainSubstring("~ ConfigMap diff-cm\n    .data.color: \"blue\" → \"red\"\n"))
		markers := regexp.MustCompile(`~ Secret diff-secret\n    \.data\.password: "(redacted:[0-9a-f]{16})" → "(redacted:[0-9a-f]{16})"\n`).FindStringSubmatch(text)
		Expect(markers).To(HaveLen(3), text)
		Expect(markers[1]).NotTo(Equal(markers[2]), text)
		Expect(strings.Count(text, "\n    ")).To(Equal(2), text)
		for _, p := range plain {
			Expect(text).NotTo(ContainSubstring(p))
		}

		By("the plugin's preview is gone afterwards")
		list, err := previews.List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(BeEmpty())

		By("a preview created with client-go is rendered at commit B, Secrets redacted, the TTL said")
		p, err := previews.Create(ctx, &managedv1alpha1.DeploymentPreview{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-preview-"},
			Spec: managedv1alpha1.DeploymentPreviewSpec{GitOpsDeploymentName: "web"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			p, err = previews.Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(managedv1alpha1.DeploymentPreviewRendered), p.Status.Message)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(p.Status.Revision).To(Equal(commitB))
		Expect(p.Status.Manifests).To(HaveLen(2))
		Expect(p.Status.Message).To(ContainSubstring("--preview-ttl"))
		yaml := must("bob", "get", "deploymentpreview", p.Name, "-n", ns, "-o", "yaml")
		Expect(yaml).To(ContainSubstring("redacted:"))
		for _, s := range plain {
			Expect(yaml).NotTo(ContainSubstring(s))
		}

		By("bob, who views the namespace, lists previews and diffs one, but may not create one")
		Expect(must("bob", "get", "deploymentpreviews", "-n", ns)).To(MatchRegexp(`NAME\s+DEPLOYMENT\s+REF\s+REVISION\s+PHASE\s+AGE\n` +
			p.Name + `\s+web\s+` + commitB[:7] + `\s+Rendered`))
		file := filepath.Join(GinkgoT().TempDir(), "diff.json")
		Expect(os.WriteFile(file, []byte(fmt.Sprintf(`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"DeploymentRecordDiff","from":%q}`, recA.Name)), 0o600)).To(Succeed())
		out := must("bob", "create", "--raw", fmt.Sprintf("/apis/managed-gitops.redhat.com/v1alpha1/namespaces/%s/deploymentpreviews/%s/diff", ns, p.Name), "-f", file)
		Expect(out).To(ContainSubstring(`"path":".data.color"`))
		stderr = fails("bob", fmt.Sprintf(`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"DeploymentPreview","metadata":{"name":"bobs","namespace":%q},`+
			`"spec":{"gitOpsDeploymentName":"web"}}`, ns), "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("forbidden"))
		Expect(stderr).To(ContainSubstring(`cannot create resource "deploymentpreviews"`))
		_, stderr, code = runPlugin("bob", ns, "diff", "web", "--git")
		Expect(code).To(Equal(1))
		Expect(stderr).To(ContainSubstring("you may not create deploymentpreviews.managed-gitops.redhat.com"))

		By("alice may not write a preview's status: the agent's alone")
		stderr = fails("alice", "", "patch", "deploymentpreview", p.Name, "-n", ns, "--subresource=status", "--type=merge",
			"-p", `{"status":{"manifestsDigest":"sha256:forged"}}`)
		Expect(stderr).To(ContainSubstring("forbidden"))

		By("carol, of another namespace, may not list them")
		Expect(fails("carol", "", "get", "deploymentpreviews", "-n", ns)).To(ContainSubstring("forbidden"))
	})
})
