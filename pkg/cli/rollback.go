package cli

import (
	"context"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/cli/records"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

var resHold = resource{"GitOpsDeploymentHold", "gitopsdeploymentholds", managedv1alpha1.GroupName}

func newRollbackCommand(o *Options) *cobra.Command {
	var to, revision, reason string
	var untilNewCommit bool
	printFlags := genericclioptions.NewPrintFlags("rolled back").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "rollback NAME [--to RECORD | --revision COMMIT] [--reason TEXT] [--until-new-commit]",
		Short: "Roll a GitOpsDeployment back to an earlier commit and hold it there: create a GitOpsDeploymentHold",
		Long: `Hold the GitOpsDeployment NAME at an earlier commit: Argo CD deploys that commit, and keeps it
while new commits arrive (automated sync) and promotions rewrite the deployment, until someone
releases it (kubectl gitops release NAME). The deployment shows a Held condition saying who held
it, when and why.

The commit is that of the DeploymentRecord --to, or --revision; by default, that of the newest
succeeded sync before the newest succeeded one, at another commit (kubectl get deploymentrecords
lists them). A deployment already held is held at the new commit instead.

With --until-new-commit the hold also ends by itself: the agent releases it as soon as a commit
newer than the one current now arrives on the deployment's branch (releaseOn NewCommit).`,
		Example: `  kubectl gitops rollback web --reason "v2 breaks checkout"
  kubectl gitops rollback web --to web-1796597202
  kubectl gitops rollback web --revision 8768384c3e7f4e5b9a0d1c2b3a4f5e6d7c8b9a01
  kubectl gitops rollback web --until-new-commit --reason "v2 breaks checkout; the fix is coming"`,
		Args:              exactArgs(1, "rollback takes the name of a GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to != "" && revision != "" {
				return errorf("rollback takes --to RECORD or --revision COMMIT, not both")
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
			held, err := rollback(cmd.Context(), c, ns, args[0], to, revision, reason, untilNewCommit)
			if err != nil {
				return err
			}
			return printer.PrintObj(held, o.Out)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "The DeploymentRecord whose commit to go back to.")
	cmd.Flags().StringVar(&revision, "revision", "", "The commit to go back to.")
	cmd.Flags().StringVar(&reason, "reason", "", "Why, for the deployment's Held condition.")
	cmd.Flags().BoolVar(&untilNewCommit, "until-new-commit", false,
		"Have the agent release the hold once a newer commit arrives on the deployment's branch (releaseOn NewCommit).")
	_ = cmd.RegisterFlagCompletionFunc("to", flagNames(o, resDeploymentRecord))
	printFlags.AddFlags(cmd)
	return cmd
}

// rollback holds deployment name at the commit of record to, or at revision, or (both empty)
// at the one rollbackTarget picks: what `kubectl gitops rollback` and the dashboard's
// "Roll back to this record" do.
func rollback(ctx context.Context, c versioned.Interface, ns, name, to, revision, reason string, untilNewCommit bool) (*managedv1alpha1.GitOpsDeploymentHold, error) {
	if _, err := getDeployment(ctx, c, ns, name); err != nil {
		return nil, err
	}
	spec := managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: revision, Reason: reason}
	if untilNewCommit {
		spec.ReleaseOn = managedv1alpha1.HoldReleaseNewCommit
	}
	if revision == "" {
		rec, err := rollbackRecord(ctx, c, ns, name, to)
		if err != nil {
			return nil, err
		}
		spec.Revision, spec.DeploymentRecord = rec.Spec.Revision, rec.Name
	}
	return hold(ctx, c, ns, name, spec)
}

// rollbackRecord is the DeploymentRecord of deployment name to go back to: record, or when it
// is empty, the one rollbackTarget picks among the deployment's records.
func rollbackRecord(ctx context.Context, c versioned.Interface, ns, name, record string) (*managedv1alpha1.DeploymentRecord, error) {
	rs := c.ManagedGitopsV1alpha1().DeploymentRecords(ns)
	if record != "" {
		r, err := rs.Get(ctx, record, metav1.GetOptions{})
		if err != nil {
			return nil, apiError(err, "get", resDeploymentRecord, ns, record)
		}
		if r.Spec.GitOpsDeploymentName != name {
			return nil, errorf("deploymentrecord %q is of gitopsdeployment %q, not %q", record, r.Spec.GitOpsDeploymentName, name)
		}
		if r.Spec.Revision == "" {
			return nil, errorf("deploymentrecord %q has no commit: its sync failed before Argo CD resolved one", record)
		}
		return r, nil
	}
	list, err := rs.List(ctx, metav1.ListOptions{FieldSelector: "spec.gitOpsDeploymentName=" + name})
	if err != nil {
		return nil, apiError(err, "list", resDeploymentRecord, ns, "")
	}
	// The server selects by field already; a server that did not would mix deployments.
	var own []managedv1alpha1.DeploymentRecord
	for _, r := range list.Items {
		if r.Spec.GitOpsDeploymentName == name {
			own = append(own, r)
		}
	}
	r := rollbackTarget(own)
	if r == nil {
		return nil, errorf("gitopsdeployment %q%s has no earlier succeeded sync at another commit to go back to: name one with --to RECORD or --revision COMMIT", name, where(ns))
	}
	return r, nil
}

// rollbackTarget picks, among a deployment's records, what a rollback goes back to: the
// newest succeeded sync older than the newest succeeded one, at another commit (what ran before
// what runs now). nil when there is none.
func rollbackTarget(rs []managedv1alpha1.DeploymentRecord) *managedv1alpha1.DeploymentRecord {
	var ok []*managedv1alpha1.DeploymentRecord
	for i := range rs {
		if r := &rs[i]; r.Status.Phase == managedv1alpha1.DeploymentRecordSucceeded && r.Spec.Revision != "" {
			ok = append(ok, r)
		}
	}
	records.Sort(ok)
	if len(ok) == 0 {
		return nil
	}
	for _, r := range ok[1:] {
		if r.Spec.Revision != ok[0].Spec.Revision {
			return r
		}
	}
	return nil
}

// hold creates the hold of deployment name, or moves the existing one to spec (the server
// keeps who made it).
func hold(ctx context.Context, c versioned.Interface, ns, name string, spec managedv1alpha1.GitOpsDeploymentHoldSpec) (*managedv1alpha1.GitOpsDeploymentHold, error) {
	holds := c.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns)
	created, err := holds.Create(ctx, &managedv1alpha1.GitOpsDeploymentHold{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
		metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, apiError(err, "create", resHold, ns, "")
	}
	cur, err := holds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, apiError(err, "get", resHold, ns, name)
	}
	cur.Spec = spec
	updated, err := holds.Update(ctx, cur, metav1.UpdateOptions{})
	return updated, apiError(err, "update", resHold, ns, name)
}
