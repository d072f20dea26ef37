package agent

import (
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentpreview"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentrecord"
)

// setupDeploymentPreviews wires the DeploymentPreview controller, one of the Argo CD
// controllers: it renders what a deployment would deploy now with the repo-server and the
// redactor the DeploymentRecords use (so that a record and a preview of the same commit have
// the same digest and the same Secret markers), and deletes previews older than the TTL.
// Without a repo-server every preview fails, saying so. It shares the GitOpsDeployment
// informer (setupDeployments registers it) and has the DeploymentPreview informer to itself.
func (a *Agent) setupDeploymentPreviews() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	deployments, previews := managed.GitOpsDeployments(), managed.DeploymentPreviews()
	ctl, err := deploymentpreview.New(deployments, previews, a.gitops, a.previewTTL)
	if err != nil {
		return err
	}
	if m := a.manifests; m != nil {
		ctl.Render(deploymentrecord.NewRepoServer(m.RepoServer, a.argo, a.argoKube, a.argoNamespace), m.Redactor)
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, previews.Informer().GetStore())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformer(previews.Informer())
}
