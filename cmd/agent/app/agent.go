// Package app builds the agent command, apart from its main package so that tools such as
// hack/docgen can read its flags without running it (as Kubernetes' cmd/kube-apiserver/app
// does).
package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/component-base/metrics/legacyregistry"

	// pkg/agent registers every metric the agent exports (client-go's among them).
	"github.com/gitops-service/gitops-service/pkg/agent"
	"github.com/gitops-service/gitops-service/pkg/agent/options"
)

// NewCommand returns the agent command with all its flags. The caller sets its context:
// genericapiserver.SetupSignalContext may be called only once in a process.
func NewCommand() *cobra.Command {
	o := options.New()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Reconcile GitOpsDeployments into Argo CD",
		Long: "agent watches the GitOps Service's objects through the kube-apiserver (which proxies them to " +
			"gitops-apiserver), turns each GitOpsDeployment into an Argo CD Application in the Argo CD " +
			"namespace, and copies the Application's sync, health and conditions back into its status. " +
			"It also runs the AppStudio controllers (Environments, SnapshotEnvironmentBindings, PromotionRuns, " +
			"the DeploymentTargetClaim binder and reclaim, and, when named, the namespace provisioner). " +
			"Several agents may run: each set of controllers runs in the one that holds its Lease.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			if o.MetricsAddress != "" {
				if err := serveMetrics(cmd.Context(), o.MetricsAddress); err != nil {
					return err
				}
			}
			return a.Run(cmd.Context())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// serveMetrics serves /metrics (the agent's reconcile and work-queue metrics, client-go's
// request and leader election metrics) and /healthz until ctx is done.
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
