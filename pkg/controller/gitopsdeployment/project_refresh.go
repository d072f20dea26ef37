package gitopsdeployment

import (
	"context"
	"fmt"
	"slices"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// A tenant's AppProject lists a repository only if no other tenant's repository Secret claims
// it (argocd.RepositoryAllowed; the RepositoryCredential controller,
// pkg/controller/repositorycredential, writes those Secrets). The GitOpsDeployment controller
// learns of them by watching the repository Secrets itself, and the project refresh controller
// makes Argo CD look again at what it refused under the previous AppProject.

// repositoryAllowed tells whether the AppProject of namespace may list repoURL
// (argocd.RepositoryAllowed over the Argo CD namespace's Secrets).
func (c *Controller) repositoryAllowed(namespace, repoURL string) bool {
	return argocd.RepositoryAllowed(c.argoSecretIndex, namespace, repoURL)
}

// watchRepositorySecrets makes the GitOpsDeployments of a repository reconcile again (and
// with them their namespace's AppProject) when a repository Secret for it comes, changes or
// goes; inf is the Argo CD namespace's Secrets' informer.
func (c *Controller) watchRepositorySecrets(inf cache.SharedIndexInformer) error {
	if err := argocd.AddRepositoryURLIndex(inf); err != nil {
		return err
	}
	requeue := func(objs ...interface{}) {
		keys := map[string]bool{}
		for _, obj := range objs {
			obj = framework.UnwrapTombstone(obj)
			if k, _ := argocd.RepositoryURLOfSecret(obj); len(k) == 1 {
				keys[k[0]] = true
			}
		}
		if len(keys) == 0 {
			return
		}
		depls, err := c.deployments.List(labels.Everything())
		if err != nil {
			klog.ErrorS(err, "listing GitOpsDeployments")
			return
		}
		for _, d := range depls {
			if keys[argocd.RepositoryKey(d.Spec.Source.RepoURL)] {
				c.Add(deploymentKey(d))
			}
		}
	}
	if err := c.Watch(inf, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { requeue(obj) },
		UpdateFunc: func(old, obj interface{}) { requeue(old, obj) },
		DeleteFunc: func(obj interface{}) { requeue(obj) },
	}); err != nil {
		return err
	}
	return nil
}

// setupProjectRefresh asks Argo CD to refresh the refused Applications of an AppProject that
// was created (again) or whose sources or destinations changed. Argo CD 2.14 does not re-check
// Applications when their project changes: one it refused ("not permitted in project", or a
// project deleted and made again while it was created) would stay refused until its periodic
// resync, minutes later.
func (c *Controller) setupProjectRefresh(projects cache.SharedIndexInformer) error {
	ctl := framework.NewController(ProjectRefreshName, c.refreshProjectApplications)
	c.ProjectRefresh = ctl
	err := ctl.Watch(projects, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*argov1alpha1.AppProject); ok && p.Labels[argocd.LabelTenantNamespace] != "" {
				ctl.Enqueue(p)
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*argov1alpha1.AppProject), obj.(*argov1alpha1.AppProject)
			// slices.Equal, not reflection: ApplicationDestination has an unexported field.
			if n.Labels[argocd.LabelTenantNamespace] != "" && (!slices.Equal(o.Spec.SourceRepos, n.Spec.SourceRepos) ||
				!slices.Equal(o.Spec.Destinations, n.Spec.Destinations) ||
				!slices.Equal(o.Spec.DestinationServiceAccounts, n.Spec.DestinationServiceAccounts)) {
				ctl.Enqueue(n)
			}
		},
	})
	return err
}

// argoRefreshAnnotation makes Argo CD's application controller compare an Application again
// at once; it removes the annotation when done.
const argoRefreshAnnotation = "argocd.argoproj.io/refresh"

func (c *Controller) refreshProjectApplications(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	proj, err := c.projects.AppProjects(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	apps, err := c.applications.Applications(c.argoNamespace).List(labels.SelectorFromSet(labels.Set{
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
		_, err := c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Patch(ctx, app.Name, types.MergePatchType, patch,
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
