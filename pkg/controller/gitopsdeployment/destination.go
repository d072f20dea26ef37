package gitopsdeployment

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// destination is where depl deploys: an Argo CD cluster, always named (destination.name is
// the name of a cluster Secret the agent owns, never a server URL a tenant could aim at
// another cluster Secret with), and a namespace. It does not write anything, so the
// AppProject can be computed from it too.
func (c *Controller) destination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	if depl.Spec.Destination.Environment != "" {
		dest, msg, err := c.envClusters.Destination(depl)
		if msg != "" {
			return dest, &userError{msg}
		}
		return dest, err
	}
	return c.deployers.LocalDestination(depl)
}

// reconciledEnvironment is the name of the ManagedEnvironment (of namespace) that Argo CD last
// compared app against, or "" for any other cluster (managedenvironment.Clusters).
func (c *Controller) reconciledEnvironment(namespace string, app *argov1alpha1.Application) string {
	return c.envClusters.ReconciledEnvironment(namespace, app)
}
