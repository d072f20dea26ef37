package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

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
	var from, to, output, revision string
	var git bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "diff NAME [--from RECORD] [--to RECORD] | diff NAME --git [--revision REF] [--from RECORD]",
		Short: "Show what changed between two syncs of a GitOpsDeployment, or what would change if it synced now, per resource and field",
		Long: `Show the difference between the manifests two DeploymentRecords of the GitOpsDeployment NAME
kept (the deploymentrecords/diff subresource): each resource added, removed or modified, and for a
modified one each field with its value before and after. A Secret's values are never shown: only
their redaction markers, which differ when the value changed.

By default the two newest records are compared; --to alone compares it with the record before it.

With --git, the other side is what Git holds now: the plugin creates a DeploymentPreview, which
the agent renders from the deployment's repository at --revision (default: the branch or tag the
deployment follows, HEAD when it follows none) exactly as a sync would, waits up to --timeout for
it, compares it with --from (default: the newest record, what was deployed last) through the
deploymentpreviews/diff subresource, and deletes it.`,
		Example: `  kubectl gitops diff web
  kubectl gitops diff web --from web-1765022400-1 --to web-1765026000-1 -o yaml
  kubectl gitops diff web --git
  kubectl gitops diff web --git --revision v2.1.0 --from web-1765022400-1`,
		Args:              exactArgs(1, "diff takes the name of a GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "json", "yaml":
			default:
				return errorf("--output %q is not supported: use json or yaml", output)
			}
			switch {
			case git && to != "":
				return errorf("--to and --git: the other side is Git; give one of them")
			case !git && revision != "":
				return errorf("--revision is for --git")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			if git {
				d, toLabel, err := gitDiff(cmd.Context(), o, c, ns, args[0], from, revision, timeout)
				if err != nil {
					return err
				}
				d.APIVersion, d.Kind = managedv1alpha1.SchemeGroupVersion.String(), "DeploymentRecordDiff"
				return printDiffTo(o.Out, output, args[0], d, toLabel)
			}
			d, err := recordDiff(cmd.Context(), c, ns, args[0], from, to)
			if err != nil {
				return err
			}
			d.APIVersion, d.Kind = managedv1alpha1.SchemeGroupVersion.String(), "DeploymentRecordDiff"
			return printDiff(o.Out, output, args[0], d)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "The record to compare from (default: the one before --to; with --git, the newest).")
	cmd.Flags().StringVar(&to, "to", "", "The record to compare to (default: the newest).")
	cmd.Flags().BoolVar(&git, "git", false, "Compare with what Git holds now (a DeploymentPreview the agent renders) instead of a record.")
	cmd.Flags().StringVar(&revision, "revision", "", "With --git: the branch, tag or commit to render (default: the one the deployment follows).")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "With --git: how long to wait for the agent to render the preview.")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml. Default: text.")
	return cmd
}

var resPreview = resource{"DeploymentPreview", "deploymentpreviews", managedv1alpha1.GroupName}

// gitDiff is the diff of record from (the deployment's newest when empty) to what Git holds now
// at revision: a DeploymentPreview created for it, waited for (at most timeout), and deleted
// whatever happens. toLabel names the Git side: "Git REF (SHA)".
func gitDiff(ctx context.Context, o *Options, c versioned.Interface, ns, name, from, revision string, timeout time.Duration) (
	*managedv1alpha1.DeploymentRecordDiff, string, error) {
	if from == "" {
		list, err := c.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "spec.gitOpsDeploymentName=" + name})
		if err != nil {
			return nil, "", apiError(err, "list", resRecord, ns, "")
		}
		if from, err = newestRecord(name, list.Items); err != nil {
			return nil, "", err
		}
	}
	ref := revision
	if ref == "" {
		d, err := c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, "", apiError(err, "get", resDeployment, ns, name)
		}
		ref = cmp.Or(d.Spec.Source.TargetRevision, "HEAD")
	}
	previews := c.ManagedGitopsV1alpha1().DeploymentPreviews(ns)
	p, err := previews.Create(ctx, &managedv1alpha1.DeploymentPreview{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-preview-"},
		Spec:       managedv1alpha1.DeploymentPreviewSpec{GitOpsDeploymentName: name, Revision: revision},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", apiError(err, "create", resPreview, ns, "")
	}
	previewName := p.Name
	defer func() {
		// Not ctx: a preview left behind by an interrupted or timed-out run is removed too
		// (the agent would, at its TTL).
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := previews.Delete(dctx, previewName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fprintf(o.ErrOut, "warning: could not delete %s/%s: %v (the agent deletes it at its TTL)\n", resPreview, previewName, err)
		}
	}()
	fprintf(o.ErrOut, "waiting up to %s for the agent to render %s of gitopsdeployment %s from Git (%s/%s)\n", timeout, ref, name, resPreview, p.Name)
	if p, err = waitRendered(ctx, o, c, ns, p.Name, ref, name, timeout); err != nil {
		return nil, "", err
	}
	d, err := previews.Diff(ctx, p.Name, &managedv1alpha1.DeploymentRecordDiff{From: from}, metav1.CreateOptions{})
	if apierrors.IsForbidden(err) {
		return nil, "", errorf("you may not create %s --subresource=diff%s: %s", resPreview, where(ns), forbiddenReason(err.Error()))
	}
	if err != nil {
		return nil, "", apiError(err, "create", resPreview, ns, p.Name)
	}
	return d, fmt.Sprintf("Git %s (%s)", ref, p.Status.Revision), nil
}

// waitRendered polls the preview until the agent rendered it (or failed to), or timeout passes.
func waitRendered(ctx context.Context, o *Options, c versioned.Interface, ns, preview, ref, deployment string, timeout time.Duration) (
	*managedv1alpha1.DeploymentPreview, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		p, err := c.ManagedGitopsV1alpha1().DeploymentPreviews(ns).Get(ctx, preview, metav1.GetOptions{})
		switch {
		case err != nil && ctx.Err() == nil:
			return nil, apiError(err, "get", resPreview, ns, preview)
		case err == nil && p.Status.Phase == managedv1alpha1.DeploymentPreviewRendered:
			return p, nil
		case err == nil && p.Status.Phase == managedv1alpha1.DeploymentPreviewFailed:
			return nil, errorf("the agent could not render %s of gitopsdeployment %s: %s", ref, deployment, p.Status.Message)
		}
		select {
		case <-ctx.Done():
			return nil, errorf("timed out after %s waiting for the agent to render %s of gitopsdeployment %s (%s/%s has no status.phase Rendered): "+
				"is an agent serving namespace %s, with --repo-server?", timeout, ref, deployment, resPreview, preview, ns)
		case <-time.After(o.PollInterval):
		}
	}
}

// newestRecord is the name of deployment's newest record: what it deployed last.
func newestRecord(deployment string, all []managedv1alpha1.DeploymentRecord) (string, error) {
	// The server selects by field; a client that does not (a fake, a proxy) must not turn
	// another deployment's record into this one's.
	var rs []managedv1alpha1.DeploymentRecord
	for _, r := range all {
		if r.Spec.GitOpsDeploymentName == deployment {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return "", errorf("gitopsdeployment %q has no DeploymentRecords to compare Git with: it has not synced yet, or does not exist", deployment)
	}
	newest := &rs[0]
	for i := range rs[1:] {
		if records.Newer(&rs[i+1], newest) {
			newest = &rs[i+1]
		}
	}
	return newest.Name, nil
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
	return printDiffTo(w, format, deployment, d, fmt.Sprintf("%s (%s)", d.To, d.ToDigest))
}

// printDiffTo prints d with toLabel naming its To side in the text format.
func printDiffTo(w io.Writer, format, deployment string, d *managedv1alpha1.DeploymentRecordDiff, toLabel string) error {
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
	_, err := io.WriteString(w, diffTextTo(deployment, d, toLabel))
	return err
}

// diffText is the diff as a person reads it: one line per resource, + added, - removed,
// ~ modified, and under each modified one its fields, before → after.
func diffText(deployment string, d *managedv1alpha1.DeploymentRecordDiff) string {
	return diffTextTo(deployment, d, fmt.Sprintf("%s (%s)", d.To, d.ToDigest))
}

// diffTextTo is diffText with toLabel naming the To side: "Git main (SHA)" for a preview.
func diffTextTo(deployment string, d *managedv1alpha1.DeploymentRecordDiff, toLabel string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitopsdeployment %s: %s (%s) → %s\n", deployment, d.From, d.FromDigest, toLabel)
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
