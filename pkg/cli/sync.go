package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

func newSyncCommand(o *Options) *cobra.Command {
	var revision string
	var w waitFlags
	printFlags := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "sync NAME [--revision COMMIT]",
		Short: "Sync a manual GitOpsDeployment now: create a GitOpsDeploymentSyncRun",
		Long: `Create a GitOpsDeploymentSyncRun for the manual GitOpsDeployment NAME, which asks Argo CD for
one sync (that prunes) of its targetRevision, or of --revision. SyncRuns of a deployment run one
at a time, in creation order. With --wait, wait until the sync has ended and exit non-zero when
it failed or did not end within --timeout.

Automated deployments sync by themselves on every change: sync refuses them.`,
		Example: `  kubectl gitops sync web-manual
  kubectl gitops sync web-manual --revision 8768384c3e7f4e5b9a0d1c2b3a4f5e6d7c8b9a01 --wait --timeout 5m`,
		Args:              exactArgs(1, "sync takes the name of a manual GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			printer, err := printFlags.ToPrinter()
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			created, err := startSync(ctx, c, ns, args[0], revision)
			if err != nil {
				return err
			}
			if err := printer.PrintObj(created, o.Out); err != nil {
				return err
			}
			if !w.wait {
				return nil
			}
			return waitFor(ctx, o, w.timeout, goalSynced, resSyncRun, ns, created.Name)
		},
	}
	cmd.Flags().StringVar(&revision, "revision", "", "The commit to sync to (spec.revisionID); empty: the deployment's targetRevision.")
	w.addFlags(cmd, "until the sync has ended")
	printFlags.AddFlags(cmd)
	return cmd
}

// startSync creates a GitOpsDeploymentSyncRun of the manual GitOpsDeployment name at revision
// (empty: its targetRevision); `sync` and the dashboard's Sync button call it.
func startSync(ctx context.Context, c versioned.Interface, ns, name, revision string) (*managedv1alpha1.GitOpsDeploymentSyncRun, error) {
	d, err := getDeployment(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	if d.Spec.Type != managedv1alpha1.GitOpsDeploymentSpecTypeManual {
		return nil, errorf("gitopsdeployment %q%s is %s: Argo CD syncs it by itself on every change; a SyncRun is for manual deployments (spec.type: manual)", d.Name, where(ns), d.Spec.Type)
	}
	run := &managedv1alpha1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{GenerateName: generateName(d.Name)},
		Spec:       managedv1alpha1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: d.Name, RevisionID: revision},
	}
	created, err := c.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Create(ctx, run, metav1.CreateOptions{})
	return created, apiError(err, "create", resSyncRun, ns, "")
}

// waitFlags are --wait and --timeout of the commands that may wait for what they started.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) addFlags(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "Wait "+what+"; exit non-zero if it fails or --timeout passes.")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 5*time.Minute, "With --wait: how long to wait.")
}

// generateName is metadata.generateName for objects made on behalf of base: base and a dash,
// cut so that the server's five characters fit in a name.
func generateName(base string) string {
	if len(base) > 200 {
		base = base[:200]
	}
	return base + "-"
}
