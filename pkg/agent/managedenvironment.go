package agent

import (
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
)

// setupEnvironments wires the ManagedEnvironment controller, one of the Argo CD controllers: it
// shares the tenants' managed-environment Secrets' informer (with the appstudio Environment
// controller), the GitOpsDeployment, Application and Argo CD Secret informers, and the
// Operation recorder. It queues nothing on the GitOpsDeployment controller, which watches the
// environments and their cluster Secrets itself and reads an environment's cluster through a
// Clusters of its own over the same informers.
func (a *Agent) setupEnvironments() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	envs := managed.GitOpsDeploymentManagedEnvironments()
	secrets := a.secretsOf(managedv1alpha1.ManagedEnvironmentSecretType)
	ctl, err := managedenvironment.New(envs, secrets, managed.GitOpsDeployments(), a.argoKubeInformers.Core().V1().Secrets(),
		a.argoInformers.Argoproj().V1alpha1().Applications(), a.argoNamespace, a.gitops, a.kube, a.argoKube, a.ops, a.events.Recorder)
	if err != nil {
		return err
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, envs.Informer().GetStore())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformers(envs.Informer())
}
