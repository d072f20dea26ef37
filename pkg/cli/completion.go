package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// Shell completion: cobra's `completion bash|zsh|fish|powershell` writes the script; names of
// objects and namespaces are completed by asking the API, with the user's credentials, as the
// command line stands (its -n, --context, --kubeconfig). What the user may not list completes
// to nothing.

// completeNames completes the one positional argument with the names of the kinds rs in the
// command line's namespace.
func completeNames(o *Options, rs ...resource) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	names := flagNames(o, rs...)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cmd, args, toComplete)
	}
}

// flagNames completes a flag's value with the names of the kinds rs.
func flagNames(o *Options, rs ...resource) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := o.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := o.Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out []string
		for _, r := range rs {
			for _, name := range listNames(ctx, c, r, ns) {
				if strings.HasPrefix(name, toComplete) {
					out = append(out, name)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// listNames are the names of r in ns, or none when they cannot be listed.
func listNames(ctx context.Context, c versioned.Interface, r resource, ns string) []string {
	opts := metav1.ListOptions{}
	var list interface{}
	var err error
	switch r {
	case resDeployment:
		list, err = c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).List(ctx, opts)
	case resSyncRun:
		list, err = c.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).List(ctx, opts)
	case resApplication:
		list, err = c.AppStudioV1alpha1().Applications(ns).List(ctx, opts)
	case resEnvironment:
		list, err = c.AppStudioV1alpha1().Environments(ns).List(ctx, opts)
	case resSnapshot:
		list, err = c.AppStudioV1alpha1().Snapshots(ns).List(ctx, opts)
	case resBinding:
		list, err = c.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).List(ctx, opts)
	case resRun:
		list, err = c.AppStudioV1alpha1().PromotionRuns(ns).List(ctx, opts)
	case resDeploymentRecord:
		list, err = c.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, opts)
	case resHold:
		list, err = c.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).List(ctx, opts)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	items, err := meta.ExtractList(list.(runtime.Object))
	if err != nil {
		return nil
	}
	var names []string
	for _, item := range items {
		if m, err := meta.Accessor(item); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names
}

// registerNamespaceCompletion completes -n with the namespaces the user may list.
func registerNamespaceCompletion(root *cobra.Command, o *Options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := o.ConfigFlags.ToRESTConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, n := range list.Items {
			if strings.HasPrefix(n.Name, toComplete) {
				out = append(out, n.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}
