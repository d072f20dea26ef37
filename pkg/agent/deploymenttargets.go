package agent

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetbinder"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetreclaim"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/namespaceprovisioner"
)

// NamespaceProvisioner is where the namespaces the namespace provisioner makes are reached:
// the URL and CA bundle of this cluster's kube-apiserver as Argo CD reaches it.
type NamespaceProvisioner struct {
	Server string
	CA     []byte
}

// setupDeploymentTargetBinder wires the DeploymentTargetClaim binder.
func (a *Agent) setupDeploymentTargetBinder() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	binder, err := deploymenttargetbinder.New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		appstudio.DeploymentTargetClasses(), a.gitops, a.events.Recorder)
	if err != nil {
		return err
	}
	a.appStudio = append(a.appStudio, packagedController{Controller: binder.Controller, run: binder.Run})
	return a.addInformers(appstudio.DeploymentTargetClaims().Informer(), appstudio.DeploymentTargets().Informer(),
		appstudio.DeploymentTargetClasses().Informer())
}

// setupDeploymentTargetReclaim wires the controller that reclaims released DeploymentTargets.
func (a *Agent) setupDeploymentTargetReclaim() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	reclaim, err := deploymenttargetreclaim.New(appstudio.DeploymentTargets(), appstudio.DeploymentTargetClaims(),
		appstudio.DeploymentTargetClasses(), a.gitops, a.events.Recorder)
	if err != nil {
		return err
	}
	a.appStudio = append(a.appStudio, packagedController{Controller: reclaim.Controller, run: reclaim.Run})
	return a.addInformers(appstudio.DeploymentTargets().Informer(), appstudio.DeploymentTargetClaims().Informer(),
		appstudio.DeploymentTargetClasses().Informer())
}

// setupNamespaceProvisioner wires the managed-gitops.redhat.com/namespace provisioner. It
// watches only the namespaces it made (by their label) and shares the managed-environment
// Secrets' informer with the Environment controllers.
func (a *Agent) setupNamespaceProvisioner(cfg NamespaceProvisioner) error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	factory := informers.NewSharedInformerFactoryWithOptions(a.kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = namespaceprovisioner.LabelTarget
	}))
	a.factories = append(a.factories, factory)
	namespaces := factory.Core().V1().Namespaces()
	secrets := a.secretsOf(managedv1alpha1.ManagedEnvironmentSecretType)
	// The kubeconfig Secret of a claim's target is in the claim's namespace, and stays there as
	// long as the target.
	if err := a.tenantSecrets.ServeWhereAny(appstudio.DeploymentTargetClaims().Informer(), appstudio.DeploymentTargets().Informer()); err != nil {
		return err
	}
	provisioner, err := namespaceprovisioner.New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		appstudio.DeploymentTargetClasses(), namespaces, secrets, a.gitops, a.kube, a.events.Recorder, cfg.Server, cfg.CA)
	if err != nil {
		return err
	}
	a.appStudio = append(a.appStudio, packagedController{Controller: provisioner.Controller, run: provisioner.Run})
	a.preflight = append(a.preflight, func(ctx context.Context) error { return namespaceprovisioner.CheckAccess(ctx, a.kube) })
	return a.addInformers(appstudio.DeploymentTargetClaims().Informer(), appstudio.DeploymentTargets().Informer(),
		appstudio.DeploymentTargetClasses().Informer(), namespaces.Informer())
}

// setupDevSandboxProvisioner wires the appstudio.redhat.com/devsandbox provisioner. Its
// SpaceRequest informer is its own, started only while the cluster serves the API and the
// agent has its rights on SpaceRequests (devsandboxprovisioner.CheckAccess, asked by the
// provisioner itself rather than as a preflight), and not among the caches the agent waits
// for: the agent starts whether or not a Dev Sandbox operator is installed, and whether or not
// it may use it.
func (a *Agent) setupDevSandboxProvisioner() error {
	if a.dynamic == nil {
		klog.InfoS("the Dev Sandbox provisioner does not run: no dynamic client")
		return nil
	}
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	provisioner, err := devsandboxprovisioner.New(appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		appstudio.DeploymentTargetClasses(), a.gitops, a.dynamic, a.gitops.Discovery(), a.kube, a.events.Recorder)
	if err != nil {
		return err
	}
	a.appStudio = append(a.appStudio, packagedController{Controller: provisioner.Controller, run: provisioner.Run})
	return a.addInformers(appstudio.DeploymentTargetClaims().Informer(), appstudio.DeploymentTargets().Informer(),
		appstudio.DeploymentTargetClasses().Informer())
}
