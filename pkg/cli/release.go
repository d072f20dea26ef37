package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

func newReleaseCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release NAME",
		Short: "Release a GitOpsDeployment held by a rollback: delete its GitOpsDeploymentHold",
		Long: `Delete the GitOpsDeploymentHold of the GitOpsDeployment NAME: Argo CD deploys the deployment's
own targetRevision again (the newest commit of its branch, under automated sync), and its Held
condition goes.`,
		Example:           `  kubectl gitops release web`,
		Args:              exactArgs(1, "release takes the name of a held GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resHold),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			name := args[0]
			if err := release(cmd.Context(), c, ns, name); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "gitopsdeploymenthold.%s/%s released\n", resHold.Group, name)
			return nil
		},
	}
	return cmd
}

// release deletes the hold of deployment name: what `kubectl gitops release` and the
// dashboard's Release do.
func release(ctx context.Context, c versioned.Interface, ns, name string) error {
	err := c.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return errorf("gitopsdeployment %q%s is not held: there is no gitopsdeploymenthold %q", name, where(ns), name)
	}
	if err != nil {
		return apiError(err, "delete", resHold, ns, name)
	}
	return nil
}
