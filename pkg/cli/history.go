package cli

import (
	"context"
	"encoding/json"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/cli/records"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

var resDeploymentRecord = resource{"DeploymentRecord", "deploymentrecords", managedv1alpha1.GroupName}

func newHistoryCommand(o *Options) *cobra.Command {
	var format string
	var audit bool
	cmd := &cobra.Command{
		Use:   "history NAME [--audit]",
		Short: "List the syncs of a GitOpsDeployment, newest first: commit, trigger, who, outcome",
		Long: `List the DeploymentRecords of the GitOpsDeployment NAME, one per sync attempt, newest first:
the commit synced (REVISION), what started it (TRIGGER: SpecChange, NewCommit, SyncRun,
Promotion, Automated, External) and who (USER), how it ended (PHASE), when it started and how
long it took, and the record's name (kubectl get deploymentrecord NAME -o yaml has its
resources). The server keeps the deployment's newest records only (its
spec.revisionHistoryLimit).

With --audit, the writes to the deployment itself (the audit trail's AuditEntries: who, the
verb, the resourceVersion written) are listed among the syncs, by time.`,
		Example: `  kubectl gitops history web
  kubectl gitops history web --audit -n team-a
  kubectl gitops history web -o json`,
		Args:              exactArgs(1, "history takes the name of a GitOpsDeployment"),
		ValidArgsFunction: completeNames(o, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "", "json", "yaml":
			default:
				return errorf("--output %q is not supported: use json or yaml", format)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns, err := o.Namespace()
			if err != nil {
				return err
			}
			h, err := history(cmd.Context(), c, ns, args[0], audit)
			if err != nil {
				return err
			}
			return h.print(o.Out, format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "Output format: json or yaml (a List of the records and entries). Default: a table.")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
	cmd.Flags().BoolVar(&audit, "audit", false, "Also list the writes to the deployment (its AuditEntries), by time among the syncs.")
	return cmd
}

// historyEntry is one line of a history: a sync (record) or a write to the deployment (entry).
type historyEntry struct {
	at     time.Time
	record *managedv1alpha1.DeploymentRecord
	entry  *managedv1alpha1.AuditEntry
}

// deploymentHistory is a deployment's history, newest first.
type deploymentHistory []historyEntry

// history reads the records of deployment name, and with audit its audit entries. The records
// are listed first, so that a user who may not read them hears so (list deploymentrecords)
// rather than of another resource; then the deployment, so that an unknown name is told from a
// deployment with no sync yet.
func history(ctx context.Context, c versioned.Interface, ns, name string, audit bool) (deploymentHistory, error) {
	recs, err := c.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.gitOpsDeploymentName", name).String(),
	})
	if err != nil {
		return nil, apiError(err, "list", resDeploymentRecord, ns, "")
	}
	d, err := getDeployment(ctx, c, ns, name)
	if err != nil {
		return nil, err
	}
	var entries []managedv1alpha1.AuditEntry
	if audit {
		// Writes to the deployment itself, not to its status (the agent's reports).
		list, err := c.ManagedGitopsV1alpha1().AuditEntries(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.SelectorFromSet(fields.Set{"object.resource": resDeployment.Plural, "object.name": name,
				"object.subresource": ""}).String(),
		})
		if err != nil {
			return nil, apiError(err, "list", resAuditEntry, ns, "")
		}
		entries = list.Items
	}
	return mergeHistory(d, recs.Items, entries), nil
}

// mergeHistory is the records of deployment d (not of an earlier object of its name) and its
// own audit entries, newest first; a sync and a write at the same time list the write first,
// as it comes before the sync it starts. The selectors already chose them: the filter repeats
// them for a server that ignored one.
func mergeHistory(d *managedv1alpha1.GitOpsDeployment, recs []managedv1alpha1.DeploymentRecord,
	entries []managedv1alpha1.AuditEntry,
) deploymentHistory {
	var h deploymentHistory
	for i := range recs {
		r := &recs[i]
		if !records.Of(d, r) {
			continue
		}
		h = append(h, historyEntry{at: r.Spec.StartedAt.Time, record: r})
	}
	for i := range entries {
		e := &entries[i]
		if e.Object.Resource != resDeployment.Plural || e.Object.Name != d.Name || e.Object.Subresource != "" ||
			e.Object.UID != "" && d.UID != "" && e.Object.UID != d.UID {
			continue
		}
		// To the second, as a record's startedAt is kept: a write in the second its sync started
		// must tie with the sync (and list below it), not look newer by its fraction.
		h = append(h, historyEntry{at: e.Time.Time.Truncate(time.Second), entry: e})
	}
	sort.SliceStable(h, func(i, j int) bool {
		if !h[i].at.Equal(h[j].at) {
			return h[i].at.After(h[j].at)
		}
		if (h[i].record == nil) != (h[j].record == nil) {
			return h[i].record != nil
		}
		if h[i].record != nil {
			return records.Newer(h[i].record, h[j].record)
		}
		return h[i].name() > h[j].name()
	})
	return h
}

func (e historyEntry) name() string {
	if e.record != nil {
		return e.record.Name
	}
	return e.entry.Name
}

// row is the line of the table: REVISION TRIGGER USER PHASE STARTED DURATION RECORD. A write
// reads "write", its verb, who, its time and the resourceVersion it wrote.
func (e historyEntry) row() []string {
	at := e.at.UTC().Format(time.RFC3339)
	if e.entry != nil {
		who := e.entry.User.Username
		return []string{"-", "write: " + e.entry.Verb, dash(who), "-", at, "-", "rv " + e.entry.Object.ResourceVersion}
	}
	r := e.record
	took := "-"
	if f := r.Status.FinishedAt; f != nil && !f.Before(&r.Spec.StartedAt) {
		took = duration.HumanDuration(f.Sub(r.Spec.StartedAt.Time))
	}
	return []string{dash(shortSHA(r.Spec.Revision)), dash(string(r.Spec.Trigger.Type)), dash(r.Spec.Trigger.User),
		dash(string(r.Status.Phase)), at, took, r.Name}
}

func (h deploymentHistory) print(w io.Writer, format string) error {
	switch format {
	case "json", "yaml":
		return h.printList(w, format)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fprintf(tw, "REVISION\tTRIGGER\tUSER\tPHASE\tSTARTED\tDURATION\tRECORD\n")
	for _, e := range h {
		fprintf(tw, "%s\n", strings.Join(e.row(), "\t"))
	}
	return tw.Flush()
}

// printList prints the history as a kubectl List of the objects, newest first.
func (h deploymentHistory) printList(w io.Writer, format string) error {
	items := make([]runtime.RawExtension, 0, len(h))
	for _, e := range h {
		var obj runtime.Object
		if e.record != nil {
			r := e.record.DeepCopy()
			r.APIVersion, r.Kind = managedv1alpha1.SchemeGroupVersion.String(), resDeploymentRecord.Kind
			obj = r
		} else {
			a := e.entry.DeepCopy()
			a.APIVersion, a.Kind = managedv1alpha1.SchemeGroupVersion.String(), resAuditEntry.Kind
			obj = a
		}
		items = append(items, runtime.RawExtension{Object: obj})
	}
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: items}
	raw, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
	} else {
		raw = append(raw, '\n')
	}
	_, err = w.Write(raw)
	return err
}

// shortSHA is a commit as git log --oneline prints it.
func shortSHA(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

// dash is s, or "-" for nothing, so that a table's columns stay aligned.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
