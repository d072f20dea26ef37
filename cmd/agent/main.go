// Command agent reconciles the GitOps Service's objects into one Argo CD instance and reports
// Argo CD's view back into their status; it also runs the AppStudio controllers.
//
// Runtime dependency: the agent checks GitOpsDeploymentRepositoryCredentials with a real
// `git ls-remote`, so the git binary (and ssh, for ssh:// repositories) must be on its PATH.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/gitops-service/gitops-service/cmd/agent/app"
)

func main() {
	cmd := app.NewCommand()
	cmd.SetContext(genericapiserver.SetupSignalContext())
	os.Exit(cli.Run(cmd))
}
