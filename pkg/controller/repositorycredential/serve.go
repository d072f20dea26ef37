package repositorycredential

import (
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
)

// Serve limits the controller to the tenant namespaces t keeps, as an agent of a fleet does
// (pkg/controller/tenancy); without it the controller serves every namespace. Once its
// instance has released a tenant (after its Applications, which may need the repositories to
// prune, are gone), the tenant's repository Secrets are removed from this instance's Argo CD,
// and its credentials' status left to the instance that takes it. Call it before Run.
func (c *Controller) Serve(t *tenancy.Tenants) error {
	c.served = t
	return t.Watch(c.Controller, c.requeueTenant)
}

// requeueTenant queues the credentials of a tenant whose holder changed, and those its
// repository Secrets here were made for.
func (c *Controller) requeueTenant(namespace string) {
	creds, _ := c.creds.GitOpsDeploymentRepositoryCredentials(namespace).List(labels.Everything())
	for _, cred := range creds {
		c.Enqueue(cred)
	}
	for _, obj := range c.repoSecrets.List() {
		if keys, _ := credentialOfRepoSecret(obj); len(keys) == 1 && strings.HasPrefix(keys[0], namespace+"/") {
			c.Add(keys[0])
		}
	}
}
