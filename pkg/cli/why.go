package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

func newWhyCommand(o *Options) *cobra.Command {
	var out treeOutput
	cmd := &cobra.Command{
		Use:   "why NAME | KIND/NAME",
		Short: "Explain why a PromotionRun, binding or GitOpsDeployment is not done: the chain down to the failing resource",
		Long: `Follow a PromotionRun, a SnapshotEnvironmentBinding or a GitOpsDeployment down to what fails:
the run's steps that did not succeed and what each waits for, the binding of each such step and
its AllComponentsDeployed condition, the GitOpsDeployments that are not Synced and Healthy with
the reason the service gives (ErrorOccurred, Argo CD's errors, a failed sync, ResourcesReady),
and the resources that are not, with Argo CD's message. Links that are well are left out.

A bare NAME is looked up as a PromotionRun, then a binding, then a GitOpsDeployment;
KIND/NAME says which (promotionrun/NAME, binding/NAME, gitopsdeployment/NAME).`,
		Example: `  kubectl gitops why web
  kubectl gitops why promotionrun/shop-42.dev-auto -n team-a`,
		Args:              exactArgs(1, "why takes the name of a PromotionRun, binding or GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resRun, resBinding, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
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
			n, err := explain(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			if err := out.print(o.Out, &Tree{Namespace: ns, Items: []*Node{n}}); err != nil {
				return err
			}
			if !out.structured() {
				fprintf(o.Out, "%s\n", verdict(n))
			}
			return nil
		},
	}
	out.addFlag(cmd)
	return cmd
}

// explain finds arg and builds its chain.
func explain(ctx context.Context, c versioned.Interface, ns, arg string) (*Node, error) {
	r, name, hasKind, err := splitKind(arg)
	if err != nil {
		return nil, err
	}
	candidates := []resource{resRun, resBinding, resDeployment}
	if hasKind {
		candidates = []resource{r}
	}
	for _, r := range candidates {
		n, err := explainAs(ctx, c, ns, r, name)
		if err == nil {
			return n, nil
		}
		if hasKind || !isNotFound(err) {
			return nil, err
		}
	}
	return nil, errorf("no promotionrun, snapshotenvironmentbinding or gitopsdeployment %q%s", name, where(ns))
}

func explainAs(ctx context.Context, c versioned.Interface, ns string, r resource, name string) (*Node, error) {
	switch r {
	case resRun:
		run, err := getRun(ctx, c, ns, name)
		if err != nil {
			return nil, err
		}
		bindings, err := listBindings(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		deployments, err := listDeployments(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		return whyRun(run, bindings, inNamespace(deployments, ns)), nil
	case resBinding:
		b, err := getBinding(ctx, c, ns, name)
		if err != nil {
			return nil, err
		}
		deployments, err := listDeployments(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		return whyBinding(b, inNamespace(deployments, ns)), nil
	case resDeployment:
		d, err := getDeployment(ctx, c, ns, name)
		if err != nil {
			return nil, err
		}
		return whyDeployment(d), nil
	}
	return nil, errorf("why explains a promotionrun, a binding or a gitopsdeployment, not a %s", r.name())
}

// exactArgs is cobra.ExactArgs with a message that says what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return errorf("%s (got %d arguments); see %s --help", what, len(args), cmd.CommandPath())
		}
		return nil
	}
}
