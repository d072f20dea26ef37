// Command agent reconciles the GitOps Service's objects into one Argo CD instance and reports
// Argo CD's view back into their status.
//
// Runtime dependency: the agent checks GitOpsDeploymentRepositoryCredentials with a real
// `git ls-remote`, so the git binary (and ssh, for ssh:// repositories) must be on its PATH.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/metrics/legacyregistry"

	// client-go's request latency and rate-limiter metrics, on /metrics.
	_ "k8s.io/component-base/metrics/prometheus/restclient"

	"github.com/gitops-service/gitops-service/pkg/agent"
)

func main() {
	var (
		kubeconfig     string
		argoNamespace  string
		localServer    string
		controllerSA   string
		metricsAddress string
		retention      time.Duration
		workers        int
		qps            float32
		burst          int
	)
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Reconcile GitOpsDeployments into Argo CD",
		Long: "agent watches the GitOps Service's objects through the kube-apiserver (which proxies them to " +
			"gitops-apiserver), turns each GitOpsDeployment into an Argo CD Application in the Argo CD " +
			"namespace, and copies the Application's sync, health and conditions back into its status.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := validation.IsDNS1123Subdomain(controllerSA); len(errs) > 0 {
				return fmt.Errorf("--application-controller-service-account %q: %s", controllerSA, strings.Join(errs, "; "))
			}
			if u, err := url.Parse(localServer); err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("--local-cluster-server %q: want the https:// URL of an Argo CD cluster", localServer)
			}
			// Empty --kubeconfig means in-cluster, as client-go's loading rules define it.
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading the kubeconfig: %w", err)
			}
			cfg.QPS, cfg.Burst = qps, burst
			cfg.UserAgent = "gitops-service-agent"
			clients, err := agent.NewClients(cfg)
			if err != nil {
				return err
			}
			a, err := agent.New(agent.Config{Clients: clients, ArgoNamespace: argoNamespace,
				LocalServer: localServer, ControllerServiceAccount: controllerSA, Workers: workers, OperationRetention: retention})
			if err != nil {
				return err
			}
			if metricsAddress != "" {
				if err := serveMetrics(cmd.Context(), metricsAddress); err != nil {
					return err
				}
			}
			return a.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the kube-apiserver that serves the GitOps API and hosts Argo CD; empty means in-cluster")
	fs.StringVar(&argoNamespace, "argocd-namespace", "gitops-service-argocd", "namespace of the Argo CD instance the agent drives")
	fs.StringVar(&localServer, "local-cluster-server", agent.InClusterServer,
		"URL of the Argo CD cluster through which Argo CD reaches this cluster, for deployments into tenants' own namespaces "+
			"(Argo CD's in-cluster cluster unless it runs elsewhere)")
	fs.StringVar(&controllerSA, "application-controller-service-account", agent.DefaultControllerServiceAccount,
		"ServiceAccount, in --argocd-namespace, of Argo CD's application-controller: the agent lets it impersonate each tenant namespace's deployer")
	fs.StringVar(&metricsAddress, "metrics-bind-address", "127.0.0.1:8085",
		"address of the /metrics and /healthz endpoint (plain HTTP); empty disables it")
	fs.DurationVar(&retention, "operation-retention", 24*time.Hour,
		"how long the Operation recording each change in Argo CD is kept")
	// Reconciles mostly wait on API round trips, and a burst of new deployments otherwise
	// queues behind the status writes of earlier ones: with 16, 90 namespaces' first
	// deployments at once had an apply p99 of 1.1-1.9 s at T=100 (make bench-agent-scale), with
	// 64 under 0.7 s.
	fs.IntVar(&workers, "workers", 64, "objects of each kind reconciled at once")
	// One agent serves every tenant of its Argo CD instance; the kube-apiserver's priority and
	// fairness, not a client's bucket, is what protects it.
	fs.Float32Var(&qps, "kube-api-qps", 200, "requests per second to the kube-apiserver, for each of the agent's clients")
	fs.IntVar(&burst, "kube-api-burst", 400, "burst of requests to the kube-apiserver, for each of the agent's clients")
	cmd.SetContext(genericapiserver.SetupSignalContext())
	os.Exit(cli.Run(cmd))
}

// serveMetrics serves /metrics (the agent's reconcile and work-queue metrics, client-go's
// request metrics) and /healthz until ctx is done.
func serveMetrics(ctx context.Context, address string) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", legacyregistry.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
