package agent

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
)

// setupEnvironments wires the ManagedEnvironment controller, one of the Argo CD controllers: it
// shares the tenants' managed-environment Secrets' informer (with the appstudio Environment
// controller), the GitOpsDeployment, Application and Argo CD Secret informers, and the
// Operation recorder, and queues a GitOpsDeployment whose environment or cluster Secret changed
// on the GitOpsDeployment controller (setupDeployments runs first). The deployments read their
// environment's cluster through its Clusters.
func (a *Agent) setupEnvironments() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	envs := managed.GitOpsDeploymentManagedEnvironments()
	secrets := a.tenantSecrets(managedv1alpha1.ManagedEnvironmentSecretType)
	ctl, err := managedenvironment.New(envs, secrets, managed.GitOpsDeployments(), a.argoKubeInformers.Core().V1().Secrets(),
		a.argoInformers.Argoproj().V1alpha1().Applications(), a.argoNamespace, a.gitops, a.kube, a.ops, a.events.Recorder,
		a.deploymentCtl.add)
	if err != nil {
		return err
	}
	a.envClusters = ctl.Clusters
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{ctl.Controller, ctl.Run})
	return a.addInformers(envs.Informer(), secrets.Informer())
}

// reconciledEnvironment is the name of the ManagedEnvironment (of namespace) that Argo CD last
// compared app against, or "" for any other cluster (managedenvironment.Clusters).
func (a *Agent) reconciledEnvironment(namespace string, app *argov1alpha1.Application) string {
	if a.envClusters == nil {
		return ""
	}
	return a.envClusters.ReconciledEnvironment(namespace, app)
}
