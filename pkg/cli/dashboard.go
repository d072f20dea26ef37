package cli

import (
	"context"
	"net"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/cli/dashboard"
)

func newDashboardCommand(o *Options) *cobra.Command {
	var port int
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "dashboard [-n NAMESPACE] [--port PORT] [--no-browser]",
		Short: "Serve a live web dashboard of the namespace on 127.0.0.1, with your credentials",
		Long: `Serve a web page on 127.0.0.1 that shows the namespace as the API shows it to you: each
Application's Environments as a graph with the Snapshot deployed in each and the promotion in
progress, every GitOpsDeployment's sync and health with its resources, each deployment's
timeline of syncs (DeploymentRecords: who, what commit, how it ended) with its hold, the diff of
two of its records per resource and field, and the history of writes (AuditEntries), newest
first. It updates live, from watches of the API.

This process is the only thing that talks to the API, with your kubeconfig: the page shows what
RBAC lets you see, and a refusal as such. Sync, approve, reject, roll back (to a record of the
timeline) and release are buttons behind a confirmation, and do what the commands of the same
name do. The page's address holds a random
token that every request must carry (a cookie after the first load): open the URL printed, not
another. The dashboard runs until Ctrl-C.`,
		Example: `  kubectl gitops dashboard -n team-a
  kubectl gitops dashboard --port 8765 --no-browser`,
		Args: exactArgs(0, "dashboard takes no arguments: name the namespace with -n"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			kinds := map[string]resource{"Application": resApplication, "Environment": resEnvironment,
				"SnapshotEnvironmentBinding": resBinding, "Snapshot": resSnapshot, "PromotionRun": resRun,
				"GitOpsDeployment": resDeployment, "AuditEntry": resAuditEntry, "DeploymentRecord": resDeploymentRecord,
				"GitOpsDeploymentHold": resHold}
			srv, err := dashboard.New(dashboard.Config{
				Namespace: ns,
				Client:    c,
				Describe: func(kind string, err error) string {
					return message(apiError(err, "list", kinds[kind], ns, ""))
				},
				Sync: func(ctx context.Context, name string) (string, error) {
					run, err := startSync(ctx, c, ns, name, "")
					if err != nil {
						return "", &userError{msg: message(err)}
					}
					return "gitopsdeploymentsyncrun/" + run.Name + " created: Argo CD syncs " + name + " now", nil
				},
				Decide: func(ctx context.Context, run, env string, approve bool, comment string) (string, error) {
					d := appstudiov1alpha1.ApprovalReject
					if approve {
						d = appstudiov1alpha1.ApprovalApprove
					}
					created, err := decide(ctx, c, ns, run, env, d, comment)
					if err != nil {
						return "", &userError{msg: message(err)}
					}
					return string(created.Spec.Decision) + " of promotionrun " + run + " into " + created.Spec.Environment +
						" recorded (promotionapproval/" + created.Name + ")", nil
				},
				Diff: func(ctx context.Context, deployment, from, to string) (*managedv1alpha1.DeploymentRecordDiff, error) {
					d, err := recordDiff(ctx, c, ns, deployment, from, to)
					if err != nil {
						return nil, &userError{msg: message(err)}
					}
					return d, nil
				},
				Rollback: func(ctx context.Context, deployment, record, reason string) (string, error) {
					held, err := rollback(ctx, c, ns, deployment, record, "", reason, false)
					if err != nil {
						return "", &userError{msg: message(err)}
					}
					return "gitopsdeploymenthold/" + held.Name + ": " + deployment + " held at " + shortSHA(held.Spec.Revision) +
						" (deploymentrecord " + record + ") until released", nil
				},
				Release: func(ctx context.Context, deployment string) (string, error) {
					if err := release(ctx, c, ns, deployment); err != nil {
						return "", &userError{msg: message(err)}
					}
					return "gitopsdeploymenthold/" + deployment + " deleted: " + deployment + " follows its own targetRevision again", nil
				},
			})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return errorf("cannot listen on 127.0.0.1:%d: %v", port, err)
			}
			url := srv.URL(ln.Addr())
			fprintf(o.Out, "Dashboard of namespace %q at %s\nIt runs until Ctrl-C.\n", ns, url)
			if !noBrowser {
				openBrowser(url)
			}
			return srv.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "The port on 127.0.0.1 to serve on; 0: any free port.")
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "Print the URL only; do not open a browser.")
	return cmd
}

// openBrowser opens url in the user's browser, if it can; the URL is printed anyway.
func openBrowser(url string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if cmd.Start() == nil {
		go func() { _ = cmd.Wait() }()
	}
}
