// kubectl-gitops is the kubectl plugin of the GitOps Service: on the PATH, `kubectl gitops ...`
// runs it. Its commands are in pkg/cli.
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
	code := cli.Main(ctx, cli.NewOptions(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}), os.Args[1:])
	stop()
	os.Exit(code)
}
