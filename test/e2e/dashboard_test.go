//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// chromium is Debian's package, which hack/host-tools.sh installs.
const chromium = "/usr/bin/chromium"

// `kubectl gitops dashboard` run as a user runs it, and its page driven in a real headless
// Chromium: the Environment graph with the Snapshot in each, a deployment's health with its
// resources, a change that appears without a reload, an approval through the page, and
// nothing of a namespace the user may not read. Screenshots of the main views are written to
// the artifact folder (GITOPS_E2E_ARTIFACTS, else a folder under the system's temporary one),
// and to docs/images when GITOPS_E2E_UPDATE_SCREENSHOTS=1.
var _ = Describe("kubectl gitops dashboard", Ordered, func() {
	var ns, plugin, repoURL, artifacts string
	const app, deployment = "shop", "shop-dev-generated-binding-shop-dev-web"

	startDashboard := func(user, namespace string) string {
		GinkgoHelper()
		return startDashboardAs(plugin, user, namespace)
	}
	browser, do, text := chromeTab, chromeDo, pageText
	screenshot := func(ctx context.Context, name string) {
		GinkgoHelper()
		pageScreenshot(ctx, artifacts, name)
	}

	BeforeAll(func(ctx context.Context) {
		_, err := os.Stat(chromium)
		Expect(err).NotTo(HaveOccurred(), "no %s: hack/host-tools.sh installs Debian's chromium", chromium)
		artifacts = os.Getenv("GITOPS_E2E_ARTIFACTS")
		if artifacts == "" {
			artifacts = filepath.Join(os.TempDir(), "gitops-e2e-artifacts")
		}
		artifacts = filepath.Join(artifacts, fmt.Sprintf("dashboard-%d", time.Now().Unix()))
		Expect(os.MkdirAll(artifacts, 0o755)).To(Succeed())
		GinkgoWriter.Printf("screenshots go to %s\n", artifacts)

		By("building kubectl-gitops")
		plugin = pluginBinary()

		ns = fmt.Sprintf("e2e-dashboard-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			out, _, _ := run("admin", "", "auth", "can-i", "approve", "environments.appstudio.redhat.com/prod", "-n", ns, "--as", "alice")
			g.Expect(strings.TrimSpace(out)).To(Equal("yes"))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"extra/cm.yaml": configMap("dashboard-extra", "v1")})

		By("an Application with the Environments dev → staging → prod; prod needs an approval")
		startAppServicePlayer(ctx, ns)
		studio := gitops.AppStudioV1alpha1()
		_, err = studio.Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range [][3]string{{"dev", "Development", ""}, {"staging", "Staging", "dev"}, {"prod", "Production", "staging"}} {
			_, err = studio.Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
				ObjectMeta: metav1.ObjectMeta{Name: e[0]},
				Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: e[1], ParentEnvironment: e[2],
					DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = studio.PromotionGates(ns).Create(ctx, &appstudiov1alpha1.PromotionGate{
			ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Spec:       appstudiov1alpha1.PromotionGateSpec{Approvals: &appstudiov1alpha1.ApprovalGate{Required: 1}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = studio.Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-1"},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: "web", ContainerImage: "registry.invalid/web:1"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("shop-1 promoted into dev, deployed Synced and Healthy")
		promote := func(env string) string {
			GinkgoHelper()
			run, err := studio.PromotionRuns(ns).Create(ctx, &appstudiov1alpha1.PromotionRun{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "shop-1-to-" + env + "-"},
				Spec: appstudiov1alpha1.PromotionRunSpec{Application: app, Snapshot: "shop-1",
					ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: env}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return run.Name
		}
		dev := promote("dev")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := studio.PromotionRuns(ns).Get(ctx, dev, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess))
			d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, deployment, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy))
			g.Expect(d.Status.Resources).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("a promotion into prod that waits for an approval")
		prod := promote("prod")
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := studio.PromotionRuns(ns).Get(ctx, prod, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.EnvironmentStatus).NotTo(BeEmpty())
			g.Expect(r.Status.EnvironmentStatus[0].DisplayStatus).To(HavePrefix("Waiting for approvals"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("shows the graph and a deployment's health, follows a change without reload, and approves through the page", func(ctx context.Context) {
		tab := browser()
		do(tab, chromedp.Navigate(startDashboard("alice", ns)))

		By("the graph: each Environment, the Snapshot in dev, the promotion waiting in prod")
		Eventually(func() string { return text(tab, `.env[data-env="dev"]`) }).WithTimeout(30 * time.Second).Should(
			And(ContainSubstring("Development"), ContainSubstring("Snapshot shop-1")))
		// The page draws what it has while the plugin's watches list their kinds: the runs and
		// deployments may come a moment after the boxes.
		Eventually(func() string { return text(tab, `.env[data-env="dev"] .status`) }).WithTimeout(10 * time.Second).Should(MatchRegexp(`^Synced\s+Healthy$`))
		Expect(text(tab, `.env[data-env="staging"]`)).To(ContainSubstring("not deployed"))
		Eventually(func() string { return text(tab, `.env[data-env="prod"]`) }).WithTimeout(10 * time.Second).Should(ContainSubstring("Waiting for approvals: 0 of 1"))
		Expect(text(tab, `.env[data-env="staging"]`)).To(ContainSubstring("Staging"))
		Expect(text(tab, "#live")).To(Equal("live"))
		// A mark on the page's window: a reload would wipe it.
		do(tab, chromedp.Evaluate[chromedp.Void](`window.e2eMark = "not reloaded"`))
		screenshot(tab, "dashboard-environments")

		By("the deployment view: sync, health, ResourcesReady and the resources")
		do(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "deployments"`))
		sel := `.deployment[data-name="` + deployment + `"]`
		Eventually(func() string { return text(tab, sel+" .deployment-head") }).WithTimeout(10 * time.Second).Should(
			MatchRegexp(`^` + deployment + `\s+Synced\s+Healthy\s`))
		Expect(text(tab, sel+" .ready")).To(HavePrefix("ResourcesReady True (ResourcesReady)"))
		Expect(text(tab, sel+` tr[data-resource="ConfigMap/cm-web-dev"]`)).To(MatchRegexp(`ConfigMap\s+cm-web-dev\s+Synced`))

		By("a new GitOpsDeployment appears, and then turns Healthy, without a reload")
		createDeploymentOfType(ctx, ns, "extra", repoURL, "extra", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)
		Eventually(func() string { return text(tab, `.deployment[data-name="extra"]`) }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		Eventually(func() string { return text(tab, `.deployment[data-name="extra"] .deployment-head`) }).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(
			MatchRegexp(`^extra\s+Synced\s+Healthy\s`))
		Eventually(func() string {
			return text(tab, `.deployment[data-name="extra"] tr[data-resource="ConfigMap/dashboard-extra"]`)
		}).WithTimeout(30 * time.Second).Should(
			MatchRegexp(`^ConfigMap\s+dashboard-extra\s+Synced`))
		Eventually(func() string { return text(tab, `.deployment[data-name="extra"] .ready`) }).WithTimeout(30 * time.Second).Should(HavePrefix("ResourcesReady True"))
		Expect(text(tab, "body")).NotTo(ContainSubstring("Loading"))
		mark, err := chromedp.Run(tab, chromedp.Evaluate[string](`window.e2eMark || "reloaded"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(mark).To(Equal("not reloaded"))
		screenshot(tab, "dashboard-deployments")

		By("approve in the page (behind a confirmation): the approval is alice's, and prod gets shop-1")
		do(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "graph"`))
		do(tab, chromedp.Click(chromedp.CSS(`.env[data-env="prod"] button.approve`)))
		Eventually(func(g Gomega, ctx context.Context) {
			approvals, err := gitops.AppStudioV1alpha1().PromotionApprovals(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(approvals.Items).To(HaveLen(1))
			g.Expect(approvals.Items[0].Spec.Username).To(Equal("alice"))
			g.Expect(approvals.Items[0].Spec.Environment).To(Equal("prod"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func() string { return text(tab, "#notice") }).WithTimeout(10 * time.Second).Should(ContainSubstring("Approve of promotionrun"))
		Eventually(func() string { return text(tab, `.env[data-env="prod"]`) }).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(
			And(ContainSubstring("Snapshot shop-1"), Not(ContainSubstring("Waiting"))))
		Eventually(func() string { return text(tab, `.env[data-env="prod"] .status`) }).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(
			MatchRegexp(`^Synced\s+Healthy$`))

		By("the history: the namespace's writes, newest first, with who and what")
		do(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "history"`))
		Eventually(func() string { return text(tab, "#history-view") }).WithTimeout(10 * time.Second).Should(
			MatchRegexp(`alice\s+create\s+promotionapprovals/`))
		Expect(text(tab, "#history-view tbody tr")).To(ContainSubstring("20")) // a time, newest first
		screenshot(tab, "dashboard-history")
		mark, err = chromedp.Run(tab, chromedp.Evaluate[string](`window.e2eMark || "reloaded"`))
		Expect(err).NotTo(HaveOccurred())
		Expect(mark).To(Equal("not reloaded"))
	})

	It("shows a tenant nothing of another tenant's namespace", func(ctx context.Context) {
		By("bob's dashboard of alice's namespace says what RBAC refused, and shows none of her objects")
		tab := browser()
		do(tab, chromedp.Navigate(startDashboard("bob", ns)))
		Eventually(func() string { return text(tab, "#errors") }).WithTimeout(30 * time.Second).Should(And(
			ContainSubstring(fmt.Sprintf(`you may not list gitopsdeployments.managed-gitops.redhat.com in namespace %q`, ns)),
			ContainSubstring(`User "bob" cannot list resource "applications"`)))
		Expect(text(tab, "#view")).To(ContainSubstring("Cannot show"))
		body := text(tab, "body")
		for _, name := range []string{"Shop", "shop-1", "Development", deployment, "extra"} {
			Expect(body).NotTo(ContainSubstring(name))
		}
		screenshot(tab, "dashboard-forbidden")
		do(tab, chromedp.Evaluate[chromedp.Void](`location.hash = "deployments"`))
		Expect(text(tab, "#view")).To(ContainSubstring("Cannot show GitOpsDeployments"))

		By("bob's dashboard of his own namespace shows it, and nothing of alice's")
		bobs := createDeploymentOfType(ctx, tenantB, "bob-web", placeholderRepo, "deploy", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)
		DeferCleanup(func(ctx context.Context) { deleteDeploymentAndWait(ctx, tenantB, bobs.Name) })
		own := browser()
		do(own, chromedp.Navigate(startDashboard("bob", tenantB)), chromedp.Evaluate[chromedp.Void](`location.hash = "deployments"`))
		Eventually(func() string { return text(own, `.deployment[data-name="bob-web"]`) }).WithTimeout(30 * time.Second).ShouldNot(BeEmpty())
		Expect(text(own, "#errors")).To(BeEmpty())
		for _, view := range []string{"graph", "deployments", "history"} {
			do(own, chromedp.Evaluate[chromedp.Void](`location.hash = "`+view+`"`))
			body := text(own, "body")
			for _, name := range []string{ns, "shop-1", "Development", deployment, "extra", "alice"} {
				Expect(body).NotTo(ContainSubstring(name), "the %s view", view)
			}
		}
	})
})

// startDashboardAs runs plugin's dashboard as user for namespace and returns the URL it printed.
func startDashboardAs(plugin, user, namespace string) string {
	GinkgoHelper()
	cmd := exec.Command(plugin, "--kubeconfig", kubeconfig(user), "-n", namespace, "dashboard", "--no-browser", "--port", "0")
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	cmd.Stderr = GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		defer GinkgoRecover()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			GinkgoWriter.Printf("dashboard (%s): %s\n", user, sc.Text())
			if m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+)$`).FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var url string
	Eventually(urls).WithTimeout(30 * time.Second).Should(Receive(&url))
	return url
}

// chromeTab is a tab of a headless Chromium at 1280x800, closed with the spec.
func chromeTab() context.Context {
	GinkgoHelper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	DeferCleanup(cancelAlloc)
	DeferCleanup(cancel)
	Expect(chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800))).To(Succeed())
	// Accept every confirm() and prompt() of the page, as a user who clicks OK.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			GinkgoWriter.Printf("dialog: %s\n", ev.Message)
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: "from the e2e suite"})
			}()
		}
	}()
	return ctx
}

// chromeDo runs actions in the tab ctx, within 30s.
func chromeDo(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	Expect(chromedp.Do(tctx, actions...)).To(Succeed())
}

// pageText is the text of the first element that selector finds, "" when there is none.
func pageText(ctx context.Context, selector string) string {
	GinkgoHelper()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(tctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, selector)))
	Expect(err).NotTo(HaveOccurred())
	return s
}

// pageScreenshot writes the tab's screenshot name.png into artifacts (and docs/images).
func pageScreenshot(ctx context.Context, artifacts, name string) {
	GinkgoHelper()
	chromeDo(ctx, chromedp.Sleep(300*time.Millisecond)) // the arrows are drawn after layout
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(artifacts, name+".png")
	Expect(os.WriteFile(path, png, 0o644)).To(Succeed())
	AddReportEntry("screenshot "+name, path)
	if os.Getenv("GITOPS_E2E_UPDATE_SCREENSHOTS") == "1" {
		Expect(os.WriteFile(filepath.Join("..", "..", "docs", "images", name+".png"), png, 0o644)).To(Succeed())
	}
}
