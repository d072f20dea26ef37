//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/test/monitoring"
)

// The stack's ports are hack/local-up.sh's, shifted by GITOPS_LOCAL_PORT_OFFSET, which
// hack/e2e.sh exports (1000 unless GITOPS_E2E_PORT_OFFSET says otherwise).
const (
	apiserverPort    = 18443 // gitops-apiserver's secure port, which serves /metrics
	agentMetricsPort = 18085 // the agent's --metrics-bind-address
)

// What artifacts/monitoring's rules and dashboard select is what the running binaries export:
// the real gitops-apiserver and agent of the stack, with a tenant deployed so that the agent
// reports Argo CD's Applications.
var _ = Describe("monitoring", func() {
	It("finds every metric the rules and the dashboard use on the binaries' /metrics", func(ctx context.Context) {
		uses, err := monitoring.Uses("../../artifacts/monitoring")
		Expect(err).NotTo(HaveOccurred())
		offset := 1000
		if v := os.Getenv("GITOPS_LOCAL_PORT_OFFSET"); v != "" {
			offset, err = strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred())
		}

		ns := fmt.Sprintf("e2e-monitoring-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		// Cleanups run last first: the deployment goes, then its namespace.
		DeferCleanup(func(ctx context.Context) { _ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) })
		createDeployment(ctx, ns, "watched", placeholderRepo, "deploy", false)
		DeferCleanup(func(ctx context.Context) { deleteDeploymentAndWait(ctx, ns, "watched") })
		Eventually(func(g Gomega, ctx context.Context) {
			g.Expect(getDeployment(ctx, ns, "watched").Status.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("scraping gitops-apiserver as the admin, whom it authorizes through kube-apiserver")
		cfg := rest.CopyConfig(adminConfig)
		cfg.Host = fmt.Sprintf("https://127.0.0.1:%d", apiserverPort+offset)
		cfg.TLSClientConfig = rest.TLSClientConfig{CAFile: filepath.Join(stackDir, "certs", "ca.crt"),
			CertFile: cfg.TLSClientConfig.CertFile, KeyFile: cfg.TLSClientConfig.KeyFile,
			CertData: cfg.TLSClientConfig.CertData, KeyData: cfg.TLSClientConfig.KeyData}
		client, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			g.Expect(monitoring.Missing(uses, monitoring.APIServer, scrape(g, ctx, client, cfg.Host+"/metrics"))).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("scraping the agent")
		Eventually(func(g Gomega, ctx context.Context) {
			url := fmt.Sprintf("http://127.0.0.1:%d/metrics", agentMetricsPort+offset)
			g.Expect(monitoring.Missing(uses, monitoring.Agent, scrape(g, ctx, http.DefaultClient, url))).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("lets the ServiceAccount that metrics-reader.yaml binds read gitops-apiserver's /metrics", func(ctx context.Context) {
		must("admin", "apply", "-f", "../../artifacts/monitoring/metrics-reader.yaml")
		DeferCleanup(func() {
			must("admin", "delete", "--ignore-not-found", "-f", "../../artifacts/monitoring/metrics-reader.yaml")
		})
		out := must("admin", "auth", "can-i", "get", "/metrics", "--as", "system:serviceaccount:monitoring:prometheus-k8s")
		Expect(strings.TrimSpace(out)).To(Equal("yes"))
	})
})

// scrape reads a /metrics page.
func scrape(g Gomega, ctx context.Context, client *http.Client, url string) monitoring.Exposition {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := client.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", url, body.String())
	e, err := monitoring.ParseExposition(&body)
	g.Expect(err).NotTo(HaveOccurred())
	return e
}
