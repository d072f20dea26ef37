// Package options holds the agent's command-line flags and turns them into an agent.Config.
package options

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/gitops-service/gitops-service/pkg/agent"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/argocdcache"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentpreview"
)

// Options are the agent's flags.
type Options struct {
	Kubeconfig               string
	EngineKubeconfig         string
	ArgoNamespace            string
	Instance                 string
	LocalServer              string
	ControllerServiceAccount string
	MetricsAddress           string
	OperationRetention       time.Duration
	// PreviewTTL is how long a DeploymentPreview lives before the agent deletes it.
	PreviewTTL     time.Duration
	Workers        int
	QPS            float32
	Burst          int
	Controllers    []string
	LeaderElection LeaderElection
	// NamespaceProvisionerServer and NamespaceProvisionerCAFile say how Argo CD reaches the
	// namespaces the namespace provisioner makes; the kubeconfig's own server and CA when empty.
	NamespaceProvisionerServer string
	NamespaceProvisionerCAFile string
	// PlacementMaxOwnerShare is the most of each Argo CD instance's capacity the tenants of
	// one owner may take.
	PlacementMaxOwnerShare float64
	// ArgoRedis says how to reach the Redis of the Argo CD instance, where Argo CD 3.x keeps
	// each resource's health (argocdcache); not read when its Address is empty.
	ArgoRedis argocdcache.Options
	// RepoServer are the --repo-server flags: where the agent renders the manifests its
	// DeploymentRecords keep (none without an address).
	RepoServer RepoServer
}

// RepoServer are the flags of Argo CD's repo-server, named as argocd-application-controller
// names them, and of the key that redacts Secrets in the manifests kept.
type RepoServer struct {
	Address        string
	Plaintext      bool
	StrictTLS      bool
	CAFile         string
	TimeoutSeconds int
	// RedactionKeyFile holds the key of the markers that replace Secrets' values.
	RedactionKeyFile string
	// HoldCheckInterval is how often the branch of a NewCommit hold's deployment is resolved.
	HoldCheckInterval time.Duration
}

// LeaderElection are the --leader-elect flags, named as kube-controller-manager names them.
type LeaderElection struct {
	Enabled                                   bool
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Namespace                                 string
	Identity                                  string
}

// New returns the defaults.
func New() *Options {
	return &Options{
		ArgoNamespace:            "gitops-service-argocd",
		LocalServer:              argocd.InClusterServer,
		ControllerServiceAccount: deployer.DefaultControllerServiceAccount,
		MetricsAddress:           "127.0.0.1:8085",
		OperationRetention:       24 * time.Hour,
		PreviewTTL:               deploymentpreview.DefaultTTL,
		RepoServer:               RepoServer{TimeoutSeconds: 60, HoldCheckInterval: time.Minute},
		// Reconciles mostly wait on API round trips, and a burst of new deployments otherwise
		// queues behind the status writes of earlier ones: with 16, 90 namespaces' first
		// deployments at once had an apply p99 of 1.1-1.9 s at T=100 (make
		// bench-agent-scale), with 64 under 0.7 s.
		Workers: 64,
		// One agent serves every tenant of its Argo CD instance; the kube-apiserver's priority
		// and fairness, not a client's bucket, is what protects it.
		QPS:         200,
		Burst:       400,
		Controllers: []string{"*"},
		// Half: one owner never holds more than half of any instance (of capacity 2 or more), so
		// the other half always stays for everyone else, while an owner with many namespaces
		// still gets half the fleet, far more than a team's environments need. 1 turns it off.
		PlacementMaxOwnerShare: 0.5,
		ArgoRedis:              argocdcache.Options{Compression: "gzip", Timeout: 2 * time.Second},
		// kube-controller-manager's timings.
		LeaderElection: LeaderElection{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
			RetryPeriod: 2 * time.Second, Namespace: "gitops-service"},
	}
}

// AddFlags adds the flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the kube-apiserver that serves the GitOps API and hosts Argo CD; empty means in-cluster")
	fs.StringVar(&o.EngineKubeconfig, "engine-kubeconfig", o.EngineKubeconfig,
		"kubeconfig of the engine cluster Argo CD runs on, when that is not the cluster of --kubeconfig: the agent writes Argo CD's "+
			"Applications, AppProjects, cluster and repository Secrets and its Lease there, and everything else through --kubeconfig")
	fs.StringVar(&o.ArgoNamespace, "argocd-namespace", o.ArgoNamespace, "namespace of the Argo CD instance the agent drives")
	fs.StringVar(&o.Instance, "instance", o.Instance,
		"ArgoCDInstance, of the service's fleet, whose Argo CD this agent drives: its Argo CD controllers reconcile only the tenant "+
			"namespaces placed on it. Empty: every namespace, for an agent that is the service's only one")
	fs.StringVar(&o.LocalServer, "local-cluster-server", o.LocalServer,
		"URL of the Argo CD cluster through which Argo CD reaches this cluster, for deployments into tenants' own namespaces "+
			"(Argo CD's in-cluster cluster unless it runs elsewhere)")
	fs.StringVar(&o.ControllerServiceAccount, "application-controller-service-account", o.ControllerServiceAccount,
		"ServiceAccount, in --argocd-namespace, of Argo CD's application-controller: the agent lets it impersonate each tenant namespace's deployer")
	fs.StringVar(&o.MetricsAddress, "metrics-bind-address", o.MetricsAddress,
		"address of the /metrics and /healthz endpoint (plain HTTP); empty disables it")
	fs.DurationVar(&o.OperationRetention, "operation-retention", o.OperationRetention,
		"how long the Operation recording each change in Argo CD is kept")
	fs.DurationVar(&o.PreviewTTL, "preview-ttl", o.PreviewTTL,
		"how long a DeploymentPreview (what a deployment would deploy now, rendered from Git) lives before the agent deletes it")
	fs.IntVar(&o.Workers, "workers", o.Workers, "objects of each kind reconciled at once")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "requests per second to the kube-apiserver, for each of the agent's clients")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of requests to the kube-apiserver, for each of the agent's clients")
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf(
		"controllers to run: '*' runs all, 'name' runs one, '-name' leaves one out (e.g. '*,-promotionrun'). Known: %s. "+
			"%s drives the Argo CD instance; the others are the AppStudio controllers, which touch no Argo CD object",
		strings.Join(agent.KnownControllers, ", "), agent.ArgoCDControllers))
	fs.StringVar(&o.NamespaceProvisionerServer, "namespace-provisioner-server", o.NamespaceProvisionerServer,
		"https URL of this cluster's kube-apiserver as Argo CD reaches it, written into the kubeconfigs of the namespaces the "+
			agent.NamespaceProvisionerController+" controller makes (default: the server of --kubeconfig)")
	fs.StringVar(&o.NamespaceProvisionerCAFile, "namespace-provisioner-ca-file", o.NamespaceProvisionerCAFile,
		"PEM bundle that verifies --namespace-provisioner-server (default: the CA of --kubeconfig)")
	fs.Float64Var(&o.PlacementMaxOwnerShare, "placement-max-owner-share", o.PlacementMaxOwnerShare,
		"the most of each Argo CD instance's capacity that the tenant namespaces of one owner may take, a fraction (0.5 is half; "+
			"at least one tenant per instance; 1 for no limit). The owner is the namespace's label "+managedv1alpha1.LabelTenantOwner+
			", else for a namespace the "+agent.NamespaceProvisionerController+" controller made the owner of its claim's namespace, "+
			"else the namespace itself. Used by the "+agent.PlacementController+" controller")
	r := &o.ArgoRedis
	fs.StringVar(&r.Address, "argocd-redis", r.Address,
		"host:port of the Redis of the Argo CD instance (its application-controller's --redis), read for the resource tree of each "+
			"Application whose status does not hold its resources' health (status.resourceHealthSource appTree, the default of "+
			"Argo CD 3.x). Empty: not read, and those resources' health is reported unknown")
	fs.StringVar(&r.PasswordFile, "argocd-redis-password-file", r.PasswordFile,
		"file holding the password of --argocd-redis (Argo CD's REDIS_PASSWORD: the argocd-redis Secret's key auth); none when empty")
	fs.BoolVar(&r.TLS, "argocd-redis-use-tls", r.TLS, "reach --argocd-redis with TLS (Argo CD's --redis-use-tls)")
	fs.StringVar(&r.CAFile, "argocd-redis-ca-certificate", r.CAFile,
		"PEM bundle that verifies --argocd-redis with --argocd-redis-use-tls (default: the system's roots)")
	fs.StringVar(&r.Compression, "argocd-redis-compress", r.Compression,
		"compression Argo CD writes its Redis entries with, as its --redis-compress: gzip or none")
	fs.DurationVar(&r.Timeout, "argocd-redis-timeout", r.Timeout,
		"how long a read of --argocd-redis may take, connecting included, before the resources' health is reported unknown")
	rs := &o.RepoServer
	fs.StringVar(&rs.Address, "repo-server", rs.Address,
		"address (host:port) of the Argo CD instance's argocd-repo-server: each DeploymentRecord then keeps the digest of the manifests "+
			"its commit renders and, up to 256 KiB, the manifests (Secrets' values redacted) for the deploymentrecords/diff subresource. "+
			"Empty: records keep no manifests")
	fs.DurationVar(&rs.HoldCheckInterval, "hold-new-commit-interval", rs.HoldCheckInterval,
		"how often, at least, the agent resolves through the repo-server the branch of a deployment held with releaseOn NewCommit, "+
			"to release the hold once a newer commit arrives (one ls-remote per such hold)")
	fs.BoolVar(&rs.Plaintext, "repo-server-plaintext", rs.Plaintext, "disable TLS on connections to the repo-server")
	fs.BoolVar(&rs.StrictTLS, "repo-server-strict-tls", rs.StrictTLS,
		"verify the repo-server's TLS certificate against --repo-server-ca-file (otherwise any certificate is accepted, as Argo CD does by default)")
	fs.StringVar(&rs.CAFile, "repo-server-ca-file", rs.CAFile, "PEM bundle that verifies the repo-server with --repo-server-strict-tls")
	fs.IntVar(&rs.TimeoutSeconds, "repo-server-timeout-seconds", rs.TimeoutSeconds, "repo-server RPC call timeout, seconds")
	fs.StringVar(&rs.RedactionKeyFile, "redaction-key-file", rs.RedactionKeyFile,
		"file holding the key (at least 16 bytes) of the markers that replace Secrets' values in the manifests records keep: "+
			"the same value gives the same marker under the same key, so a diff tells a changed value from an unchanged one. "+
			"Empty: a random key per process, so that after a restart every Secret value looks changed")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled,
		"run the controllers only while holding their Lease, so that several agents can run with one acting: "+
			"the Argo CD controllers' Lease "+agent.ArgoCDLease+" in --argocd-namespace (one per Argo CD instance), "+
			"each AppStudio controller's Lease "+agent.AppStudioLease("<controller>")+" in --leader-elect-resource-namespace")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration,
		"how long a standby waits after the last renewal it saw before taking a Lease over: at most this long, plus the retry period, "+
			"a killed agent's controllers stand still")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline,
		"how long the holder tries to renew a Lease before it gives up and exits; less than the lease duration")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod,
		"how often a Lease is renewed, and a standby tries to take it")
	fs.StringVar(&le.Namespace, "leader-elect-resource-namespace", le.Namespace,
		"namespace of the AppStudio controllers' Lease, shared by every agent that may run them")
	fs.StringVar(&le.Identity, "leader-elect-identity", le.Identity,
		"this agent's name in the Leases, unique among the agents (default: host name and a random suffix). "+
			"An agent restarted with the name of the Lease's holder takes the Lease back at once instead of waiting for it to expire")
}

// Validate reports every flag whose value cannot work, naming the flag.
func (o *Options) Validate() error {
	errs := o.RepoServer.validate()
	if errs2 := validation.IsDNS1123Subdomain(o.ControllerServiceAccount); len(errs2) > 0 {
		errs = append(errs, fmt.Errorf("--application-controller-service-account %q: %s", o.ControllerServiceAccount, strings.Join(errs2, "; ")))
	}
	if u, err := url.Parse(o.LocalServer); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--local-cluster-server %q: want the https:// URL of an Argo CD cluster", o.LocalServer))
	}
	if errs2 := validation.IsDNS1123Label(o.ArgoNamespace); len(errs2) > 0 {
		errs = append(errs, fmt.Errorf("--argocd-namespace %q: %s", o.ArgoNamespace, strings.Join(errs2, "; ")))
	}
	if o.Instance != "" {
		if errs2 := validation.IsDNS1123Label(o.Instance); len(errs2) > 0 {
			errs = append(errs, fmt.Errorf("--instance %q: %s", o.Instance, strings.Join(errs2, "; ")))
		}
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers %d: want at least 1", o.Workers))
	}
	// Written as a range that holds, so that NaN fails it too.
	if !(o.PlacementMaxOwnerShare > 0 && o.PlacementMaxOwnerShare <= 1) {
		errs = append(errs, fmt.Errorf("--placement-max-owner-share %v: want a fraction of each instance's capacity, more than 0 and at most 1 (0.5 is half, 1 no limit)",
			o.PlacementMaxOwnerShare))
	}
	if c := o.ArgoRedis.Compression; c != "gzip" && c != "none" {
		errs = append(errs, fmt.Errorf("--argocd-redis-compress %q: want gzip or none", c))
	}
	if o.ArgoRedis.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--argocd-redis-timeout %v: want a positive duration", o.ArgoRedis.Timeout))
	}
	if o.ArgoRedis.Address == "" && (o.ArgoRedis.PasswordFile != "" || o.ArgoRedis.TLS || o.ArgoRedis.CAFile != "") {
		errs = append(errs, errors.New("--argocd-redis-password-file, --argocd-redis-use-tls and --argocd-redis-ca-certificate need --argocd-redis"))
	}
	if o.PreviewTTL < time.Second {
		errs = append(errs, fmt.Errorf("--preview-ttl %v: want a duration of at least 1s, such as 30m or 1h", o.PreviewTTL))
	}
	if o.OperationRetention <= 0 {
		errs = append(errs, fmt.Errorf("--operation-retention %v: want a positive duration", o.OperationRetention))
	}
	if _, err := agent.EnabledControllers(o.Controllers); err != nil {
		errs = append(errs, fmt.Errorf("--controllers: %w", err))
	}
	if le := o.LeaderElection; le.Enabled {
		if errs2 := validation.IsDNS1123Label(le.Namespace); len(errs2) > 0 {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-namespace %q: %s", le.Namespace, strings.Join(errs2, "; ")))
		}
		switch {
		case le.RetryPeriod <= 0:
			errs = append(errs, fmt.Errorf("--leader-elect-retry-period %v: want a positive duration", le.RetryPeriod))
		case float64(le.RenewDeadline) <= leaderelection.JitterFactor*float64(le.RetryPeriod):
			errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %v: want more than %v times --leader-elect-retry-period (%v)",
				le.RenewDeadline, leaderelection.JitterFactor, le.RetryPeriod))
		case le.LeaseDuration <= le.RenewDeadline:
			errs = append(errs, fmt.Errorf("--leader-elect-lease-duration %v: want more than --leader-elect-renew-deadline (%v)",
				le.LeaseDuration, le.RenewDeadline))
		}
	}
	return errors.Join(errs...)
}

// Config loads the kubeconfig and makes the agent's configuration; Validate first.
func (o *Options) Config() (agent.Config, error) {
	// Empty --kubeconfig means in-cluster, as client-go's loading rules define it.
	rc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return agent.Config{}, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = o.QPS, o.Burst
	rc.UserAgent = "gitops-service-agent"
	clients, err := agent.NewClients(rc)
	if err != nil {
		return agent.Config{}, err
	}
	var engine *rest.Config
	if o.EngineKubeconfig != "" {
		if engine, err = clientcmd.BuildConfigFromFlags("", o.EngineKubeconfig); err != nil {
			return agent.Config{}, fmt.Errorf("--engine-kubeconfig: %w", err)
		}
		engine.QPS, engine.Burst, engine.UserAgent = o.QPS, o.Burst, rc.UserAgent
		if err := clients.NewEngineClients(engine); err != nil {
			return agent.Config{}, err
		}
	}
	enabled, err := agent.EnabledControllers(o.Controllers)
	if err != nil {
		return agent.Config{}, fmt.Errorf("--controllers: %w", err)
	}
	cfg := agent.Config{Clients: clients, ArgoNamespace: o.ArgoNamespace, Instance: o.Instance, LocalServer: o.LocalServer,
		ControllerServiceAccount: o.ControllerServiceAccount, Workers: o.Workers, OperationRetention: o.OperationRetention,
		PreviewTTL: o.PreviewTTL, Controllers: enabled, PlacementMaxOwnerShare: o.PlacementMaxOwnerShare}
	if cfg.Manifests, err = o.RepoServer.config(); err != nil {
		return agent.Config{}, err
	}
	if o.ArgoRedis.Address != "" && enabled[agent.ArgoCDControllers] {
		if cfg.ResourceTrees, err = argocdcache.New(o.ArgoRedis); err != nil {
			return agent.Config{}, fmt.Errorf("--argocd-redis: %w", err)
		}
	}
	if enabled[agent.NamespaceProvisionerController] {
		if cfg.NamespaceProvisioner, err = o.namespaceProvisioner(rc); err != nil {
			return agent.Config{}, err
		}
	}
	if le := o.LeaderElection; le.Enabled {
		lc := rest.CopyConfig(rc)
		lc.UserAgent = rc.UserAgent + "/leader-election"
		client, err := kubernetes.NewForConfig(lc)
		if err != nil {
			return agent.Config{}, err
		}
		identity := le.Identity
		if identity == "" {
			host, err := os.Hostname()
			if err != nil {
				return agent.Config{}, fmt.Errorf("--leader-elect-identity is empty and the host name is unknown: %w", err)
			}
			// Host names repeat (pods on the host network); the suffix keeps two apart.
			identity = host + "_" + uuid.NewString()
		}
		cfg.LeaderElection = &agent.LeaderElection{Client: client, Namespace: le.Namespace, Identity: identity,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod}
		if engine != nil {
			ec := rest.CopyConfig(engine)
			ec.UserAgent = lc.UserAgent
			if cfg.LeaderElection.ArgoClient, err = kubernetes.NewForConfig(ec); err != nil {
				return agent.Config{}, err
			}
		}
	}
	return cfg, nil
}

// namespaceProvisioner is the server and CA of the provisioned namespaces' kubeconfigs: the
// flags', or else those the agent itself reaches the kube-apiserver with.
func (o *Options) namespaceProvisioner(rc *rest.Config) (agent.NamespaceProvisioner, error) {
	np := agent.NamespaceProvisioner{Server: cmp.Or(o.NamespaceProvisionerServer, rc.Host), CA: rc.CAData}
	caFile := cmp.Or(o.NamespaceProvisionerCAFile, rc.CAFile)
	if o.NamespaceProvisionerCAFile != "" || len(np.CA) == 0 && caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return np, fmt.Errorf("--namespace-provisioner-ca-file: %w", err)
		}
		np.CA = ca
	}
	if u, err := url.Parse(np.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		return np, fmt.Errorf("--namespace-provisioner-server %q: want the https:// URL of this cluster's kube-apiserver", np.Server)
	}
	if len(np.CA) == 0 {
		return np, errors.New("--namespace-provisioner-ca-file: the kubeconfig has no CA, so the provisioned kubeconfigs need one named")
	}
	return np, nil
}
