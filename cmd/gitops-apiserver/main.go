// Command gitops-apiserver serves the GitOps Service's API groups from PostgreSQL, as an
// aggregated API server behind a kube-apiserver.
package main

import (
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/gitops-service/gitops-service/pkg/apiserver"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	o := apiserver.NewOptions(os.Stdout, os.Stderr)
	cmd := &cobra.Command{
		Use:   "gitops-apiserver",
		Short: "Serve managed-gitops.redhat.com and appstudio.redhat.com from PostgreSQL",
		Long: "gitops-apiserver serves the GitOps Service API groups from PostgreSQL. It runs behind a " +
			"kube-apiserver that proxies the groups to it through APIService objects, and delegates " +
			"authentication and authorization to that kube-apiserver.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	os.Exit(cli.Run(cmd))
}
