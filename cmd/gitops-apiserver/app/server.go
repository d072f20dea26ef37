// Package app builds the gitops-apiserver command, apart from its main package so that tools
// such as hack/docgen can read its flags without running it (as Kubernetes'
// cmd/kube-apiserver/app does).
package app

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gitops-service/gitops-service/pkg/apiserver"
)

// NewCommand returns the gitops-apiserver command with all its flags. The caller sets its
// context: genericapiserver.SetupSignalContext may be called only once in a process.
func NewCommand() *cobra.Command {
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
	o.AddFlags(cmd.Flags())
	return cmd
}
