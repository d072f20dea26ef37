package agent

import (
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
)

// setupSyncRuns wires the SyncRun controller, one of the Argo CD controllers: it shares the
// GitOpsDeployment and Application informers of the GitOpsDeployment controller (setupDeployments
// runs first and registers them) and the Operation recorder.
func (a *Agent) setupSyncRuns() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	runs := managed.GitOpsDeploymentSyncRuns()
	ctl, err := syncrun.New(runs, managed.GitOpsDeployments(), a.argoInformers.Argoproj().V1alpha1().Applications(),
		a.gitops, a.argo, a.ops, a.events.Recorder)
	if err != nil {
		return err
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, runs.Informer().GetStore())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformer(runs.Informer())
}
