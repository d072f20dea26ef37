package agent

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Why project-scoped repository Secrets are not enough: Argo CD 2.14's repo-server keeps one
// local clone per repository URL (normalized) and one cache of its refs, whichever project
// asks. An Application of another project that names a private repository and a commit SHA
// skips ls-remote and fetch (the commit is already in the clone) and gets the manifests without
// any credentials. So a tenant's AppProject lists a repository only if no other tenant holds
// credentials for it, or the tenant holds its own: Argo CD then refuses the Application before
// the repo-server is asked.
//
// A public repository needs no such protection: anyone can read it, shared clone or not. So a
// repository Secret claims its URL (and counts as the tenant's own) only if its credentials
// authenticate something and the repository is not readable anonymously (repositoryClaim,
// repocred.go); the agent marks the others with LabelClaimsRepository "false". Otherwise any
// tenant could take a public repository away from every other tenant with a credential that
// holds nothing. The marker is written by the agent in the Argo CD namespace, where tenants
// cannot write; a repository Secret without it (an older agent's, or one written by hand)
// claims, as before.

// byRepoURL indexes the repository Secrets of the Argo CD namespace by repositoryKey of their url.
const byRepoURL = "repocred-url"

func repoURLOfSecret(obj interface{}) ([]string, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Labels[LabelArgoSecretType] != argoSecretTypeRepository || len(s.Data["url"]) == 0 {
		return nil, nil
	}
	return []string{repositoryKey(string(s.Data["url"]))}, nil
}

// repositoryKey is what Argo CD's repo-server would share a clone between, or coarser: case,
// surrounding space, a ".git" or "/" at the end, user and the "ssh://" of scp-like addresses do
// not count. Coarser only means a tenant is refused a repository it could have used.
func repositoryKey(repoURL string) string {
	s := strings.ToLower(strings.TrimSpace(repoURL))
	if !strings.Contains(s, "://") {
		// git@host:org/repo is ssh://git@host/org/repo.
		if at := strings.Index(s, "@"); at >= 0 {
			if colon := strings.Index(s[at:], ":"); colon >= 0 {
				s = "ssh://" + s[:at+colon] + "/" + s[at+colon+1:]
			}
		}
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = u.Scheme + "://" + u.Host + u.Path
	}
	s = strings.TrimRight(s, "/")
	s = strings.TrimSuffix(s, ".git")
	return strings.TrimRight(s, "/")
}

// repositoryAllowed tells whether the AppProject of namespace may list repoURL: not when a
// repository Secret of another tenant's project holds credentials for it and none of the
// namespace's own does. Secrets without a project (an Argo CD administrator's, for everyone)
// claim nothing.
func (a *Agent) repositoryAllowed(namespace, repoURL string) bool {
	objs, err := a.argoKubeInformers.Core().V1().Secrets().Informer().GetIndexer().ByIndex(byRepoURL, repositoryKey(repoURL))
	if err != nil {
		return false // the index is missing: fail closed
	}
	return allowedBy(namespace, objs)
}

// allowedBy decides repositoryAllowed from the repository Secrets for the URL. A Secret marked
// as not claiming counts for nobody: it neither takes the repository from other tenants nor
// gives it to its own.
func allowedBy(namespace string, repoSecrets []interface{}) bool {
	own, claimed := ProjectName(namespace), false
	for _, obj := range repoSecrets {
		s := obj.(*corev1.Secret)
		if s.Labels[LabelClaimsRepository] == "false" {
			continue
		}
		switch p := string(s.Data["project"]); p {
		case own:
			return true
		case "":
		default:
			claimed = true
		}
	}
	return !claimed
}

// setupRepositoryIsolation makes the GitOpsDeployments of a repository reconcile again (and
// with them their namespace's AppProject) when a repository Secret for it comes, changes or
// goes.
func (a *Agent) setupRepositoryIsolation() error {
	inf := a.argoKubeInformers.Core().V1().Secrets().Informer()
	if err := inf.AddIndexers(cache.Indexers{byRepoURL: repoURLOfSecret}); err != nil {
		return err
	}
	requeue := func(objs ...interface{}) {
		keys := map[string]bool{}
		for _, obj := range objs {
			obj = unwrapTombstone(obj)
			if k, _ := repoURLOfSecret(obj); len(k) == 1 {
				keys[k[0]] = true
			}
		}
		if len(keys) == 0 {
			return
		}
		depls, err := a.deployments.List(labels.Everything())
		if err != nil {
			klog.ErrorS(err, "listing GitOpsDeployments")
			return
		}
		for _, d := range depls {
			if keys[repositoryKey(d.Spec.Source.RepoURL)] {
				a.deploymentCtl.add(deploymentKey(d))
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { requeue(obj) },
		UpdateFunc: func(old, obj interface{}) { requeue(old, obj) },
		DeleteFunc: func(obj interface{}) { requeue(obj) },
	}); err != nil {
		return err
	}
	return a.setupProjectRefresh()
}

// setupProjectRefresh asks Argo CD to refresh the refused Applications of an AppProject that
// was created (again) or whose sources or destinations changed. Argo CD 2.14 does not re-check
// Applications when their project changes: one it refused ("not permitted in project", or a
// project deleted and made again while it was created) would stay refused until its periodic
// resync, minutes later.
func (a *Agent) setupProjectRefresh() error {
	ctl := newController("projectrefresh", a.refreshProjectApplications)
	a.controllers = append(a.controllers, ctl)
	_, err := a.argoInformers.Argoproj().V1alpha1().AppProjects().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*argov1alpha1.AppProject); ok && p.Labels[argocd.LabelTenantNamespace] != "" {
				ctl.enqueue(p)
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*argov1alpha1.AppProject), obj.(*argov1alpha1.AppProject)
			// slices.Equal, not reflection: ApplicationDestination has an unexported field.
			if n.Labels[argocd.LabelTenantNamespace] != "" && (!slices.Equal(o.Spec.SourceRepos, n.Spec.SourceRepos) ||
				!slices.Equal(o.Spec.Destinations, n.Spec.Destinations) ||
				!slices.Equal(o.Spec.DestinationServiceAccounts, n.Spec.DestinationServiceAccounts)) {
				ctl.enqueue(n)
			}
		},
	})
	return err
}

// argoRefreshAnnotation makes Argo CD's application controller compare an Application again
// at once; it removes the annotation when done.
const argoRefreshAnnotation = "argocd.argoproj.io/refresh"

func (a *Agent) refreshProjectApplications(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	proj, err := a.projects.AppProjects(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	apps, err := a.applications.Applications(a.argoNamespace).List(labels.SelectorFromSet(labels.Set{
		argocd.LabelDeploymentNamespace: proj.Labels[argocd.LabelTenantNamespace],
	}))
	if err != nil {
		return err
	}
	patch := []byte(`{"metadata":{"annotations":{"` + argoRefreshAnnotation + `":"normal"}}}`)
	for _, app := range apps {
		if app.Spec.Project != name || app.DeletionTimestamp != nil || !refused(app) {
			continue
		}
		_, err := a.argo.ArgoprojV1alpha1().Applications(a.argoNamespace).Patch(ctx, app.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: fieldManager})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("requesting a refresh of Application %s: %w", app.Name, err)
		}
	}
	return nil
}

// refused tells whether Argo CD refused to compare app against its project.
func refused(app *argov1alpha1.Application) bool {
	for _, c := range app.Status.Conditions {
		if c.Type == argov1alpha1.ApplicationConditionInvalidSpecError {
			return true
		}
	}
	return false
}
