package agent

import (
	"k8s.io/klog/v2"

	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentrecord"
	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
)

// setupDeployments wires the GitOpsDeployment controller and its project refresh controller,
// Argo CD controllers, with the deployers of the tenant namespaces (pkg/controller/deployer),
// whose ServiceAccounts and RoleBindings have informers of their own. It shares the
// GitOpsDeployment, GitOpsDeploymentHold, ManagedEnvironment, Application, AppProject and Argo CD Secret informers
// with the other Argo CD controllers, and the Operation recorder.
func (a *Agent) setupDeployments() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	deployments, envs := managed.GitOpsDeployments(), managed.GitOpsDeploymentManagedEnvironments()
	holds := managed.GitOpsDeploymentHolds()
	argo := a.argoInformers.Argoproj().V1alpha1()
	apps, projects := argo.Applications(), argo.AppProjects()
	argoSecrets := a.argoKubeInformers.Core().V1().Secrets()

	deployerInformers := deployer.NewInformerFactory(a.kube)
	a.factories = append(a.factories, deployerInformers)
	sas, rbs := deployerInformers.Core().V1().ServiceAccounts(), deployerInformers.Rbac().V1().RoleBindings()
	deployers := deployer.New(sas, rbs, argoSecrets, a.kube, a.argoKube, a.argoNamespace, a.localServer, a.controllerServiceAccount)

	ctl, err := gitopsdeployment.New(deployments, holds, envs, apps, projects, argoSecrets, deployers,
		a.argoNamespace, a.localServer, a.gitops, a.argo, a.kube, a.ops, a.events.Recorder)
	if err != nil {
		return err
	}
	if m := a.manifests; m != nil {
		ctl.ReleaseOnNewCommit(deploymentrecord.NewRepoServer(m.RepoServer, a.argo, a.argoKube, a.argoNamespace), m.HoldCheckInterval)
	} else {
		klog.InfoS("no --repo-server: GitOpsDeploymentHolds with releaseOn NewCommit stay until deleted")
	}
	if a.resourceTrees != nil {
		ctl.ReadResourceTrees(a.resourceTrees)
		klog.InfoS("resource health of Applications that keep it in the resource tree is read from Argo CD's Redis",
			"redis", a.resourceTrees.Address())
	} else {
		klog.InfoS("no --argocd-redis: the resource health of Applications that keep it only in Argo CD's Redis " +
			"(resourceHealthSource appTree, Argo CD 3.x's default) is reported unknown")
	}
	if err := ctl.Serve(a.tenants); err != nil {
		return err
	}
	ctl.RecordPanicsOn(a.events.Recorder, deployments.Informer().GetStore())
	ctl.RegisterMetrics()
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: ctl.Controller, run: ctl.Run},
		packagedController{Controller: ctl.ProjectRefresh, run: ctl.ProjectRefresh.Run})
	return a.addInformers(deployments.Informer(), holds.Informer(), envs.Informer(), apps.Informer(), projects.Informer(),
		argoSecrets.Informer(), sas.Informer(), rbs.Informer())
}
