package cli

import (
	"context"
	"sort"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

func newStatusCommand(o *Options) *cobra.Command {
	var out treeOutput
	var all bool
	cmd := &cobra.Command{
		Use:   "status [NAME | KIND/NAME]",
		Short: "Show what runs where: Application → Environment → binding → GitOpsDeployment → resources",
		Long: `Show, as a tree, each Application of the namespace, the Environments it may be deployed to
(parents first), the SnapshotEnvironmentBinding that deploys a Snapshot there, its
GitOpsDeployments and the resources Argo CD deployed, each with its sync and health, and the
reason of whatever is not Synced and Healthy. GitOpsDeployments of no binding follow.

NAME is an Application, or a GitOpsDeployment when no Application has that name; KIND/NAME
says which (application/NAME, gitopsdeployment/NAME, binding/NAME).`,
		Example: `  kubectl gitops status
  kubectl gitops status shop -n team-a
  kubectl gitops status gitopsdeployment/web -o wide
  kubectl gitops status -A -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNames(o, resApplication, resDeployment),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.validate(); err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ns := ""
			if !all {
				if ns, err = o.Namespace(); err != nil {
					return err
				}
			}
			var tree *Tree
			if len(args) == 1 {
				if all {
					return errorf("a NAME is looked up in one namespace: leave out --all-namespaces, or use -n")
				}
				tree, err = statusOf(cmd.Context(), c, ns, args[0])
			} else {
				tree, err = statusAll(cmd.Context(), c, ns)
			}
			if err != nil {
				return err
			}
			if len(tree.Items) == 0 && !out.structured() {
				fprintf(o.ErrOut, "No Applications or GitOpsDeployments found%s.\n", where(ns))
				return nil
			}
			return out.print(o.Out, tree)
		},
	}
	out.addFlag(cmd)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "Show the Applications and GitOpsDeployments of every namespace you may list.")
	return cmd
}

// statusOf is the tree of one object.
func statusOf(ctx context.Context, c versioned.Interface, ns, arg string) (*Tree, error) {
	r, name, hasKind, err := splitKind(arg)
	if err != nil {
		return nil, err
	}
	tree := &Tree{Namespace: ns}
	if !hasKind || r == resApplication {
		app, err := getApplication(ctx, c, ns, name)
		switch {
		case err == nil:
			n, err := applicationTree(ctx, c, app)
			if err != nil {
				return nil, err
			}
			tree.Items = []*Node{n}
			return tree, nil
		case hasKind || !isNotFound(err):
			return nil, err
		}
		r = resDeployment
	}
	switch r {
	case resDeployment:
		d, err := getDeployment(ctx, c, ns, name)
		if err != nil {
			if !hasKind && isNotFound(err) {
				return nil, errorf("no application or gitopsdeployment %q%s", name, where(ns))
			}
			return nil, err
		}
		tree.Items = []*Node{deploymentNode(d, false)}
	case resBinding:
		b, err := getBinding(ctx, c, ns, name)
		if err != nil {
			return nil, err
		}
		deployments, err := listDeployments(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		tree.Items = []*Node{bindingNode(b, inNamespace(deployments, ns), false)}
	default:
		return nil, errorf("status shows an application, a gitopsdeployment or a binding, not a %s: try `kubectl gitops why %s`", r.name(), arg)
	}
	return tree, nil
}

func applicationTree(ctx context.Context, c versioned.Interface, app *appstudiov1alpha1.Application) (*Node, error) {
	envs, err := listEnvironments(ctx, c, app.Namespace)
	if err != nil {
		return nil, err
	}
	bindings, err := listBindings(ctx, c, app.Namespace)
	if err != nil {
		return nil, err
	}
	deployments, err := listDeployments(ctx, c, app.Namespace)
	if err != nil {
		return nil, err
	}
	return applicationNode(app, envs, bindings, inNamespace(deployments, app.Namespace)), nil
}

// statusAll is every Application of ns (every namespace when ns is empty), then the
// GitOpsDeployments no binding controls. Across namespaces, each namespace is a node of its own.
func statusAll(ctx context.Context, c versioned.Interface, ns string) (*Tree, error) {
	apps, err := c.AppStudioV1alpha1().Applications(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", resApplication, ns, "")
	}
	deployments, err := listDeployments(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	var envs []appstudiov1alpha1.Environment
	var bindings []appstudiov1alpha1.SnapshotEnvironmentBinding
	if len(apps.Items) > 0 {
		if envs, err = listEnvironments(ctx, c, ns); err != nil {
			return nil, err
		}
		if bindings, err = listBindings(ctx, c, ns); err != nil {
			return nil, err
		}
	}
	return statusTree(ns, apps.Items, envs, bindings, deployments), nil
}

// statusTree assembles statusAll's tree from what it listed; deployments are keyed
// namespace/name.
func statusTree(ns string, apps []appstudiov1alpha1.Application, envs []appstudiov1alpha1.Environment,
	bindings []appstudiov1alpha1.SnapshotEnvironmentBinding, deployments map[string]*managedv1alpha1.GitOpsDeployment) *Tree {
	byNS := map[string][]*Node{}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	for i := range apps {
		app := &apps[i]
		var appEnvs []appstudiov1alpha1.Environment
		for _, e := range envs {
			if e.Namespace == app.Namespace {
				appEnvs = append(appEnvs, e)
			}
		}
		var appBindings []appstudiov1alpha1.SnapshotEnvironmentBinding
		for _, b := range bindings {
			if b.Namespace == app.Namespace {
				appBindings = append(appBindings, b)
			}
		}
		byNS[app.Namespace] = append(byNS[app.Namespace], applicationNode(app, appEnvs, appBindings, inNamespace(deployments, app.Namespace)))
	}
	for _, key := range sortedKeys(deployments) {
		d := deployments[key]
		if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == "SnapshotEnvironmentBinding" {
			continue
		}
		byNS[d.Namespace] = append(byNS[d.Namespace], deploymentNode(d, false))
	}
	tree := &Tree{Namespace: ns}
	if ns != "" {
		tree.Items = byNS[ns]
		return tree
	}
	for _, name := range sortedKeys(byNS) {
		tree.Items = append(tree.Items, &Node{Kind: "Namespace", Name: name, Children: byNS[name]})
	}
	return tree
}
