//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The dashboard's History view in a real headless Chromium: a deployment's timeline of syncs
// (its DeploymentRecords) with who and which commit, a new sync that appears without a
// reload, and a rollback to a record and its release through the page.
var _ = Describe("kubectl gitops dashboard history", Ordered, func() {
	var ns, plugin, dir, repo, commitA, commitB, artifacts string

	// records are web's DeploymentRecords, oldest first.
	records := func(g Gomega, ctx context.Context) []managedv1alpha1.DeploymentRecord {
		list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.gitOpsDeploymentName=web"})
		g.Expect(err).NotTo(HaveOccurred())
		items := list.Items
		for i := 1; i < len(items); i++ {
			for j := i; j > 0 && items[j].Spec.StartedAt.Before(&items[j-1].Spec.StartedAt); j-- {
				items[j], items[j-1] = items[j-1], items[j]
			}
		}
		return items
	}
	// synced waits until web has n records, the newest Succeeded at commit, and returns them.
	synced := func(ctx context.Context, n int, commit string) []managedv1alpha1.DeploymentRecord {
		GinkgoHelper()
		var got []managedv1alpha1.DeploymentRecord
		Eventually(func(g Gomega, ctx context.Context) {
			got = records(g, ctx)
			g.Expect(got).To(HaveLen(n))
			g.Expect(got[n-1].Spec.Revision).To(Equal(commit))
			g.Expect(got[n-1].Status.Phase).To(Equal(managedv1alpha1.DeploymentRecordSucceeded))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		return got
	}

	BeforeAll(func(ctx context.Context) {
		_, err := os.Stat(chromium)
		Expect(err).NotTo(HaveOccurred(), "no %s: hack/host-tools.sh installs Debian's chromium", chromium)
		artifacts = os.Getenv("GITOPS_E2E_ARTIFACTS")
		if artifacts == "" {
			artifacts = filepath.Join(os.TempDir(), "gitops-e2e-artifacts")
		}
		artifacts = filepath.Join(artifacts, fmt.Sprintf("dashboard-history-%d", time.Now().Unix()))
		Expect(os.MkdirAll(artifacts, 0o755)).To(Succeed())

		plugin = pluginBinary()
		ns = "e2e-dash-hist-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		waitCanI("alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", ns)
		dir = GinkgoT().TempDir()
		secret := func(password string) string {
			return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: dash-hist-secret\nstringData:\n  password: " + password + "\n"
		}
		repo = "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("dash-hist-cm", "v1"), "app/secret.yaml": secret("first-secret-value")})
		commitA = gitIn(dir, "rev-parse", "HEAD")
		commitB = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("dash-hist-cm", "v2"), "app/secret.yaml": secret("second-secret-value")})

		By("alice creates web at commit A: its first sync")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app, targetRevision: %s}
  type: automated
`, ns, repo, commitA), "create", "-f", "-")
		synced(ctx, 1, commitA)
	})

	It("shows the timeline live, and rolls back to a record and releases it through the page", func(ctx context.Context) {
		tab := chromeTab()
		chromeDo(tab, chromedp.Navigate(startDashboardAs(plugin, "alice", ns)), chromedp.Evaluate[chromedp.Void](`location.hash = "history"`))
		sel := `.timeline[data-name="web"]`
		Eventually(func() string { return pageText(tab, sel+" ol.records") }).WithTimeout(30 * time.Second).Should(
			MatchRegexp(`Succeeded\s+` + commitA[:7] + `\s+by alice`))
		chromeDo(tab, chromedp.Evaluate[chromedp.Void](`window.e2eMark = "not reloaded"`))

		By("alice moves web to commit B: the second sync appears without a reload, newest first")
		must("alice", "patch", "gitopsdeployment", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"source":{"targetRevision":"`+commitB+`"}}}`)
		recs := synced(ctx, 2, commitB)
		Eventually(func() string { return pageText(tab, sel+" ol.records li:first-child") }).WithTimeout(30 * time.Second).Should(
			MatchRegexp(`Succeeded\s+` + commitB[:7] + `\s+by alice`))
		Expect(pageText(tab, sel+" ol.records li:nth-child(2)")).To(MatchRegexp(`Succeeded\s+` + commitA[:7] + `\s+by alice`))
		Expect(pageText(tab, sel+" ol.records")).To(And(ContainSubstring(recs[0].Name), ContainSubstring(recs[1].Name), ContainSubstring("SpecChange")))
		mark, err := chromedp.Run(tab, chromedp.Evaluate[string](`window.e2eMark || "reloaded"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(mark).To(Equal("not reloaded"))
		pageScreenshot(tab, artifacts, "dashboard-timeline")

		By("alice ticks the two syncs and diffs them: the ConfigMap's changed field, the Secret's only as redaction markers")
		Eventually(func(g Gomega, ctx context.Context) {
			for _, r := range records(g, ctx)[:2] {
				g.Expect(r.Status.ManifestsDigest).To(HavePrefix("sha256:"), "record %s", r.Name)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		chromeDo(tab, chromedp.Click(chromedp.CSS(sel+` li[data-record="`+recs[1].Name+`"] input.pick`)),
			chromedp.Click(chromedp.CSS(sel+` li[data-record="`+recs[0].Name+`"] input.pick`)),
			chromedp.Click(chromedp.CSS(sel+` button.compare`)))
		cm := `#diff-view .resource-diff[data-resource="ConfigMap/dash-hist-cm"]`
		Eventually(func() string { return pageText(tab, cm) }).WithTimeout(30 * time.Second).Should(
			MatchRegexp(`Modified\s+ConfigMap dash-hist-cm[\s\S]*\.data\.value\s+"v1"\s+"v2"`))
		Expect(pageText(tab, "#diff-view .digest")).To(MatchRegexp(recs[0].Name + ` \(sha256:[0-9a-f]+\) → ` + recs[1].Name + ` \(sha256:[0-9a-f]+\)`))
		Expect(pageText(tab, `#diff-view .resource-diff[data-resource="Secret/dash-hist-secret"]`)).To(And(
			ContainSubstring(".stringData.password"), ContainSubstring("redacted:")))
		Expect(pageText(tab, "body")).NotTo(Or(ContainSubstring("first-secret-value"), ContainSubstring("second-secret-value")))
		pageScreenshot(tab, artifacts, "dashboard-diff")
		chromeDo(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "history"`))

		By("alice rolls web back to the first record in the page (confirmed): the hold is hers, and the page says held")
		chromeDo(tab, chromedp.Click(chromedp.CSS(sel+` li[data-record="`+recs[0].Name+`"] button.rollback`)))
		Eventually(func(g Gomega, ctx context.Context) {
			h, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.Spec.Revision).To(Equal(commitA))
			g.Expect(h.Spec.DeploymentRecord).To(Equal(recs[0].Name))
			g.Expect(h.Spec.HeldBy).To(Equal("alice"))
			g.Expect(h.Spec.Reason).To(Equal("from the e2e suite"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { return pageText(tab, "#notice") }).WithTimeout(10 * time.Second).Should(ContainSubstring("held at " + commitA[:7]))
		Eventually(func() string { return pageText(tab, sel+" .hold") }).WithTimeout(30 * time.Second).Should(
			ContainSubstring("held at " + commitA[:7] + " by alice: from the e2e suite"))
		Eventually(func(ctx context.Context) string {
			cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "dash-hist-cm", metav1.GetOptions{})
			if err != nil {
				return ""
			}
			return cm.Data["value"]
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("v1"))
		chromeDo(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "deployments"`))
		Eventually(func() string { return pageText(tab, `.deployment[data-name="web"] .hold`) }).WithTimeout(10 * time.Second).Should(
			ContainSubstring("held at " + commitA[:7] + " by alice"))
		chromeDo(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "history"`))
		Eventually(func() string { return pageText(tab, sel+" .hold") }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		pageScreenshot(tab, artifacts, "dashboard-timeline-held")

		By("alice releases it in the page (confirmed): the hold is gone, and so is held")
		chromeDo(tab, chromedp.Click(chromedp.CSS(sel+` .hold button.release`)))
		Eventually(func(ctx context.Context) bool {
			_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		Eventually(func() string { return pageText(tab, sel) }).WithTimeout(30 * time.Second).ShouldNot(ContainSubstring("held at"))
		mark, err = chromedp.Run(tab, chromedp.Evaluate[string](`window.e2eMark || "reloaded"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(mark).To(Equal("not reloaded"))
	})
})
