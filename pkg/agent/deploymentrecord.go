package agent

import (
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentrecord"
)

// setupDeploymentRecords wires the DeploymentRecord controller, one of the Argo CD controllers:
// it records each sync of the deployments its instance serves, from their status.operationState,
// which the GitOpsDeployment controller writes. It shares the GitOpsDeployment informer
// (setupDeployments runs first and registers it) and has the DeploymentRecord informer to
// itself; the audit trail it reads through the API, only when it creates a record.
func (a *Agent) setupDeploymentRecords() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	deployments, records := managed.GitOpsDeployments(), managed.DeploymentRecords()
	ctl, err := deploymentrecord.New(deployments, records, a.gitops)
	if err != nil {
		return err
	}
	if m := a.manifests; m != nil {
		ctl.KeepManifests(deploymentrecord.NewRepoServer(m.RepoServer, a.argo, a.argoKube, a.argoNamespace), m.Redactor)
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, deployments.Informer().GetStore())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformer(records.Informer())
}
