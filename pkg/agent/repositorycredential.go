package agent

import (
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/repositorycredential"
)

// setupRepositoryCredentials wires the RepositoryCredential controller, one of the Argo CD
// controllers: it shares the tenants' repository credential Secrets' informer and the Argo CD
// namespace's Secret and ConfigMap informers (the repository Secrets it writes, the trust
// ConfigMaps it reads).
func (a *Agent) setupRepositoryCredentials() error {
	creds := a.gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentRepositoryCredentials()
	credSecrets := a.secretsOf(managedv1alpha1.RepositoryCredentialSecretType)
	argoSecrets, argoConfigMaps := a.argoKubeInformers.Core().V1().Secrets(), a.argoKubeInformers.Core().V1().ConfigMaps()
	ctl, err := repositorycredential.New(creds, credSecrets, argoSecrets, argoConfigMaps, a.argoNamespace, a.gitops, a.kube, a.argoKube, a.events.Recorder)
	if err != nil {
		return err
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, creds.Informer().GetStore())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformers(creds.Informer(), argoConfigMaps.Informer())
}
