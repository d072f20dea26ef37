//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// kubectl gitops (cmd/kubectl-gitops), built by the spec and run as a user runs it: a process
// with a tenant's kubeconfig, against the real API and the real Argo CD, its output and exit
// code checked. alice administers the namespace (she may approve), carol only views it.
// application-service is played in the background (appservice_player_test.go).
var _ = Describe("kubectl gitops plugin", Ordered, func() {
	var ns, repoURL string

	// gitopsPlugin runs the plugin as user in ns (args may name another -n) and returns its
	// stdout, stderr and exit code.
	gitopsPlugin := func(user string, args ...string) (string, string, int) {
		GinkgoHelper()
		return runPlugin(user, ns, args...)
	}
	succeeds := func(user string, args ...string) string {
		GinkgoHelper()
		stdout, stderr, code := gitopsPlugin(user, args...)
		Expect(code).To(Equal(0), "kubectl gitops %s: %s", strings.Join(args, " "), stderr)
		Expect(stderr).To(BeEmpty())
		return stdout
	}
	failsWith := func(user string, args ...string) string {
		GinkgoHelper()
		stdout, stderr, code := gitopsPlugin(user, args...)
		Expect(code).To(Equal(1), "kubectl gitops %s succeeded: %s", strings.Join(args, " "), stdout)
		return stderr
	}
	created := regexp.MustCompile(`^(\S+)/(\S+) created\n`)
	createdName := func(stdout string) string {
		GinkgoHelper()
		m := created.FindStringSubmatch(stdout)
		Expect(m).NotTo(BeNil(), "no object created in %q", stdout)
		return m[2]
	}

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-plugin-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		for user, role := range map[string]string{"alice": "admin", "carol": "view"} {
			_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func(g Gomega) {
			out, _, _ := run("admin", "", "auth", "can-i", "approve", "environments.appstudio.redhat.com/prod", "-n", ns, "--as", "alice")
			g.Expect(strings.TrimSpace(out)).To(Equal("yes"))
			out, _, _ = run("admin", "", "auth", "can-i", "get", "gitopsdeployments.managed-gitops.redhat.com", "-n", ns, "--as", "carol")
			g.Expect(strings.TrimSpace(out)).To(Equal("yes"))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"ok/cm.yaml":             configMap("plugin-ok", "v1"),
			"manual/cm.yaml":         configMap("plugin-manual", "v1"),
			"broken/deployment.yaml": stuckDeployment,
			"broken/cm.yaml":         configMap("plugin-broken", "v1"),
		})

		startAppServicePlayer(ctx, ns)
		createApplicationWithManualEnvironments(ctx, ns, "shop", "Shop", map[string]string{"dev": "Development", "prod": "Production", "qa": "QA"})
		studio := gitops.AppStudioV1alpha1()
		for _, env := range []string{"prod", "qa"} {
			_, err := studio.PromotionGates(ns).Create(ctx, &appstudiov1alpha1.PromotionGate{
				ObjectMeta: metav1.ObjectMeta{Name: env},
				Spec:       appstudiov1alpha1.PromotionGateSpec{Approvals: &appstudiov1alpha1.ApprovalGate{Required: 1}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := studio.Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-1"},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: "shop",
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: "web", ContainerImage: "registry.invalid/web:1"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("promotes, waits for the promotion, and shows the Application's tree down to the resources", func(ctx context.Context) {
		By("promote creates a manual PromotionRun; wait follows it until it is Complete")
		stdout := succeeds("alice", "promote", "shop", "--snapshot", "shop-1", "--to", "dev")
		Expect(stdout).To(MatchRegexp(`^promotionrun\.appstudio\.redhat\.com/shop-1-to-dev-\w{5} created\n$`))
		runName := createdName(stdout)
		stdout = succeeds("alice", "wait", runName, "--for=promoted", "--timeout=4m")
		Expect(stdout).To(ContainSubstring("promotionrun/" + runName + ": "))
		Expect(stdout).To(MatchRegexp(`promotionrun/` + regexp.QuoteMeta(runName) + ` is promoted \(after \d+s\)\n$`))

		By("status draws Application → Environment → binding → GitOpsDeployment → resource")
		binding := "shop-dev-generated-binding"
		deployment := binding + "-shop-dev-web"
		Eventually(func(g Gomega) {
			stdout, _, code := gitopsPlugin("carol", "status", "shop")
			g.Expect(code).To(Equal(0))
			g.Expect(stdout).To(ContainSubstring("Application/shop  deployed to 1 of 3 Environments\n"))
			g.Expect(stdout).To(ContainSubstring("├── Environment/dev\n"))
			g.Expect(stdout).To(ContainSubstring("│   └── SnapshotEnvironmentBinding/" + binding + "  snapshot shop-1  1 of 1 components deployed\n"))
			g.Expect(stdout).To(ContainSubstring("│       └── GitOpsDeployment/" + deployment + "  Synced  Healthy\n"))
			g.Expect(stdout).To(ContainSubstring("│           └── ConfigMap/cm-web-dev  Synced\n"))
			g.Expect(stdout).To(ContainSubstring("Environment/prod  not deployed\n"))
		}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("-o json is the same tree for scripts")
		var tree struct {
			Items []struct {
				Kind, Name string
				Children   []struct {
					Name     string
					Children []struct{ Kind, Name string }
				}
			}
		}
		Expect(json.Unmarshal([]byte(succeeds("carol", "status", "-o", "json")), &tree)).To(Succeed())
		Expect(tree.Items).NotTo(BeEmpty())
		Expect(tree.Items[0].Kind).To(Equal("Application"))
		Expect(tree.Items[0].Children[0].Name).To(Equal("dev"))
		Expect(tree.Items[0].Children[0].Children[0].Name).To(Equal(binding))

		By("why of what is well says so")
		Expect(succeeds("carol", "why", runName)).To(HaveSuffix("PromotionRun " + runName + " succeeded: nothing to explain.\n"))
	})

	It("approves a promotion that waits for approval, and a rejection fails the run", func(ctx context.Context) {
		By("a promotion into prod waits for one approval; alice approves it without naming the Environment")
		run := createdName(succeeds("alice", "promote", "shop", "--snapshot", "shop-1", "--to", "prod"))
		Eventually(func(g Gomega) {
			stdout, _, _ := gitopsPlugin("alice", "why", "promotionrun/"+run)
			g.Expect(stdout).To(ContainSubstring("Environment/prod  step 1 In Progress  Waiting for approvals: 0 of 1"))
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		By("carol, who only views, is refused, and told which verb on which resource")
		stderr := failsWith("carol", "approve", run)
		Expect(stderr).To(HavePrefix(fmt.Sprintf(`Error: you may not create promotionapprovals.appstudio.redhat.com in namespace %q: `, ns)))
		Expect(stderr).To(ContainSubstring(`User "carol" cannot create resource "promotionapprovals"`))
		stdout := succeeds("alice", "approve", run, "-m", "LGTM")
		Expect(stdout).To(MatchRegexp(`^promotionapproval\.appstudio\.redhat\.com/\S+: Approve of promotionrun "` + regexp.QuoteMeta(run) + `" into environment "prod", recorded as alice's\n$`))
		Expect(succeeds("alice", "wait", run, "--for=promoted", "--timeout=4m")).To(ContainSubstring(" is promoted "))
		approvals, err := gitops.AppStudioV1alpha1().PromotionApprovals(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(approvals.Items).To(HaveLen(1))
		Expect(approvals.Items[0].Spec.Username).To(Equal("alice"))

		By("a rejection of the promotion into qa fails it, and wait says so with a non-zero exit")
		run = createdName(succeeds("alice", "promote", "shop", "--snapshot", "shop-1", "--to", "qa"))
		Expect(failsWith("alice", "reject", run)).To(Equal("Error: a rejection says why: give -m COMMENT\n"))
		succeeds("alice", "reject", run, "--env", "qa", "-m", "not during the sale")
		stderr = failsWith("alice", "wait", run, "--for=promoted", "--timeout=3m")
		Expect(stderr).To(HavePrefix("Error: promotionrun/" + run + " will not be promoted: "))
	})

	It("explains a deployment with a failing resource, and wait times out on it with a non-zero exit", func(ctx context.Context) {
		createDeploymentOfType(ctx, ns, "ok", repoURL, "ok", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)
		createDeploymentOfType(ctx, ns, "broken", repoURL, "broken", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)

		By("wait --for=healthy follows a deployment until it is Synced and Healthy")
		stdout := succeeds("alice", "wait", "ok", "--for=healthy", "--timeout=3m")
		Expect(stdout).To(HavePrefix("gitopsdeployment/ok: sync "))
		Expect(stdout).To(MatchRegexp(`gitopsdeployment/ok is healthy \(after \d+s\)\n$`))

		By("why names the Deployment that cannot become ready, with Argo CD's reason")
		Eventually(func(g Gomega) {
			stdout, _, code := gitopsPlugin("carol", "why", "broken")
			g.Expect(code).To(Equal(0))
			g.Expect(stdout).To(Equal(`GitOpsDeployment/broken  Synced  Degraded  1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline
└── Deployment/web  Synced  Degraded  Deployment "web" exceeded its progress deadline
GitOpsDeployment broken is not well; where it fails: Deployment/web.
`))
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		Expect(succeeds("carol", "status", "broken")).To(ContainSubstring("├── ConfigMap/plugin-broken  Synced\n"))

		By("wait --for=healthy gives up at its timeout, saying what it waited for and what it saw")
		_, stderr, code := gitopsPlugin("alice", "wait", "broken", "--for=healthy", "--timeout=5s")
		Expect(code).To(Equal(1))
		Expect(stderr).To(Equal(`Error: timed out after 5s waiting for gitopsdeployment/broken to be healthy; last seen: sync Synced, health Degraded: ` +
			`1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline` + "\n"))
	})

	It("syncs a manual deployment through a SyncRun, and waits for the sync", func(ctx context.Context) {
		createDeploymentOfType(ctx, ns, "manual", repoURL, "manual", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
		stdout := succeeds("alice", "sync", "manual", "--wait", "--timeout=3m")
		Expect(stdout).To(MatchRegexp(`^gitopsdeploymentsyncrun\.managed-gitops\.redhat\.com/manual-\w{5} created\n`))
		Expect(stdout).To(MatchRegexp(`gitopsdeploymentsyncrun/manual-\w{5} is synced \(after \d+s\)\n$`))
		syncRun := createdName(stdout)
		got, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Get(ctx, syncRun, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Spec.GitopsDeploymentName).To(Equal("manual"))
		expectConfigMap(ctx, ns, "plugin-manual")
		succeeds("alice", "wait", "manual", "--for=synced", "--timeout=1m")

		By("an automated deployment is not synced by hand")
		createDeploymentOfType(ctx, ns, "auto", placeholderRepo, "deploy", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)
		Expect(failsWith("alice", "sync", "auto")).To(ContainSubstring(`gitopsdeployment "auto" in namespace "` + ns + `" is automated`))
	})

	It("names the verb and the resource of a refusal, and the kind of an unknown name", func(ctx context.Context) {
		stderr := failsWith("carol", "sync", "manual")
		Expect(stderr).To(Equal(fmt.Sprintf(`Error: you may not create gitopsdeploymentsyncruns.managed-gitops.redhat.com in namespace %q: `+
			`User "carol" cannot create resource "gitopsdeploymentsyncruns" in API group "managed-gitops.redhat.com" in the namespace %q`+"\n", ns, ns)))
		stderr = failsWith("alice", "status", "-n", tenantB)
		Expect(stderr).To(HavePrefix(fmt.Sprintf(`Error: you may not list applications.appstudio.redhat.com in namespace %q: `, tenantB)))

		Expect(failsWith("alice", "sync", "nope")).To(Equal(fmt.Sprintf("Error: gitopsdeployment \"nope\" not found in namespace %q\n", ns)))
		Expect(failsWith("alice", "wait", "nope", "--for=healthy")).To(Equal(fmt.Sprintf("Error: gitopsdeployment \"nope\" not found in namespace %q\n", ns)))
		Expect(failsWith("alice", "wait", "nope", "--for=promoted")).To(Equal(fmt.Sprintf("Error: promotionrun \"nope\" not found in namespace %q\n", ns)))
		Expect(failsWith("alice", "why", "nope")).To(Equal(fmt.Sprintf("Error: no promotionrun, snapshotenvironmentbinding or gitopsdeployment \"nope\" in namespace %q\n", ns)))
		Expect(failsWith("alice", "promote", "shop", "--snapshot", "shop-9", "--to", "dev")).To(Equal(fmt.Sprintf("Error: snapshot \"shop-9\" not found in namespace %q\n", ns)))
	})

	It("completes names from the API, also as kubectl's completion executable", func(ctx context.Context) {
		stdout, _, code := gitopsPlugin("carol", "__complete", "why", "")
		Expect(code).To(Equal(0))
		Expect(stdout).To(ContainSubstring("\nshop-dev-generated-binding\n"))
		Expect(stdout).To(HaveSuffix("\nmanual\nok\nshop-dev-generated-binding-shop-dev-web\nshop-prod-generated-binding-shop-prod-web\n:4\n"))
		Expect(succeeds("carol", "completion", "bash")).To(ContainSubstring("# bash completion V2 for kubectl-gitops"))

		By("kubectl 1.26+ calls kubectl_complete-gitops with the words after `kubectl gitops`")
		link := filepath.Join(GinkgoT().TempDir(), "kubectl_complete-gitops")
		Expect(os.Symlink(pluginBinary(), link)).To(Succeed())
		complete := exec.Command(link, "-n", ns, "sync", "man")
		complete.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig("carol"))
		out, err := complete.Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("manual\n:4\n"))
	})
})
