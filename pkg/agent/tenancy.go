package agent

import (
	"cmp"
	"context"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/gitops-service/gitops-service/pkg/controller/placement"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
)

// setupTenancy makes the agent one of a fleet's (Config.Instance): its Argo CD controllers
// serve only the tenants its instance holds (each controller's Serve), the hand-over
// controller takes and releases tenants as they are placed, and a reporter writes the
// instance's health and load. They run with the Argo CD controllers, under their Lease. The
// agent checks at start that the instance exists and is the Argo CD it drives.
func (a *Agent) setupTenancy(instance string) error {
	placements := a.gitopsInformers.ManagedGitops().V1alpha1().TenantPlacements()
	a.tenants = tenancy.NewTenants(instance, placements)
	apps := a.argoInformers.Argoproj().V1alpha1().Applications()
	handover, err := tenancy.NewHandover(a.tenants, a.argoNamespace, placements, apps, a.gitops, a.argo, a.events.Recorder)
	if err != nil {
		return err
	}
	identity := ""
	if a.leaderElection != nil {
		identity = a.leaderElection.Identity
	}
	if identity == "" {
		identity, _ = os.Hostname()
	}
	reporter := tenancy.NewReporter(instance, cmp.Or(identity, "agent"), a.argoNamespace, a.gitops, placements.Lister(), apps.Lister())
	a.argoCDPackaged = append(a.argoCDPackaged, packagedController{Controller: handover.Controller, run: handover.Run},
		packagedController{run: func(ctx context.Context, _ int) { reporter.Run(ctx) }})
	a.preflight = append(a.preflight, func(ctx context.Context) error {
		return tenancy.CheckInstance(ctx, a.gitops, instance, a.argoNamespace)
	})
	return a.addInformers(placements.Informer(), apps.Informer())
}

// setupPlacement wires the controller that places the tenant namespaces on the fleet's
// instances: once for the fleet, under a Lease of its own, as the AppStudio controllers run.
// It watches every namespace, for the labels that name tenants' owners: the provisioner's
// informer sees only the namespaces it made.
func (a *Agent) setupPlacement(share float64) error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	factory := informers.NewSharedInformerFactory(a.kube, 0)
	a.factories = append(a.factories, factory)
	namespaces := factory.Core().V1().Namespaces()
	ctl, err := placement.New(managed.ArgoCDInstances(), managed.TenantPlacements(), managed.GitOpsDeployments(),
		managed.GitOpsDeploymentManagedEnvironments(), managed.GitOpsDeploymentRepositoryCredentials(), namespaces,
		a.gitops, a.events.Recorder, placement.Share(share))
	if err != nil {
		return err
	}
	ctl.RegisterMetrics()
	a.appStudio = append(a.appStudio, packagedController{Controller: ctl.Controller, run: ctl.Run})
	return a.addInformers(managed.ArgoCDInstances().Informer(), managed.TenantPlacements().Informer(), managed.GitOpsDeployments().Informer(),
		managed.GitOpsDeploymentManagedEnvironments().Informer(), managed.GitOpsDeploymentRepositoryCredentials().Informer(),
		namespaces.Informer())
}

// checkNoFleet refuses to serve every namespace where the service runs a fleet: an agent
// started without --instance (an old install left running, say) would sync the tenants of
// every instance a second time.
func (a *Agent) checkNoFleet(ctx context.Context) error {
	instances, err := a.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("checking for ArgoCDInstances: %w", err)
	}
	if len(instances.Items) > 0 {
		return fmt.Errorf("the service runs a fleet of Argo CD instances (ArgoCDInstance %s): start the agent with --instance, "+
			"or with --controllers leaving out %s", instances.Items[0].Name, ArgoCDControllers)
	}
	return nil
}
