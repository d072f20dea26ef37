package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

// newDecisionCommand is `approve` or `reject`: a PromotionApproval, what docs/promotion.md has
// an approver create. The server records who decided from the request, and admits it only from
// a user with the verb approve (override for --override) on the Environment.
func newDecisionCommand(o *Options, verb string) *cobra.Command {
	var env, comment string
	var override bool
	printFlags := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use: verb + " PROMOTIONRUN [--env ENVIRONMENT] [-m COMMENT]",
		Example: fmt.Sprintf(`  kubectl gitops %s shop-42.dev-auto --env prod -m "%s"`, verb,
			map[string]string{"approve": "LGTM", "reject": "not during the sale"}[verb]),
		Args:              exactArgs(1, verb+" takes the name of a PromotionRun"),
		ValidArgsFunction: completeNames(o, resRun),
	}
	decision := appstudiov1alpha1.ApprovalApprove
	if verb == "approve" {
		cmd.Short = "Approve a PromotionRun's promotion into an Environment: create a PromotionApproval"
		cmd.Long = `Approve the promotion of PROMOTIONRUN into ENVIRONMENT, as yourself: create a PromotionApproval
(decision Approve; with --override, Override, which also lets the run through the Environment's
change windows and freezes and needs a comment). Approving takes the verb approve on the
Environment (override for --override): kubectl auth can-i approve environments/ENVIRONMENT.
Each user decides once per run and Environment.

Without --env, the Environment is the one the run waits at for approvals, else the one step in
progress, else the target of a manual run.`
	} else {
		decision = appstudiov1alpha1.ApprovalReject
		cmd.Short = "Reject a PromotionRun's promotion into an Environment: create a PromotionApproval"
		cmd.Long = `Reject the promotion of PROMOTIONRUN into ENVIRONMENT, as yourself: create a PromotionApproval
with decision Reject and the comment saying why (required). A Reject before the promotion
entered the Environment fails the step and the run. It takes the verb approve on the
Environment.

Without --env, the Environment is the one the run waits at for approvals, else the one step in
progress, else the target of a manual run.`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		d := decision
		if override {
			d = appstudiov1alpha1.ApprovalOverride
		}
		if d != appstudiov1alpha1.ApprovalApprove && strings.TrimSpace(comment) == "" {
			return errorf("%s says why: give -m COMMENT", map[bool]string{true: "an override", false: "a rejection"}[override])
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
		created, err := decide(cmd.Context(), c, ns, args[0], env, d, comment)
		if err != nil {
			return err
		}
		if printFlags.OutputFlagSpecified != nil && printFlags.OutputFlagSpecified() {
			return printer.PrintObj(created, o.Out)
		}
		who := created.Spec.Username
		if who == "" {
			who = "you"
		}
		fprintf(o.Out, "%s: %s of promotionrun %q into environment %q, recorded as %s's\n",
			"promotionapproval."+appstudiov1alpha1.GroupName+"/"+created.Name, created.Spec.Decision, created.Spec.PromotionRun, created.Spec.Environment, who)
		return nil
	}
	cmd.Flags().StringVar(&env, "env", "", "The Environment the decision is for.")
	cmd.Flags().StringVarP(&comment, "comment", "m", "", "Why (required to reject or override).")
	if verb == "approve" {
		cmd.Flags().BoolVar(&override, "override", false, "Override: let the run through the Environment's change windows and freezes (needs the verb override, and -m).")
	}
	_ = cmd.RegisterFlagCompletionFunc("env", flagNames(o, resEnvironment))
	printFlags.AddFlags(cmd)
	return cmd
}

// decide creates the PromotionApproval of decision d on the promotion of the PromotionRun
// runName into env (empty: decisionEnvironment's); approve, reject and the dashboard's buttons
// call it.
func decide(ctx context.Context, c versioned.Interface, ns, runName, env string, d appstudiov1alpha1.ApprovalDecision, comment string) (*appstudiov1alpha1.PromotionApproval, error) {
	if d != appstudiov1alpha1.ApprovalApprove && strings.TrimSpace(comment) == "" {
		return nil, errorf("%s says why: give -m COMMENT", map[bool]string{true: "an override", false: "a rejection"}[d == appstudiov1alpha1.ApprovalOverride])
	}
	run, err := getRun(ctx, c, ns, runName)
	if err != nil {
		return nil, err
	}
	if env == "" {
		if env, err = decisionEnvironment(run); err != nil {
			return nil, err
		}
	}
	approval := &appstudiov1alpha1.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{GenerateName: generateName(strings.ToLower(strings.ReplaceAll(run.Name, ".", "-") + "-" + env))},
		Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: run.Name, Environment: env,
			Decision: d, Comment: comment},
	}
	created, err := c.AppStudioV1alpha1().PromotionApprovals(ns).Create(ctx, approval, metav1.CreateOptions{})
	return created, apiError(err, "create", resApproval, ns, "")
}

// decisionEnvironment is the Environment a decision on run is for when the user names none:
// the step waiting for approvals, else the one step in progress, else a manual run's target.
func decisionEnvironment(run *appstudiov1alpha1.PromotionRun) (string, error) {
	var inProgress []string
	for _, s := range run.Status.EnvironmentStatus {
		if s.Status != appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress {
			continue
		}
		if strings.HasPrefix(s.DisplayStatus, "Waiting for approvals") {
			return s.EnvironmentName, nil
		}
		inProgress = append(inProgress, s.EnvironmentName)
	}
	switch {
	case len(inProgress) == 1:
		return inProgress[0], nil
	case len(inProgress) > 1:
		return "", errorf("promotionrun %q is in progress in environments %s: name one with --env", run.Name, strings.Join(inProgress, ", "))
	case run.Spec.ManualPromotion.TargetEnvironment != "":
		return run.Spec.ManualPromotion.TargetEnvironment, nil
	}
	return "", errorf("promotionrun %q waits in no environment: name one with --env", run.Name)
}
