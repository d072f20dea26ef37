package syncrun

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
)

// Serve limits the controller to the tenant namespaces t holds, as an agent of a fleet does
// (pkg/controller/tenancy); without it the controller serves every namespace. The SyncRuns of
// a tenant it gains are reconciled; those of a tenant it loses are left to the instance that
// takes it, whose Applications they then act on. Call it before Run.
func (c *Controller) Serve(t *tenancy.Tenants) error {
	c.served = t
	return t.Watch(c.Controller, c.requeueTenant)
}

// requeueTenant queues the deployment keys of a tenant whose holder changed: those of its
// deployments and of its SyncRuns.
func (c *Controller) requeueTenant(namespace string) {
	depls, _ := c.deployments.GitOpsDeployments(namespace).List(labels.Everything())
	for _, d := range depls {
		c.Add(d.Namespace + "/" + d.Name)
	}
	runs, _ := c.runs.ByIndex(cache.NamespaceIndex, namespace)
	for _, obj := range runs {
		if keys, _ := deploymentKeyOfSyncRun(obj); len(keys) > 0 {
			c.Add(keys[0])
		}
	}
}
