// Package cli is kubectl-gitops, the kubectl plugin of the GitOps Service: one file a command,
// the trees it prints (tree.go, why.go) built by pure functions apart from the API calls.
// It talks to the GitOps API only, with the user's own credentials (the kubeconfig, --context,
// --as, as kubectl does, through k8s.io/cli-runtime), so it shows what RBAC lets the user see.
package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/pkg/clientconfig"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// Options are what every command shares: the kubeconfig flags, the streams, and the client
// made from them.
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// NewClient makes the client of the GitOps API; tests replace it with a fake.
	NewClient func(*rest.Config) (versioned.Interface, error)
	// Now and PollInterval drive `wait`; tests shorten them.
	Now          func() time.Time
	PollInterval time.Duration

	client versioned.Interface
}

// NewOptions are the options of a real run.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{
		ConfigFlags: genericclioptions.NewConfigFlags(true),
		IOStreams:   streams,
		NewClient: func(c *rest.Config) (versioned.Interface, error) {
			return versioned.NewForConfig(clientconfig.ProtobufAnswers(c))
		},
		Now:          time.Now,
		PollInterval: time.Second,
	}
}

// Client is the client of the GitOps API with the user's credentials.
func (o *Options) Client() (versioned.Interface, error) {
	if o.client != nil {
		return o.client, nil
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	// Warnings of the server (deprecations, say) go to stderr as kubectl prints them.
	cfg.WarningHandler = rest.NewWarningWriter(o.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	c, err := o.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	o.client = c
	return c, nil
}

// Namespace is the namespace of -n, or of the kubeconfig's context.
func (o *Options) Namespace() (string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	return ns, err
}

// NewCommand is `kubectl gitops` with its subcommands.
func NewCommand(o *Options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-gitops",
		Short: "Deploy, promote and find out why, with the GitOps Service",
		Long: `kubectl gitops answers the questions of the people who deploy with the GitOps Service,
through its API and with your own credentials: what runs where (status), why something is not
healthy (why), and acts: sync a manual deployment, promote a Snapshot, approve or reject a
promotion, roll a deployment back and hold it there (rollback, release), and wait for any of
them in a CI job.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl gitops"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	registerNamespaceCompletion(root, o)
	root.AddCommand(
		newStatusCommand(o),
		newWhyCommand(o),
		newSyncCommand(o),
		newHistoryCommand(o),
		newDiffCommand(o),
		newPromoteCommand(o),
		newRollbackCommand(o),
		newReleaseCommand(o),
		newDecisionCommand(o, "approve"),
		newDecisionCommand(o, "reject"),
		newWaitCommand(o),
		newDashboardCommand(o),
	)
	return root
}

// Main runs the plugin with args and returns its exit code: 0 when the command succeeded, 1
// when it failed (the error is printed on stderr, prefixed with "Error: ").
func Main(ctx context.Context, o *Options, args []string) int {
	cmd := NewCommand(o)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(o.ErrOut, "Error: "+message(err))
		return 1
	}
	return 0
}

// Args are the arguments of the command line argv: those after the program's name, preceded
// by cobra's __complete when the program runs as kubectl_complete-gitops, which kubectl calls
// with the words to complete only.
func Args(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	if strings.HasPrefix(filepath.Base(argv[0]), "kubectl_complete-") {
		return append([]string{cobra.ShellCompRequestCmd}, argv[1:]...)
	}
	return argv[1:]
}

// message is what the user reads of err.
func message(err error) string {
	var ue *userError
	if errors.As(err, &ue) {
		return ue.msg
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	return err.Error()
}
