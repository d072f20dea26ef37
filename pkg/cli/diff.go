package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/cli/records"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

var resRecord = resource{"DeploymentRecord", "deploymentrecords", managedv1alpha1.GroupName}

func newDiffCommand(o *Options) *cobra.Command {
	var from, to, output string
	cmd := &cobra.Command{
		Use:   "diff NAME [--from RECORD] [--to RECORD]",
		Short: "Show what changed between two syncs of a GitOpsDeployment, per resource and field",
		Long: `Show the difference between the manifests two DeploymentRecords of the GitOpsDeployment NAME
kept (the deploymentrecords/diff subresource): each resource added, removed or modified, and for a
modified one each field with its value before and after. A Secret's values are never shown: only
their redaction markers, which differ when the value changed.

By default the two newest records are compared; --to alone compares it with the record before it.`,
		Example: `  kubectl gitops diff web
  kubectl gitops diff web --from web-1765022400-1 --to web-1765026000-1 -o yaml`,
		Args:              exactArgs(1, "diff takes the name of a GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "json", "yaml":
			default:
				return errorf("--output %q is not supported: use json or yaml", output)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			d, err := recordDiff(cmd.Context(), c, ns, args[0], from, to)
			if err != nil {
				return err
			}
			d.APIVersion, d.Kind = managedv1alpha1.SchemeGroupVersion.String(), "DeploymentRecordDiff"
			return printDiff(o.Out, output, args[0], d)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "The record to compare from (default: the one before --to).")
	cmd.Flags().StringVar(&to, "to", "", "The record to compare to (default: the newest).")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml. Default: text.")
	return cmd
}

// recordDiff is the diff of two records of deployment name (deploymentrecords/diff): from
// and to, or those pickRecords fills in. What `kubectl gitops diff` prints and the dashboard
// shows.
func recordDiff(ctx context.Context, c versioned.Interface, ns, name, from, to string) (*managedv1alpha1.DeploymentRecordDiff, error) {
	if from == "" || to == "" {
		list, err := c.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "spec.gitOpsDeploymentName=" + name})
		if err != nil {
			return nil, apiError(err, "list", resRecord, ns, "")
		}
		if from, to, err = pickRecords(name, list.Items, from, to); err != nil {
			return nil, err
		}
	}
	d, err := c.ManagedGitopsV1alpha1().DeploymentRecords(ns).Diff(ctx, to, &managedv1alpha1.DeploymentRecordDiff{From: from}, metav1.CreateOptions{})
	if apierrors.IsForbidden(err) {
		// In the words of kubectl auth can-i create RESOURCE --subresource=diff.
		return nil, errorf("you may not create %s --subresource=diff%s: %s", resRecord, where(ns), forbiddenReason(err.Error()))
	}
	if err != nil {
		return nil, apiError(err, "create", resRecord, ns, to)
	}
	return d, nil
}

// pickRecords fills in the records the user left out: to is the newest record of deployment,
// from the one before to. Records are ordered by the start of their sync, then by name.
func pickRecords(deployment string, rs []managedv1alpha1.DeploymentRecord, from, to string) (string, string, error) {
	sorted := append([]managedv1alpha1.DeploymentRecord(nil), rs...)
	sort.SliceStable(sorted, func(i, j int) bool { return records.Newer(&sorted[i], &sorted[j]) })
	if to == "" {
		if len(sorted) == 0 {
			return "", "", errorf("gitopsdeployment %q has no DeploymentRecords: it has not synced yet, or does not exist", deployment)
		}
		to = sorted[0].Name
	}
	if from == "" {
		i := 0
		for i < len(sorted) && sorted[i].Name != to {
			i++
		}
		if i+1 >= len(sorted) {
			return "", "", errorf("no DeploymentRecord of gitopsdeployment %q is older than %q: give --from", deployment, to)
		}
		from = sorted[i+1].Name
	}
	return from, to, nil
}

func printDiff(w io.Writer, format, deployment string, d *managedv1alpha1.DeploymentRecordDiff) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case "yaml":
		out, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	_, err := io.WriteString(w, diffText(deployment, d))
	return err
}

// diffText is the diff as a person reads it: one line per resource, + added, - removed,
// ~ modified, and under each modified one its fields, before → after.
func diffText(deployment string, d *managedv1alpha1.DeploymentRecordDiff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitopsdeployment %s: %s (%s) → %s (%s)\n", deployment, d.From, d.FromDigest, d.To, d.ToDigest)
	if len(d.Resources) == 0 {
		b.WriteString("no change\n")
	}
	for _, r := range d.Resources {
		mark := map[managedv1alpha1.ResourceChange]string{managedv1alpha1.ResourceAdded: "+", managedv1alpha1.ResourceRemoved: "-"}[r.Change]
		if mark == "" {
			mark = "~"
		}
		kind := r.Kind
		if r.Group != "" {
			kind = r.Group + "/" + r.Kind
		}
		name := r.Name
		if r.Namespace != "" {
			name = r.Namespace + "/" + r.Name
		}
		fmt.Fprintf(&b, "%s %s %s\n", mark, kind, name)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "    %s: %s → %s\n", f.Path, fieldValue(f.From), fieldValue(f.To))
		}
	}
	if d.Truncated {
		b.WriteString("(cut at the server's size limit: some changes are not shown)\n")
	}
	return b.String()
}

// fieldValue is a field's JSON value, or (none) for a side without one.
func fieldValue(v *runtime.RawExtension) string {
	if v == nil || len(v.Raw) == 0 || string(v.Raw) == "null" {
		return "(none)"
	}
	return string(v.Raw)
}
