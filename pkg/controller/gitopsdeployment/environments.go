package gitopsdeployment

import (
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
)

// A GitOpsDeployment that deploys through a ManagedEnvironment follows it: the environment's
// own events (its status says whether it connects), and those of the shared Argo CD cluster
// Secrets that list it (managedenvironment.Clusters), whose changes may give the deployment a
// cluster or take it away. The controller watches both itself, as the ManagedEnvironment
// controller queues nothing of its, and finds an environment's deployments by an index.

// byEnvironment indexes GitOpsDeployments by the "namespace/name" of their environment.
const byEnvironment = "gitopsdeployment-environment"

func environmentKeyOfDeployment(obj interface{}) ([]string, error) {
	d, ok := obj.(*managedv1alpha1.GitOpsDeployment)
	if !ok || d.Spec.Destination.Environment == "" {
		return nil, nil
	}
	return []string{d.Namespace + "/" + d.Spec.Destination.Environment}, nil
}

// watchEnvironments queues the deployments of an environment at each of its events, and at
// each event of a shared cluster Secret that concerns it
// (managedenvironment.ClusterSecretEnvironments); argoSecrets is the Argo CD namespace's
// Secrets' informer.
func (c *Controller) watchEnvironments(deployments, environments, argoSecrets cache.SharedIndexInformer) error {
	if err := deployments.AddIndexers(cache.Indexers{byEnvironment: environmentKeyOfDeployment}); err != nil {
		return err
	}
	c.deploymentIndex = deployments.GetIndexer()
	if err := c.Watch(environments, cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onEnvironment,
		UpdateFunc: func(_, obj interface{}) { c.onEnvironment(obj) },
		DeleteFunc: c.onEnvironment,
	}); err != nil {
		return err
	}
	err := c.Watch(argoSecrets, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.onClusterSecret(nil, obj, false) },
		UpdateFunc: func(old, obj interface{}) { c.onClusterSecret(old, obj, false) },
		DeleteFunc: func(obj interface{}) { c.onClusterSecret(nil, obj, true) },
	})
	return err
}

// onEnvironment queues the deployments of an environment that came, changed or went.
func (c *Controller) onEnvironment(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.enqueueDeploymentsOf(key)
}

// onClusterSecret queues the deployments of the environments an event of a Secret of the Argo
// CD namespace concerns: old is the previous object of an update, deleted says a delete.
func (c *Controller) onClusterSecret(old, obj interface{}, deleted bool) {
	for _, key := range managedenvironment.ClusterSecretEnvironments(old, obj, deleted) {
		c.enqueueDeploymentsOf(key)
	}
}

// enqueueDeploymentsOf queues the GitOpsDeployments that deploy through the environment key.
func (c *Controller) enqueueDeploymentsOf(key string) {
	depls, _ := c.deploymentIndex.ByIndex(byEnvironment, key)
	for _, d := range depls {
		if k, err := cache.MetaNamespaceKeyFunc(d); err == nil {
			c.Add(k)
		}
	}
}
