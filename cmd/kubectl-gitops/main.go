// kubectl-gitops is the kubectl plugin of the GitOps Service: on the PATH, `kubectl gitops ...`
// runs it. Its commands are in pkg/cli. Run as kubectl_complete-gitops (a link to it), it is
// the completion executable kubectl 1.26 and newer call for `kubectl gitops <TAB>`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/gitops-service/gitops-service/pkg/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.NewOptions(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}), cli.Args(os.Args))
	stop()
	os.Exit(code)
}
