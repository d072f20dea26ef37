package cli

import (
	"context"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// kinds that commands take as KIND/NAME, by every name kubectl knows them by.
var kindAliases = map[string]resource{
	"gitopsdeployment": resDeployment, "gitopsdeployments": resDeployment, "deployment": resDeployment, "gd": resDeployment,
	"gitopsdeploymentsyncrun": resSyncRun, "gitopsdeploymentsyncruns": resSyncRun, "syncrun": resSyncRun, "syncruns": resSyncRun,
	"snapshotenvironmentbinding": resBinding, "snapshotenvironmentbindings": resBinding, "binding": resBinding, "aseb": resBinding, "seb": resBinding,
	"promotionrun": resRun, "promotionruns": resRun, "promotion": resRun, "apr": resRun, "run": resRun,
	"application": resApplication, "applications": resApplication, "app": resApplication,
}

// splitKind splits KIND/NAME (KIND as kubectl writes it, with or without .group); a bare name
// has no kind.
func splitKind(arg string) (resource, string, bool, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return resource{}, arg, false, nil
	}
	kind, _, _ = strings.Cut(strings.ToLower(kind), ".")
	r, known := kindAliases[kind]
	if !known || name == "" {
		return resource{}, "", false, errorf("%q: unknown kind %q; use gitopsdeployment/NAME, syncrun/NAME, binding/NAME, promotionrun/NAME or application/NAME", arg, kind)
	}
	return r, name, true, nil
}

func getDeployment(ctx context.Context, c versioned.Interface, ns, name string) (*managedv1alpha1.GitOpsDeployment, error) {
	d, err := c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
	return d, apiError(err, "get", resDeployment, ns, name)
}

func getSyncRun(ctx context.Context, c versioned.Interface, ns, name string) (*managedv1alpha1.GitOpsDeploymentSyncRun, error) {
	s, err := c.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Get(ctx, name, metav1.GetOptions{})
	return s, apiError(err, "get", resSyncRun, ns, name)
}

func getBinding(ctx context.Context, c versioned.Interface, ns, name string) (*appstudiov1alpha1.SnapshotEnvironmentBinding, error) {
	b, err := c.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).Get(ctx, name, metav1.GetOptions{})
	return b, apiError(err, "get", resBinding, ns, name)
}

func getRun(ctx context.Context, c versioned.Interface, ns, name string) (*appstudiov1alpha1.PromotionRun, error) {
	r, err := c.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, name, metav1.GetOptions{})
	return r, apiError(err, "get", resRun, ns, name)
}

func getApplication(ctx context.Context, c versioned.Interface, ns, name string) (*appstudiov1alpha1.Application, error) {
	a, err := c.AppStudioV1alpha1().Applications(ns).Get(ctx, name, metav1.GetOptions{})
	return a, apiError(err, "get", resApplication, ns, name)
}

// listDeployments are the GitOpsDeployments of ns by name.
func listDeployments(ctx context.Context, c versioned.Interface, ns string) (map[string]*managedv1alpha1.GitOpsDeployment, error) {
	list, err := c.ManagedGitopsV1alpha1().GitOpsDeployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", resDeployment, ns, "")
	}
	out := make(map[string]*managedv1alpha1.GitOpsDeployment, len(list.Items))
	for i := range list.Items {
		d := &list.Items[i]
		out[d.Namespace+"/"+d.Name] = d
	}
	return out, nil
}

func listBindings(ctx context.Context, c versioned.Interface, ns string) ([]appstudiov1alpha1.SnapshotEnvironmentBinding, error) {
	list, err := c.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", resBinding, ns, "")
	}
	return list.Items, nil
}

func listEnvironments(ctx context.Context, c versioned.Interface, ns string) ([]appstudiov1alpha1.Environment, error) {
	list, err := c.AppStudioV1alpha1().Environments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError(err, "list", resEnvironment, ns, "")
	}
	return list.Items, nil
}

// inNamespace are the deployments of ns, keyed by name alone, as the trees look them up.
func inNamespace(all map[string]*managedv1alpha1.GitOpsDeployment, ns string) map[string]*managedv1alpha1.GitOpsDeployment {
	out := map[string]*managedv1alpha1.GitOpsDeployment{}
	for _, d := range all {
		if d.Namespace == ns {
			out[d.Name] = d
		}
	}
	return out
}

// sortedKeys of a map, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
