// Package agent reconciles the GitOps API into one Argo CD instance: each GitOpsDeployment
// becomes an Argo CD Application (and its namespace an AppProject), and Argo CD's view of the
// Application flows back into the GitOpsDeployment's status. Both directions are driven by
// informer events, so a change on either side is acted on as soon as it is seen.
//
// Each kind has a controller of its own (a work queue and a reconcile function,
// pkg/controller/framework), in a package of its own under pkg/controller; they share the
// informers of one Agent, which is the composition root: clients, shared informer factories,
// which controllers run, and under which Lease. One short file here wires each controller.
//
// Where the controllers live:
//   - pkg/controller/gitopsdeployment: GitOpsDeployment → Argo CD Application and the tenant's
//     AppProject, and the Application's state back into the status and Events; with the
//     project refresh controller, and its watch of the repository Secrets (an Argo CD
//     controller; gitopsdeployment.go wires it).
//   - pkg/controller/deployer: the deployer identity of each tenant namespace (ServiceAccount
//     and RoleBindings, through informers of its own), made by the GitOpsDeployment controller.
//   - pkg/controller/syncrun: SyncRun → sync operations (an Argo CD controller; syncrun.go wires it).
//   - pkg/controller/repositorycredential: RepositoryCredential → Argo CD repository Secret,
//     checked by ls-remote (an Argo CD controller; repositorycredential.go wires it).
//   - pkg/controller/managedenvironment: ManagedEnvironment → shared Argo CD cluster Secret,
//     and the ServiceAccounts of createNewServiceAccount on remote clusters (an Argo CD
//     controller; managedenvironment.go wires it). Its Clusters tells the GitOpsDeployment
//     controller where an environment deploys; the GitOpsDeployment controller watches the
//     environments and their cluster Secrets itself (ClusterSecretEnvironments).
//   - pkg/controller/deploymentrecord and pkg/controller/deploymentpreview: a DeploymentRecord
//     per sync, and a DeploymentPreview's rendering of what Git holds now, both with Argo CD's
//     repo-server (Argo CD controllers; deploymentrecord.go and deploymentpreview.go wire them).
//   - pkg/controller/operations: the Operation records of every change in Argo CD, and their
//     retention (run with the Argo CD controllers).
//   - pkg/controller/argocd: the Argo CD naming contract (labels, Application, AppProject and
//     repository Secret names, cluster Secret keys, the Applications-by-deployment index), the
//     recorded Application patch, the repository Secrets' claims on repositories that
//     AppProjects honour (RepositoryAllowed), and a tenant's AppProject (DesiredProject).
//   - pkg/controller/appstudio/...: the appstudio Environment, SnapshotEnvironmentBinding,
//     PromotionRun, DeploymentTargetClaim binder, DeploymentTarget reclaim, namespace
//     provisioner and Dev Sandbox provisioner controllers, each under a Lease of its own.
//
// The Argo CD controllers (ArgoCDControllers: pkg/controller/gitopsdeployment,
// pkg/controller/syncrun, pkg/controller/repositorycredential and
// pkg/controller/managedenvironment) run under ArgoCDLease, each appstudio one under a Lease
// of its own (AppStudioLease).
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/argocdcache"
	"github.com/gitops-service/gitops-service/pkg/clientconfig"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/autopromotion"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/environment"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotionrun"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/controller/tenantsecrets"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// Clients are the clients of the kube-apiserver that serves the GitOps API (proxied to
// gitops-apiserver), and of the one Argo CD runs on: the same, or an engine cluster's.
type Clients struct {
	GitOps versioned.Interface
	// Argo reads and writes Argo CD's Applications and AppProjects, on Argo CD's cluster.
	Argo argoclient.Interface
	Kube kubernetes.Interface
	// ArgoKube reads and writes the Secrets and ConfigMaps of Argo CD's namespace, on Argo
	// CD's cluster; Kube when nil (Argo CD runs on the API's cluster).
	ArgoKube kubernetes.Interface
	// Operations writes the Operation records, with a rate limit of its own, so that
	// bookkeeping never holds up a reconcile's requests; GitOps when nil.
	Operations versioned.Interface
	// Dynamic reads and writes the APIs the service has no Go types of (the Dev Sandbox
	// operator's SpaceRequests); the Dev Sandbox provisioner does not run when nil.
	Dynamic dynamic.Interface
	// DeployerJobs creates and reads the verification Jobs of promotion gates as each
	// namespace's deployer; a gate's verification fails to start when nil.
	DeployerJobs *deployer.Jobs
}

// NewEngineClients points the Argo CD clients at an engine cluster, the one cfg reaches.
func (c *Clients) NewEngineClients(cfg *rest.Config) error {
	var err error
	if c.Argo, err = argoclient.NewForConfig(cfg); err != nil {
		return err
	}
	c.ArgoKube, err = kubernetes.NewForConfig(cfg)
	return err
}

// NewClients makes the clients from one rest config; each has its QPS and burst. Those of
// our groups speak protobuf (clientconfig.Protobuf); Argo CD's, Kubernetes' and the dynamic
// one keep their defaults.
func NewClients(cfg *rest.Config) (Clients, error) {
	var c Clients
	var err error
	if c.GitOps, err = versioned.NewForConfig(clientconfig.Protobuf(cfg)); err != nil {
		return c, err
	}
	if c.Operations, err = versioned.NewForConfig(clientconfig.Protobuf(cfg)); err != nil {
		return c, err
	}
	if c.Argo, err = argoclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.DeployerJobs = deployer.NewJobs(cfg)
	c.Kube, err = kubernetes.NewForConfig(cfg)
	return c, err
}

// Config is what an Agent needs: its clients, and the namespace of the Argo CD instance it
// drives.
type Config struct {
	Clients
	ArgoNamespace string
	// Instance is the ArgoCDInstance of a fleet whose Argo CD the agent drives: its Argo CD
	// controllers serve only the tenants placed on it. Empty for an agent that serves every
	// namespace.
	Instance string
	// LocalServer is the URL of the Argo CD cluster through which Argo CD reaches the cluster
	// the agent runs on: its in-cluster cluster unless configured.
	LocalServer string
	// ControllerServiceAccount is the ServiceAccount, in ArgoNamespace, of Argo CD's
	// application-controller: the identity that impersonates the deployers.
	ControllerServiceAccount string
	// Workers is the number of keys each controller reconciles at once.
	Workers int
	// OperationRetention is how long the Operation recording a change is kept.
	OperationRetention time.Duration
	// PreviewTTL is how long a DeploymentPreview lives (deploymentpreview.DefaultTTL when 0).
	PreviewTTL time.Duration
	// Controllers are the controllers to run (EnabledControllers); all of them when nil.
	Controllers map[string]bool
	// LeaderElection, when set, runs each set of controllers only while this process holds
	// its Lease, so that several agents can run with one of them acting.
	LeaderElection *LeaderElection
	// NamespaceProvisioner is where the namespace provisioner's namespaces are reached, when
	// it runs.
	NamespaceProvisioner NamespaceProvisioner
	// PlacementMaxOwnerShare is the most of each instance's capacity the placement controller
	// gives the tenants of one owner (placement.Share).
	PlacementMaxOwnerShare float64
	// ResourceTrees reads the resource trees Argo CD keeps in its Redis, where Argo CD 3.x
	// keeps each resource's health; nil when the agent is not told where that Redis is.
	ResourceTrees *argocdcache.Reader
	// Manifests, when set, makes each DeploymentRecord keep the manifests of its commit.
	Manifests *Manifests
}

// Manifests is how the DeploymentRecord controller renders the manifests of a record's
// commit (Argo CD's repo-server) and redacts Secrets' values in them.
type Manifests struct {
	RepoServer apiclient.Clientset
	Redactor   *recordmanifest.Redactor
	// HoldCheckInterval is how often a NewCommit hold's branch is resolved with RepoServer.
	HoldCheckInterval time.Duration
}

// The Leases on which agents elect the one that runs a set of controllers.
const (
	// ArgoCDLease, in the Argo CD namespace, is the Lease of the agents of one instance.
	ArgoCDLease = "gitops-agent"
)

// AppStudioLease, in LeaderElection.Namespace, is the Lease of one AppStudio controller (its
// --controllers name). Each has its own, so that agents run with different --controllers
// lists each run theirs: under one shared Lease, an agent holding it would keep another from
// running a controller it does not run itself, and agents whose lists overlap would both run
// the controllers they share under Leases of their own. The price is a renewal per Lease:
// seven Leases renewed every retry period (2 s) by the agent that holds them.
func AppStudioLease(controller string) string { return "gitops-agent-" + controller }

// LeaderElection is how the agents that may run the same controllers elect the one that does.
type LeaderElection struct {
	// Client renews the Leases; a client of its own, so that renewing never waits behind the
	// controllers' requests in a client-side rate limiter.
	Client kubernetes.Interface
	// ArgoClient renews ArgoCDLease, beside Argo CD on its cluster; Client when nil.
	ArgoClient kubernetes.Interface
	// Namespace holds the AppStudio controllers' Leases: a namespace every agent of a fleet
	// shares.
	Namespace string
	// Identity names this process in the Leases; unique among the agents.
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// lease is the Lease name in namespace, with this process's identity and the timings.
func (l *LeaderElection) lease(namespace, name string) framework.Lease {
	return framework.Lease{Namespace: namespace, Name: name, Identity: l.Identity,
		LeaseDuration: l.LeaseDuration, RenewDeadline: l.RenewDeadline, RetryPeriod: l.RetryPeriod}
}

// informerFactory is what the Agent needs of the informer factories it starts.
type informerFactory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// Agent reconciles the GitOps objects into the Argo CD instance of one namespace.
type Agent struct {
	gitops versioned.Interface
	argo   argoclient.Interface
	kube   kubernetes.Interface
	// argoKube is the client of Argo CD's cluster, for its namespace's Secrets and ConfigMaps.
	argoKube      kubernetes.Interface
	dynamic       dynamic.Interface
	deployerJobs  promotionrun.DeployerJobs
	argoNamespace string
	localServer   string
	// controllerServiceAccount is the application-controller's ServiceAccount (argoNamespace).
	controllerServiceAccount string
	workers                  int

	gitopsInformers externalversions.SharedInformerFactory
	// argoInformers and argoKubeInformers watch the Argo CD namespace only.
	argoInformers     argoinformers.SharedInformerFactory
	argoKubeInformers informers.SharedInformerFactory
	factories         []informerFactory
	synced            []cache.InformerSynced
	// tenantSecrets watch the tenants' Secrets in the namespaces the controllers serve, and
	// nowhere else: each controller that reads them says which namespaces it serves.
	tenantSecrets *tenantsecrets.Set

	// events records Kubernetes Events on the objects the controllers act on.
	events *framework.Events
	// argoCDPackaged are the Argo CD controllers (packages of their own under pkg/controller:
	// the GitOpsDeployment and project refresh, RepositoryCredential, SyncRun, DeploymentRecord,
	// DeploymentPreview and ManagedEnvironment controllers), run under ArgoCDLease.
	argoCDPackaged []packagedController
	// appStudio are the AppStudio controllers (packages of their own under
	// pkg/controller/appstudio), each run under its AppStudioLease.
	appStudio []packagedController
	// preflight are the checks Run makes before it starts anything: a controller whose rights
	// are missing fails the agent at once, with what is missing, rather than leaving a cache
	// waiting forever to list what it may not.
	preflight []func(context.Context) error
	// manifests, when set, is how DeploymentRecords get their manifests.
	manifests *Manifests
	// leaderElection, when set, runs the controllers only while this process holds their Lease.
	leaderElection *LeaderElection
	// tenants are the tenant namespaces the Argo CD controllers serve: every one when nil
	// (tenancy.go).
	tenants *tenancy.Tenants
	// instance is the ArgoCDInstance served, "" for every namespace.
	instance string

	ops          *operations.Recorder
	opsRetention time.Duration
	previewTTL   time.Duration
	// resourceTrees reads Argo CD's resource trees (Config.ResourceTrees).
	resourceTrees *argocdcache.Reader
}

// New wires an Agent; Run starts it. The informers are not resynced on a timer: everything the
// agent acts on arrives as an event.
func New(cfg Config) (*Agent, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.OperationRetention <= 0 {
		cfg.OperationRetention = 24 * time.Hour
	}
	if cfg.LocalServer == "" {
		cfg.LocalServer = argocd.InClusterServer
	}
	if cfg.ControllerServiceAccount == "" {
		cfg.ControllerServiceAccount = deployer.DefaultControllerServiceAccount
	}
	if cfg.Controllers == nil {
		cfg.Controllers, _ = EnabledControllers([]string{"*"})
	}
	if cfg.ArgoKube == nil {
		cfg.ArgoKube = cfg.Kube
	}
	a := &Agent{
		gitops:                   cfg.GitOps,
		argo:                     cfg.Argo,
		kube:                     cfg.Kube,
		argoKube:                 cfg.ArgoKube,
		dynamic:                  cfg.Dynamic,
		deployerJobs:             deployerJobsOf(cfg.DeployerJobs),
		argoNamespace:            cfg.ArgoNamespace,
		localServer:              cfg.LocalServer,
		controllerServiceAccount: cfg.ControllerServiceAccount,
		manifests:                cfg.Manifests,
		ops:                      operations.NewRecorder(cmp.Or[versioned.Interface](cfg.Operations, cfg.GitOps), cfg.ArgoNamespace),
		opsRetention:             cfg.OperationRetention,
		previewTTL:               cfg.PreviewTTL,
		workers:                  cfg.Workers,
		gitopsInformers:          externalversions.NewSharedInformerFactory(cfg.GitOps, 0),
		argoInformers:            argoinformers.NewSharedInformerFactoryWithOptions(cfg.Argo, 0, argoinformers.WithNamespace(cfg.ArgoNamespace)),
		argoKubeInformers:        informers.NewSharedInformerFactoryWithOptions(cfg.ArgoKube, 0, informers.WithNamespace(cfg.ArgoNamespace)),
		tenantSecrets:            tenantsecrets.New(cfg.Kube),
		events:                   framework.NewEvents(cfg.Kube),
		leaderElection:           cfg.LeaderElection,
		instance:                 cfg.Instance,
		resourceTrees:            cfg.ResourceTrees,
	}
	a.factories = []informerFactory{a.gitopsInformers, a.argoInformers, a.argoKubeInformers}
	if cfg.Controllers[ArgoCDControllers] {
		if cfg.Instance != "" {
			if err := a.setupTenancy(cfg.Instance); err != nil {
				return nil, err
			}
		} else {
			a.preflight = append(a.preflight, a.checkNoFleet)
		}
		if err := a.setupArgoCD(); err != nil {
			return nil, err
		}
	}
	for name, setup := range map[string]func() error{
		EnvironmentController:                a.setupAppStudioEnvironments,
		SnapshotEnvironmentBindingController: a.setupBindings,
		PromotionRunController:               a.setupPromotionRuns,
		AutoPromotionController:              a.setupAutoPromotion,
		DeploymentTargetBinderController:     a.setupDeploymentTargetBinder,
		DeploymentTargetReclaimController:    a.setupDeploymentTargetReclaim,
		NamespaceProvisionerController:       func() error { return a.setupNamespaceProvisioner(cfg.NamespaceProvisioner) },
		DevSandboxProvisionerController:      a.setupDevSandboxProvisioner,
		PlacementController:                  func() error { return a.setupPlacement(cfg.PlacementMaxOwnerShare) },
	} {
		if cfg.Controllers[name] {
			first := len(a.appStudio)
			if err := setup(); err != nil {
				return nil, err
			}
			for i := first; i < len(a.appStudio); i++ {
				a.appStudio[i].name = name
			}
		}
	}
	return a, nil
}

// setupArgoCD wires the controllers that drive the Argo CD instance (ArgoCDControllers). They
// read the Secrets of the tenants the instance keeps (until it has released them, for the
// Applications retired on the way out need their credentials), or, alone, of the namespaces
// that have ManagedEnvironments or repository credentials, the kinds that name Secrets.
func (a *Agent) setupArgoCD() error {
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	if a.tenants != nil {
		// A TenantPlacement is named after its tenant's namespace.
		nameOf := func(obj interface{}) string {
			key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			return key
		}
		if err := a.tenantSecrets.ServeWhile(managed.TenantPlacements().Informer(), nameOf, a.tenants.Keeps); err != nil {
			return err
		}
	} else if err := a.tenantSecrets.ServeWhereAny(managed.GitOpsDeploymentManagedEnvironments().Informer(),
		managed.GitOpsDeploymentRepositoryCredentials().Informer()); err != nil {
		return err
	}
	if err := a.setupDeployments(); err != nil {
		return err
	}
	if err := a.setupRepositoryCredentials(); err != nil {
		return err
	}
	if err := a.setupSyncRuns(); err != nil {
		return err
	}
	if err := a.setupDeploymentRecords(); err != nil {
		return err
	}
	if err := a.setupDeploymentPreviews(); err != nil {
		return err
	}
	return a.setupEnvironments()
}

// packagedController is a controller of a package of its own, and how to run it.
type packagedController struct {
	*framework.Controller
	run func(ctx context.Context, workers int)
	// name is an AppStudio controller's --controllers name, which names its Lease.
	name string
}

// setupAppStudioEnvironments wires the controller that turns appstudio Environments into
// GitOpsDeploymentManagedEnvironments; it shares the managed-environment Secrets' informer with
// the ManagedEnvironment controller.
func (a *Agent) setupAppStudioEnvironments() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	secrets := a.secretsOf(managedv1alpha1.ManagedEnvironmentSecretType)
	// An Environment reads Secrets in its own namespace only: its own credentials, its
	// DeploymentTarget's and its copy.
	if err := a.tenantSecrets.ServeWhereAny(appstudio.Environments().Informer()); err != nil {
		return err
	}
	envs, err := environment.New(appstudio.Environments(), appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		managed.GitOpsDeploymentManagedEnvironments(), secrets, a.gitops, a.kube, a.events.Recorder)
	if err != nil {
		return err
	}
	envs.RecordPanicsOn(a.events.Recorder, appstudio.Environments().Informer().GetStore())
	a.appStudio = append(a.appStudio, packagedController{Controller: envs.Controller, run: envs.Run})
	return a.addInformers(appstudio.Environments().Informer(), appstudio.DeploymentTargetClaims().Informer(),
		appstudio.DeploymentTargets().Informer(), managed.GitOpsDeploymentManagedEnvironments().Informer())
}

// setupBindings wires the controller that generates the GitOpsDeployments of
// SnapshotEnvironmentBindings.
func (a *Agent) setupBindings() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	managed := a.gitopsInformers.ManagedGitops().V1alpha1()
	bindings, err := snapshotenvironmentbinding.New(appstudio.SnapshotEnvironmentBindings(), appstudio.Applications(),
		appstudio.Environments(), appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		managed.GitOpsDeployments(), a.gitops, a.events.Recorder)
	if err != nil {
		return err
	}
	bindings.RecordPanicsOn(a.events.Recorder, appstudio.SnapshotEnvironmentBindings().Informer().GetStore())
	a.appStudio = append(a.appStudio, packagedController{Controller: bindings.Controller, run: bindings.Run})
	return a.addInformers(appstudio.SnapshotEnvironmentBindings().Informer(), appstudio.Applications().Informer(),
		appstudio.Environments().Informer(), appstudio.DeploymentTargetClaims().Informer(), appstudio.DeploymentTargets().Informer(),
		managed.GitOpsDeployments().Informer())
}

// setupPromotionRuns wires the controller that carries PromotionRuns out through
// SnapshotEnvironmentBindings.
func (a *Agent) setupPromotionRuns() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	deployments := a.gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeployments()
	gates := promotionrun.Gates{Gates: appstudio.PromotionGates(), Holds: appstudio.EnvironmentHolds(),
		Approvals: appstudio.PromotionApprovals(), Jobs: a.deployerJobs}
	runs, err := promotionrun.New(appstudio.PromotionRuns(), appstudio.SnapshotEnvironmentBindings(), appstudio.Snapshots(),
		appstudio.Environments(), deployments, gates, a.gitops, a.events.Recorder)
	if err != nil {
		return err
	}
	runs.RecordPanicsOn(a.events.Recorder, appstudio.PromotionRuns().Informer().GetStore())
	a.appStudio = append(a.appStudio, packagedController{Controller: runs.Controller, run: runs.Run})
	return a.addInformers(appstudio.PromotionRuns().Informer(), appstudio.SnapshotEnvironmentBindings().Informer(),
		appstudio.Snapshots().Informer(), appstudio.Environments().Informer(), deployments.Informer(),
		gates.Gates.Informer(), gates.Holds.Informer(), gates.Approvals.Informer())
}

// setupAutoPromotion wires the controller that starts the automated promotion of new Snapshots.
func (a *Agent) setupAutoPromotion() error {
	appstudio := a.gitopsInformers.AppStudio().V1alpha1()
	auto, err := autopromotion.New(appstudio.Snapshots(), appstudio.Environments(), appstudio.PromotionRuns(), a.gitops, a.events.Recorder)
	if err != nil {
		return err
	}
	auto.RecordPanicsOn(a.events.Recorder, appstudio.Snapshots().Informer().GetStore())
	a.appStudio = append(a.appStudio, packagedController{Controller: auto.Controller, run: auto.Run})
	return a.addInformers(appstudio.Snapshots().Informer(), appstudio.Environments().Informer(), appstudio.PromotionRuns().Informer())
}

// addInformers registers informers, without handlers of their own, as addInformer does.
func (a *Agent) addInformers(infs ...cache.SharedIndexInformer) error {
	for _, inf := range infs {
		if err := a.addInformer(inf); err != nil {
			return err
		}
	}
	return nil
}

// addInformer registers an informer whose cache every controller must see filled before it
// starts, with the handlers given.
func (a *Agent) addInformer(inf cache.SharedIndexInformer, handlers ...cache.ResourceEventHandler) error {
	for _, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	a.synced = append(a.synced, inf.HasSynced)
	return nil
}

// Run processes changes until ctx is done. With leader election it fills its caches at once
// (a standby is ready to act the moment it takes over), and runs each set of controllers while
// it holds that set's Lease; it returns an error if it loses one.
func (a *Agent) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()

	for _, check := range a.preflight {
		if err := check(ctx); err != nil {
			return err
		}
	}
	// The tenants' Secrets are watched from the first event of what the controllers serve, so
	// that their caches fill with the others.
	secretsCtx, stopSecrets := context.WithCancel(ctx)
	secretsDone := make(chan struct{})
	go func() {
		defer close(secretsDone)
		a.tenantSecrets.Run(secretsCtx)
	}()
	defer func() {
		stopSecrets()
		<-secretsDone
	}()
	for _, f := range a.factories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	klog.InfoS("waiting for informer caches", "argoNamespace", a.argoNamespace)
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return fmt.Errorf("informer caches did not sync: %w", ctx.Err())
	}
	argoCD := slices.Clone(a.argoCDPackaged)
	if len(argoCD) > 0 {
		argoCD = append(argoCD, packagedController{run: func(ctx context.Context, _ int) { a.ops.Run(ctx, a.opsRetention) }})
	}
	all := slices.DeleteFunc(slices.Concat(argoCD, a.appStudio), func(c packagedController) bool { return c.Controller == nil })
	framework.RegisterMetrics(func() []*framework.Controller {
		ctls := make([]*framework.Controller, len(all))
		for i, c := range all {
			ctls[i] = c.Controller
		}
		return ctls
	})
	reportInfo(a.instance, a.argoNamespace)
	a.events.Start(ctx)
	klog.InfoS("agent started", "workers", a.workers, "controllers", len(all), "leaderElection", a.leaderElection != nil)

	type set struct {
		lease framework.Lease
		// client renews the Lease: the Argo CD controllers' is on Argo CD's cluster.
		client kubernetes.Interface
		runs   []packagedController
	}
	sets := []set{{runs: argoCD}}
	if le := a.leaderElection; le != nil {
		sets[0].lease, sets[0].client = le.lease(a.argoNamespace, ArgoCDLease), cmp.Or(le.ArgoClient, le.Client)
	}
	for _, c := range a.appStudio {
		s := set{runs: []packagedController{c}}
		if le := a.leaderElection; le != nil {
			s.lease, s.client = le.lease(le.Namespace, AppStudioLease(c.name)), le.Client
		}
		sets = append(sets, s)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, set := range sets {
		if len(set.runs) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.leaderElection == nil {
				a.runControllers(ctx, set.runs)
				return
			}
			if err := framework.RunLeading(ctx, set.client, set.lease, func(ctx context.Context) {
				a.runControllers(ctx, set.runs)
			}); err != nil {
				// Another agent may be running these controllers already: stop every set.
				cancel(err)
			}
		}()
	}
	wg.Wait()
	// A lost Lease, or an election that could not start: any cause but the caller's own end.
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runControllers runs controllers until ctx is done.
func (a *Agent) runControllers(ctx context.Context, runs []packagedController) {
	var wg sync.WaitGroup
	for _, c := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx, a.workers)
		}()
	}
	wg.Wait()
}

// secretsOf are the tenants' Secrets of one type, in the namespaces the controllers serve (a
// field selector keeps every other Secret out of memory, and a Secret that changes to or from
// the type arrives as an add or a delete). Every controller must see them synced before it
// starts.
func (a *Agent) secretsOf(secretType string) *tenantsecrets.Secrets {
	secrets := a.tenantSecrets.Of(secretType)
	a.synced = append(a.synced, secrets.HasSynced)
	return secrets
}

// deployerJobsOf is jobs as the PromotionRun controller takes it: nil stays a nil interface.
func deployerJobsOf(jobs *deployer.Jobs) promotionrun.DeployerJobs {
	if jobs == nil {
		return nil
	}
	return jobs
}
