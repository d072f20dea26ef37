// Command gitops-apiserver serves the GitOps Service's API groups from PostgreSQL, as an
// aggregated API server behind a kube-apiserver.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/gitops-service/gitops-service/cmd/gitops-apiserver/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd := app.NewCommand()
	cmd.SetContext(ctx)
	os.Exit(cli.Run(cmd))
}
