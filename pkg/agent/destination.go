package agent

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
)

// destination is where depl deploys: an Argo CD cluster, always named (destination.name is
// the name of a cluster Secret the agent owns, never a server URL a tenant could aim at
// another cluster Secret with), and a namespace. It does not write anything, so the
// AppProject can be computed from it too.
func (a *Agent) destination(depl *managedv1alpha1.GitOpsDeployment) (argov1alpha1.ApplicationDestination, error) {
	if depl.Spec.Destination.Environment != "" {
		if a.envClusters == nil {
			return argov1alpha1.ApplicationDestination{}, &userError{managedenvironment.UserErrorManagedEnvironment}
		}
		dest, msg, err := a.envClusters.Destination(depl)
		if msg != "" {
			return dest, &userError{msg}
		}
		return dest, err
	}
	return a.localDestination(depl)
}

// deleteSecret deletes a Secret of the Argo CD namespace; a missing one is not an error.
func (a *Agent) deleteSecret(ctx context.Context, name string) error {
	return argocd.DeleteSecret(ctx, a.kube, a.argoNamespace, name)
}
