package gitopsdeployment

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
)

// Serve limits the controller to the tenant namespaces t holds, as an agent of a fleet does
// (pkg/controller/tenancy); without it the controller serves every namespace. The objects of a
// tenant it gains are made, and those of a tenant it loses released. Call it before Run.
func (c *Controller) Serve(t *tenancy.Tenants) error {
	c.served = t
	return t.Watch(c.Controller, c.requeueTenant)
}

// requeueTenant queues the keys of a tenant whose holder changed: its deployments, and those
// its Applications here were made for (a deployment deleted meanwhile among them).
func (c *Controller) requeueTenant(namespace string) {
	c.requeueNamespace(namespace)
	for _, app := range c.tenantApplications(namespace) {
		if key, ok := argocd.ApplicationOwner(app); ok {
			c.Add(key)
		}
	}
}

// tenantApplications are the Applications of a tenant namespace in the cache.
func (c *Controller) tenantApplications(namespace string) []*argov1alpha1.Application {
	apps, _ := c.applications.Applications(c.argoNamespace).List(labels.SelectorFromSet(labels.Set{argocd.LabelDeploymentNamespace: namespace}))
	return apps
}

// releaseStep is what releasing one Application of a tenant moving away needs next.
type releaseStep int

const (
	// releaseUnblock takes Argo CD's resources finalizer off first: deleted with it, the
	// Application would take what it deployed along.
	releaseUnblock releaseStep = iota
	// releaseDelete deletes the Application alone. What it deployed stays, tracked by the
	// Application's name, which the instance taking the tenant gives its own Application: the
	// deployed objects are adopted, never re-created.
	releaseDelete
	// releaseRetire goes on retiring an Application whose deployment is gone or going (what it
	// deployed is to be deleted, and the instance taking the tenant would never learn of it):
	// the move waits for it.
	releaseRetire
)

// planRelease decides the next step for app, whose deployment (nil when gone) is of a tenant
// this instance no longer holds.
func planRelease(app *argov1alpha1.Application, depl *managedv1alpha1.GitOpsDeployment) releaseStep {
	switch {
	case depl == nil || depl.DeletionTimestamp != nil || string(depl.UID) != app.Labels[argocd.LabelDeploymentUID]:
		return releaseRetire
	case hasArgoFinalizer(app):
		return releaseUnblock
	default:
		return releaseDelete
	}
}

// release removes what this instance's Argo CD holds for the deployment key of a tenant it no
// longer holds, and the tenant's AppProject once none of its Applications is left. Neither the
// deployment's status nor its finalizer nor the tenant's deployer (but for this instance's
// right to impersonate it) is touched: they are the concern of the instance that takes the
// tenant.
func (c *Controller) release(ctx context.Context, key, namespace, name string) error {
	depl, err := c.deployments.GitOpsDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		depl = nil
	} else if err != nil {
		return err
	}
	objs, err := c.appIndex.ByIndex(argocd.ByDeployment, key)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		app := obj.(*argov1alpha1.Application)
		switch planRelease(app, depl) {
		case releaseRetire:
			err = c.retireApplication(ctx, app)
		case releaseUnblock:
			err = c.dropArgoFinalizers(ctx, app) // its update event brings the key back
		case releaseDelete:
			err = c.deleteApplication(ctx, app)
		}
		if err != nil {
			return err
		}
	}
	return c.releaseProject(ctx, namespace)
}

// releaseProject deletes the AppProject of a tenant this instance no longer holds, and this
// instance's right to impersonate its deployer, once none of its Applications is left here
// (the deletion of the last one brings its key back).
func (c *Controller) releaseProject(ctx context.Context, namespace string) error {
	t := c.tenant(namespace)
	t.mu.Lock()
	defer t.mu.Unlock()
	// The instance taking the tenant may rewrite the deployer for its own Argo CD: should the
	// tenant come back, the deployer is applied again.
	t.deployerApplied.Store(false)
	if len(c.tenantApplications(namespace)) > 0 {
		return nil
	}
	if err := c.deployers.ReleaseImpersonation(ctx, namespace); err != nil {
		return err
	}
	name := argocd.ProjectName(namespace)
	cur, err := c.projects.AppProjects(c.argoNamespace).Get(name)
	if apierrors.IsNotFound(err) {
		cur = nil
	} else if err != nil {
		return err
	}
	// The cache may still show the project this agent deleted moments ago.
	if cur = t.project(cur); cur == nil {
		return nil
	}
	t.wrote(cur, nil)
	err = c.argo.ArgoprojV1alpha1().AppProjects(c.argoNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	c.recordChange(managedv1alpha1.OperationResourceTypeAppProject, "AppProject", name, namespaceSource(namespace), "released", err)
	if err != nil {
		return fmt.Errorf("deleting AppProject %s of a released tenant: %w", name, err)
	}
	klog.V(2).InfoS("released the AppProject of a tenant held elsewhere", "tenant", namespace)
	return nil
}
