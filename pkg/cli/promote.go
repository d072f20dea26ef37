package cli

import (
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

func newPromoteCommand(o *Options) *cobra.Command {
	var snapshot, to string
	var w waitFlags
	printFlags := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "promote APPLICATION --snapshot SNAPSHOT --to ENVIRONMENT",
		Short: "Promote a Snapshot of an Application into an Environment: create a manual PromotionRun",
		Long: `Create a PromotionRun that points the binding of APPLICATION to ENVIRONMENT at SNAPSHOT (making
the binding when there is none) and ends when every GitOpsDeployment of the binding is Synced and
Healthy at the commit generated for the Snapshot. The Environment's gates apply (approvals,
change windows, soak, verification). With --wait, wait until the run is Complete and exit
non-zero when it failed or did not end within --timeout.`,
		Example: `  kubectl gitops promote shop --snapshot shop-42 --to prod
  kubectl gitops promote shop --snapshot shop-42 --to staging --wait --timeout 15m`,
		Args:              exactArgs(1, "promote takes the name of an Application"),
		ValidArgsFunction: completeNames(o, resApplication),
		RunE: func(cmd *cobra.Command, args []string) error {
			if snapshot == "" || to == "" {
				return errorf("promote needs --snapshot and --to: kubectl gitops promote %s --snapshot SNAPSHOT --to ENVIRONMENT", args[0])
			}
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
			studio := c.AppStudioV1alpha1()
			// The server stores a run whatever it names, and the run waits for a missing
			// Snapshot or Environment: say so now rather than through a waiting run.
			if _, err := getApplication(ctx, c, ns, args[0]); err != nil {
				return err
			}
			s, err := studio.Snapshots(ns).Get(ctx, snapshot, metav1.GetOptions{})
			if err != nil {
				return apiError(err, "get", resSnapshot, ns, snapshot)
			}
			if s.Spec.Application != args[0] {
				return errorf("snapshot %q is of application %q, not %q", snapshot, s.Spec.Application, args[0])
			}
			if _, err := studio.Environments(ns).Get(ctx, to, metav1.GetOptions{}); err != nil {
				return apiError(err, "get", resEnvironment, ns, to)
			}
			run := &appstudiov1alpha1.PromotionRun{
				ObjectMeta: metav1.ObjectMeta{GenerateName: generateName(strings.ToLower(snapshot + "-to-" + to))},
				Spec: appstudiov1alpha1.PromotionRunSpec{Application: args[0], Snapshot: snapshot,
					ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: to}},
			}
			created, err := studio.PromotionRuns(ns).Create(ctx, run, metav1.CreateOptions{})
			if err != nil {
				return apiError(err, "create", resRun, ns, "")
			}
			if err := printer.PrintObj(created, o.Out); err != nil {
				return err
			}
			if !w.wait {
				return nil
			}
			return waitFor(ctx, o, w.timeout, goalPromoted, resRun, ns, created.Name)
		},
	}
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "The Snapshot to promote (required).")
	cmd.Flags().StringVar(&to, "to", "", "The Environment to promote into (required).")
	_ = cmd.RegisterFlagCompletionFunc("snapshot", flagNames(o, resSnapshot))
	_ = cmd.RegisterFlagCompletionFunc("to", flagNames(o, resEnvironment))
	w.addFlags(cmd, "until the run is Complete")
	printFlags.AddFlags(cmd)
	return cmd
}
