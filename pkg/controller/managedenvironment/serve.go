package managedenvironment

import (
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
)

// Serve limits the controller to the tenant namespaces t keeps, as an agent of a fleet does
// (pkg/controller/tenancy); without it the controller serves every namespace. Once its
// instance has released a tenant (after its Applications, which may need the clusters to
// prune, are gone), the tenant's environments are taken out of this instance's cluster
// Secrets, and their status, finalizer and remote ServiceAccounts left to the instance that
// takes it. Call it before Run.
func (e *Controller) Serve(t *tenancy.Tenants) error {
	e.served = t
	return t.Watch(e.Controller, e.requeueTenant)
}

// requeueTenant queues the environments of a tenant whose holder changed, and the namespace's
// own key, which collects the cluster Secrets it no longer uses.
func (e *Controller) requeueTenant(namespace string) {
	envs, _ := e.envs.GitOpsDeploymentManagedEnvironments(namespace).List(labels.Everything())
	for _, env := range envs {
		e.Enqueue(env)
	}
	e.Add(namespaceKey(namespace))
}
