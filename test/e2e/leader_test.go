//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// The stack's agent runs with these (hack/local-up.sh, the agent's defaults).
const (
	stackAgentIdentity = "local-agent"
	leaseDuration      = 15 * time.Second
	// retryPeriod is how often a standby tries to take a Lease; client-go waits up to
	// (1 + JitterFactor 1.2) times it between tries.
	retryPeriod  = 2 * time.Second
	maxRetryWait = retryPeriod * 22 / 10
)

var _ = Describe("agents under leader election", Ordered, func() {
	var ns string
	// The Argo CD instance's controllers share a Lease; each AppStudio controller that both
	// agents run (the default "*") has its own.
	leases := []struct{ namespace, name string }{{"gitops-service-argocd", "gitops-agent"}}
	for _, c := range []string{"environment", "snapshotenvironmentbinding", "promotionrun", "autopromotion", "deploymenttargetbinder",
		"deploymenttargetreclaim", "devsandboxprovisioner", "placement"} {
		leases = append(leases, struct{ namespace, name string }{"gitops-service", "gitops-agent-" + c})
	}
	heldBy := func(id string) []string {
		ids := make([]string, len(leases))
		for i := range ids {
			ids[i] = id
		}
		return ids
	}
	holders := func(ctx context.Context) ([]string, error) {
		var ids []string
		for _, l := range leases {
			lease, err := kube.CoordinationV1().Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			ids = append(ids, ptrValue(lease.Spec.HolderIdentity))
		}
		return ids, nil
	}
	managedEnvironmentOf := func(ctx context.Context, env string) func() (string, error) {
		return func() (string, error) {
			me, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Get(ctx, "managed-environment-"+env, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return me.Spec.APIURL, nil
		}
	}
	createEnvironment := func(ctx context.Context, name, apiURL string) {
		GinkgoHelper()
		createSecret(ctx, ns, name+"-creds", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(apiURL, "not-a-token", nil)})
		_, err := gitops.AppStudioV1alpha1().Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.EnvironmentSpec{
				DisplayName: name, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyAppStudioAutomated,
				UnstableConfigurationFields: &appstudiov1alpha1.UnstableEnvironmentConfiguration{
					KubernetesClusterCredentials: appstudiov1alpha1.KubernetesClusterCredentials{
						TargetNamespace: "target", APIURL: apiURL, ClusterCredentialsSecret: name + "-creds",
					},
				},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-leader-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
	})

	It("runs each set of controllers in the agent holding its Lease, and a standby takes them over within the lease duration when the holder is killed", func(ctx context.Context) {
		By("the stack's agent holds the Leases")
		Eventually(holders).WithContext(ctx).WithTimeout(30 * time.Second).
			Should(Equal(heldBy(stackAgentIdentity)))

		By("starting a second agent: it fills its caches and waits for the Leases")
		standby := startStandbyAgent()
		DeferCleanup(func(ctx context.Context) {
			// Whatever happened, leave the stack's agent running and holding the Leases.
			standby.stop()
			restartIfKilled("agent")
			Eventually(holders).WithContext(ctx).WithTimeout(leaseDuration + 2*maxRetryWait + 5*time.Second).
				Should(Equal(heldBy(stackAgentIdentity)))
		})
		Eventually(standby.log).WithTimeout(time.Minute).Should(And(
			ContainSubstring(`"agent started"`),
			MatchRegexp(`"waiting for the lease" lease="gitops-service/gitops-agent-environment"`),
			MatchRegexp(`"waiting for the lease" lease="gitops-service/gitops-agent-promotionrun"`),
			MatchRegexp(`"waiting for the lease" lease="gitops-service-argocd/gitops-agent"`)))

		By("an Environment is reconciled by the holder alone")
		createEnvironment(ctx, "before", "https://127.0.0.1:9")
		Eventually(managedEnvironmentOf(ctx, "before")).WithContext(ctx).WithTimeout(time.Minute).Should(Equal("https://127.0.0.1:9"))
		Consistently(func() (float64, error) { return standby.reconciles("environments") }).
			WithTimeout(3 * time.Second).Should(BeZero())
		Expect(standby.reconciles("gitopsdeployments")).To(BeZero())

		By("killing the holder")
		killStackProcess("agent")
		killed := time.Now()
		// The standby counts the lease duration from when it saw the holder's last renewal,
		// which it may see up to one of its jittered retry periods after the kill, and looks
		// again up to one more after the Lease expired: 23.8 s at most for each Lease. With a
		// Lease per AppStudio controller, the last of eight decides, near that bound (20.6 s
		// measured), so 2 s are left for the requests and a loaded machine.
		bound := leaseDuration + 2*maxRetryWait + 2*time.Second
		Eventually(holders).WithContext(ctx).WithTimeout(bound + 5*time.Second).WithPolling(100 * time.Millisecond).
			Should(Equal(heldBy("standby-agent")))
		took := time.Since(killed)
		GinkgoWriter.Printf("the standby took the Leases %v after the holder was killed (lease duration %v)\n", took, leaseDuration)
		Expect(took).To(BeNumerically("<", bound))

		By("the standby runs the controllers now")
		createEnvironment(ctx, "after", "https://127.0.0.1:10")
		Eventually(managedEnvironmentOf(ctx, "after")).WithContext(ctx).WithTimeout(time.Minute).Should(Equal("https://127.0.0.1:10"))
		Expect(standby.reconciles("environments")).To(BeNumerically(">", 0))
		createDeployment(ctx, ns, "after", placeholderRepo, "deploy", false)
		Eventually(func(ctx context.Context) (managedv1alpha1.ReconciledState, error) {
			d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "after", metav1.GetOptions{})
			if err != nil {
				return managedv1alpha1.ReconciledState{}, err
			}
			return d.Status.ReconciledState, nil
		}).WithContext(ctx).WithTimeout(time.Minute).Should(HaveField("Source.Path", "deploy"))
		Expect(standby.reconciles("gitopsdeployments")).To(BeNumerically(">", 0))
		deleteAllDeployments(ctx, ns)

		By("the stack's agent, started again, waits; it takes the Leases back at once when the standby stops")
		startStackProcess("agent")
		Consistently(holders).WithContext(ctx).WithTimeout(3 * time.Second).Should(Equal(heldBy("standby-agent")))
		standby.stop()
		stopped := time.Now()
		Eventually(holders).WithContext(ctx).WithTimeout(2*maxRetryWait + time.Second).WithPolling(100 * time.Millisecond).
			Should(Equal(heldBy(stackAgentIdentity)))
		GinkgoWriter.Printf("the stack's agent took the Leases back %v after the standby released them\n", time.Since(stopped))
	})

	It("applies every change of a burst once when the holder is killed in the middle of it", func(ctx context.Context) {
		Eventually(holders).WithContext(ctx).WithTimeout(30 * time.Second).Should(Equal(heldBy(stackAgentIdentity)))
		standby := startStandbyAgent()
		DeferCleanup(func(ctx context.Context) {
			standby.stop()
			restartIfKilled("agent")
			Eventually(holders).WithContext(ctx).WithTimeout(leaseDuration + 2*maxRetryWait + 5*time.Second).
				Should(Equal(heldBy(stackAgentIdentity)))
			deleteAllDeployments(ctx, ns)
		})
		Eventually(standby.log).WithTimeout(time.Minute).Should(MatchRegexp(`"waiting for the lease" lease="gitops-service-argocd/gitops-agent"`))

		const n = 16
		files := map[string]string{}
		for i := range n {
			files[fmt.Sprintf("b%d/cm.yaml", i)] = configMap(fmt.Sprintf("cm-burst-%d", i), "one")
		}
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), files)
		var killed time.Time
		for i := range n {
			createDeployment(ctx, ns, fmt.Sprintf("burst-%d", i), repoURL, fmt.Sprintf("b%d", i), false)
			if i == n/2 {
				killStackProcess("agent")
				killed = time.Now()
			}
		}
		bound := leaseDuration + 2*maxRetryWait + 2*time.Second
		Eventually(holders).WithContext(ctx).WithTimeout(bound + 5*time.Second).WithPolling(100 * time.Millisecond).
			Should(Equal(heldBy("standby-agent")))
		took := time.Since(killed)
		GinkgoWriter.Printf("the standby took the Leases %v after the holder was killed in a burst\n", took)
		Expect(took).To(BeNumerically("<", bound))

		argo := argoclient.NewForConfigOrDie(adminConfig)
		for i := range n {
			name := fmt.Sprintf("burst-%d", i)
			waitSyncedHealthy(ctx, ns, name, fmt.Sprintf("cm-burst-%d", i))
			// One sync each in Argo CD's history: no change was applied twice, by the killed
			// holder and again by the standby.
			d := getDeployment(ctx, ns, name)
			app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(app.Status.History).To(HaveLen(1), "Application of %s synced %d times", name, len(app.Status.History))
		}
		Expect(standby.reconciles("gitopsdeployments")).To(BeNumerically(">", 0))
	})
})

// standbyAgent is a second agent process, started by a spec, logging to a file of the stack's.
type standbyAgent struct {
	cmd     *exec.Cmd
	logPath string
	metrics string
}

// startStandbyAgent starts the agent binary the stack runs, as the same identity and for the
// same Argo CD instance, under the name standby-agent in the Leases.
func startStandbyAgent() *standbyAgent {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	Expect(ln.Close()).To(Succeed())

	a := &standbyAgent{logPath: filepath.Join(stackDir, "logs", "agent-standby.log"), metrics: "http://" + addr + "/metrics"}
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	Expect(err).NotTo(HaveOccurred())
	defer logFile.Close()
	a.cmd = exec.Command(filepath.Join(stackDir, "bin", "agent"), "--kubeconfig", filepath.Join(stackDir, "gitops-agent.kubeconfig"),
		"--argocd-namespace", "gitops-service-argocd", "--instance", "main", "--leader-elect-identity", "standby-agent",
		"--metrics-bind-address", addr, "-v", "2")
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	Expect(a.cmd.Start()).To(Succeed())
	return a
}

func (a *standbyAgent) log() string {
	raw, _ := os.ReadFile(a.logPath)
	return string(raw)
}

// stop ends the agent with SIGTERM (it releases its Leases) and waits for it.
func (a *standbyAgent) stop() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = a.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

// reconciles is the agent's count of successful reconciles by a controller.
func (a *standbyAgent) reconciles(controller string) (float64, error) {
	resp, err := http.Get(a.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^gitops_agent_reconciles_total\{controller="` + regexp.QuoteMeta(controller) + `",result="success"\} (\S+)$`).
		FindSubmatch(body)
	if m == nil {
		return 0, nil
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
