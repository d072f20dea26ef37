package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	utilversion "k8s.io/apiserver/pkg/util/version"
	"k8s.io/component-base/featuregate"
	netutils "k8s.io/utils/net"

	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

// DSNEnv is the environment variable the PostgreSQL DSN is read from when no flag names it.
const DSNEnv = "GITOPS_POSTGRES_DSN"

// Options are the command-line options of gitops-apiserver.
type Options struct {
	// RecommendedOptions are k8s.io/apiserver's options without the etcd ones: PostgreSQL is
	// the storage, configured by Postgres.
	RecommendedOptions *genericoptions.RecommendedOptions
	Postgres           PostgresOptions
	// InternalAPIUsers and InternalAPIGroups may use the internal kinds (Operations,
	// ArgoCDInstances, TenantPlacements) besides cluster admins and the agents (AgentUserPrefix).
	InternalAPIUsers  []string
	InternalAPIGroups []string
	// AgentUserPrefix followed by an instance's name is the user of that instance's agent.
	AgentUserPrefix string
	// AllowFileRepositories accepts file:// repository URLs (local stacks only).
	AllowFileRepositories bool
	// MaxClaimsPerNamespace is the most DeploymentTargetClaims a namespace may hold when the
	// claim's class sets no maxClaimsPerNamespace; 0 for no limit.
	MaxClaimsPerNamespace int64
	// DeploymentRecordsPerDeployment: ExtraConfig's.
	DeploymentRecordsPerDeployment int32
	// SoftMemoryLimitFloor is the least soft memory limit of the Go heap (runSoftMemoryLimit).
	SoftMemoryLimitFloor resource.Quantity
	// AuthorizeNamespaceWideFirst: askNamespaceWideFirst.
	AuthorizeNamespaceWideFirst bool

	Stdout, Stderr io.Writer
}

// PostgresOptions configure the connection to PostgreSQL and the storage on it.
type PostgresOptions struct {
	DSN               string
	DSNFile           string
	MaxConns          int32
	EnableWatchCache  bool
	ConnectionTimeout time.Duration
	// AuditTrail records every write of a tenant kind as an AuditEntry.
	AuditTrail bool
	// AuditRetention is how long the audit trail's entries are kept; 0 keeps them until their
	// namespace is deleted.
	AuditRetention time.Duration
	// Storage holds the compaction window and the session limits the flags set; its other
	// fields keep the storage's defaults.
	Storage storage.Options
}

// NewOptions returns the defaults.
func NewOptions(stdout, stderr io.Writer) *Options {
	o := &Options{
		// The prefix and codec are only used by the etcd options, which are removed below.
		RecommendedOptions: genericoptions.NewRecommendedOptions("", nil),
		Postgres: PostgresOptions{
			MaxConns:          20,
			EnableWatchCache:  true,
			ConnectionTimeout: 30 * time.Second,
			AuditTrail:        true,
			AuditRetention:    30 * 24 * time.Hour,
			Storage:           storage.DefaultOptions(),
		},
		// The AppStudio controllers' identity (placement controller) by name, and the agents by
		// AgentUserPrefix: not every ServiceAccount of gitops-service.
		InternalAPIUsers: []string{"system:serviceaccount:gitops-service:gitops-controllers"},
		AgentUserPrefix:  fleetidentity.DefaultAgentUserPrefix,
		// Each claim may be a namespace: enough for a tenant's environments and previews, far
		// from what one tenant would need to fill a cluster.
		MaxClaimsPerNamespace: 20,
		// As a Deployment's revisionHistoryLimit.
		DeploymentRecordsPerDeployment: 10,
		// 100,000 GitOpsDeployments with a full watch cache event window are about 300 MiB live.
		SoftMemoryLimitFloor:        resource.MustParse("448Mi"),
		AuthorizeNamespaceWideFirst: true,
		Stdout:                      stdout,
		Stderr:                      stderr,
	}
	o.RecommendedOptions.Etcd = nil
	return o
}

// AddFlags adds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	fs.StringVar(&o.Postgres.DSN, "postgres-dsn", o.Postgres.DSN,
		"PostgreSQL connection string (URL or key=value form). Prefer --postgres-dsn-file or $"+DSNEnv+": flags are visible to every user of the machine.")
	fs.StringVar(&o.Postgres.DSNFile, "postgres-dsn-file", o.Postgres.DSNFile,
		"File holding the PostgreSQL connection string, such as a mounted Secret.")
	fs.Int32Var(&o.Postgres.MaxConns, "postgres-max-conns", o.Postgres.MaxConns,
		"Largest number of PostgreSQL connections requests use; the storage opens three more of its own (writes, the watch feed, LISTEN).")
	st := &o.Postgres.Storage
	fs.DurationVar(&st.CompactionWindow, "postgres-compaction-window", st.CompactionWindow,
		"How long change history is kept; reads and watches at an older resourceVersion get 410 Gone.")
	// Session limits: a replica frozen inside a write, or gone without closing its socket, must
	// not hold the resourceVersion counter lock, and with it every replica's writes, for long.
	fs.DurationVar(&st.IdleInTransactionTimeout, "postgres-idle-in-transaction-timeout", st.IdleInTransactionTimeout,
		"PostgreSQL ends a session of ours that stays idle inside a transaction this long (idle_in_transaction_session_timeout), releasing its locks: "+
			"the longest another replica's writes wait for a frozen one.")
	fs.DurationVar(&st.LockTimeout, "postgres-lock-timeout", st.LockTimeout,
		"A statement gives up waiting for a lock after this long (lock_timeout); longer than --postgres-idle-in-transaction-timeout, shorter than the 30s write batch timeout.")
	fs.DurationVar(&st.KeepaliveIdle, "postgres-tcp-keepalive-idle", st.KeepaliveIdle,
		"Silence after which PostgreSQL probes a session's TCP connection (tcp_keepalives_idle, whole seconds).")
	fs.DurationVar(&st.KeepaliveInterval, "postgres-tcp-keepalive-interval", st.KeepaliveInterval,
		"Time between TCP keepalive probes (tcp_keepalives_interval, whole seconds).")
	fs.IntVar(&st.KeepaliveCount, "postgres-tcp-keepalive-count", st.KeepaliveCount,
		"Unanswered keepalive probes after which PostgreSQL ends the session, and with it its locks (tcp_keepalives_count).")
	fs.DurationVar(&st.TCPUserTimeout, "postgres-tcp-user-timeout", st.TCPUserTimeout,
		"PostgreSQL ends a session whose sent data stays unacknowledged this long (tcp_user_timeout).")
	fs.DurationVar(&o.Postgres.ConnectionTimeout, "postgres-connection-timeout", o.Postgres.ConnectionTimeout,
		"How long start-up waits for PostgreSQL to accept connections.")
	fs.BoolVar(&o.Postgres.AuditTrail, "audit-trail", o.Postgres.AuditTrail,
		"Record every write to the tenants' kinds, with its user, as an AuditEntry in the write's own transaction. Off, auditentries serves nothing new.")
	fs.DurationVar(&o.Postgres.AuditRetention, "audit-retention", o.Postgres.AuditRetention,
		"How long the audit trail (auditentries: every write to the tenants' kinds, with its user) is kept; 0 keeps entries until their namespace is deleted.")
	fs.BoolVar(&o.Postgres.EnableWatchCache, "watch-cache", o.Postgres.EnableWatchCache,
		"Serve watches and lists at resourceVersion 0 from an in-memory cache fed by one watch per resource.")
	fs.StringSliceVar(&o.InternalAPIUsers, "internal-api-users", o.InternalAPIUsers,
		"Users that may use the internal kinds (operations, argocdinstances, tenantplacements), besides system:masters and the agents (--agent-user-prefix).")
	fs.StringSliceVar(&o.InternalAPIGroups, "internal-api-groups", o.InternalAPIGroups,
		"User groups that may use the internal kinds, besides system:masters. Empty by default: a group such as "+
			"system:serviceaccounts:gitops-service would admit every ServiceAccount of the namespace.")
	fs.StringVar(&o.AgentUserPrefix, "agent-user-prefix", o.AgentUserPrefix,
		"The user name of an instance's agent without the instance's name: such a user may use the internal kinds, "+
			"but report only on its own ArgoCDInstance and take or release only the TenantPlacements of its instance. Empty: none.")
	fs.Int64Var(&o.MaxClaimsPerNamespace, "max-deployment-target-claims-per-namespace", o.MaxClaimsPerNamespace,
		"The most DeploymentTargetClaims a namespace may hold, unless the claim's DeploymentTargetClass sets spec.parameters.namespace.maxClaimsPerNamespace; 0 for no limit.")
	fs.Int32Var(&o.DeploymentRecordsPerDeployment, "deployment-records-per-deployment", o.DeploymentRecordsPerDeployment,
		"How many DeploymentRecords (sync attempts) of each GitOpsDeployment the server keeps, newest first, unless its spec.revisionHistoryLimit says otherwise.")
	fs.BoolVar(&o.AllowFileRepositories, "allow-file-repositories", o.AllowFileRepositories,
		"Accept file:// repository URLs. Only for local stacks: on a shared Argo CD they read whatever the repo-server can see.")
	fs.Var(&quantityValue{&o.SoftMemoryLimitFloor}, "soft-memory-limit-floor",
		"The Go heap's soft memory limit is the larger of this and 1.25 times the live heap (mostly the watch cache), "+
			"so memory stays near what the cache needs instead of twice that (Go's default). 0 leaves the Go default; GOMEMLIMIT, when set, wins.")
	fs.BoolVar(&o.AuthorizeNamespaceWideFirst, "authorization-namespace-wide-first", o.AuthorizeNamespaceWideFirst,
		"For a request on one named object, first ask the host cluster whether the user may do the same to every object of the resource in the namespace "+
			"(one cached SubjectAccessReview instead of one per name), and ask with the name only when that is not allowed. "+
			"Turn it off when the host's authorization chain has a webhook that denies by object name: RBAC cannot deny, so with RBAC alone the answers are the same.")
}

// resolveDSN returns the DSN from the flag, the file or the environment, in that order of
// precedence. Errors never include the DSN: it may hold a password.
func (o *PostgresOptions) resolveDSN() (string, error) {
	if o.DSN != "" && o.DSNFile != "" {
		return "", errors.New("--postgres-dsn and --postgres-dsn-file are mutually exclusive")
	}
	switch {
	case o.DSN != "":
		return o.DSN, nil
	case o.DSNFile != "":
		b, err := os.ReadFile(o.DSNFile)
		if err != nil {
			return "", fmt.Errorf("--postgres-dsn-file: %w", err)
		}
		dsn := strings.TrimSpace(string(b))
		if dsn == "" {
			return "", fmt.Errorf("--postgres-dsn-file: %s is empty", o.DSNFile)
		}
		return dsn, nil
	case os.Getenv(DSNEnv) != "":
		return os.Getenv(DSNEnv), nil
	}
	return "", fmt.Errorf("no PostgreSQL connection string: set --postgres-dsn-file, $%s or --postgres-dsn", DSNEnv)
}

// Validate checks the options and returns every problem found.
func (o *Options) Validate() error {
	errs := o.RecommendedOptions.Validate()
	if _, err := o.Postgres.resolveDSN(); err != nil {
		errs = append(errs, err)
	}
	if o.Postgres.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("--postgres-max-conns must be at least 1, got %d", o.Postgres.MaxConns))
	}
	st := o.Postgres.Storage
	if st.CompactionWindow < time.Minute {
		errs = append(errs, fmt.Errorf("--postgres-compaction-window must be at least 1m, got %s", st.CompactionWindow))
	}
	// The storage reads 0 as "the default"; on the command line it would be a mistake.
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{
		{"--postgres-idle-in-transaction-timeout", st.IdleInTransactionTimeout},
		{"--postgres-lock-timeout", st.LockTimeout},
		{"--postgres-tcp-keepalive-idle", st.KeepaliveIdle},
		{"--postgres-tcp-keepalive-interval", st.KeepaliveInterval},
		{"--postgres-tcp-user-timeout", st.TCPUserTimeout},
	} {
		if f.d < time.Millisecond {
			errs = append(errs, fmt.Errorf("%s must be at least 1ms, got %s", f.flag, f.d))
		}
	}
	if st.KeepaliveCount < 1 {
		errs = append(errs, fmt.Errorf("--postgres-tcp-keepalive-count must be at least 1, got %d", st.KeepaliveCount))
	}
	if len(errs) == 0 {
		if err := st.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--postgres-lock-timeout, --postgres-idle-in-transaction-timeout: %w", err))
		}
	}
	if o.MaxClaimsPerNamespace < 0 {
		errs = append(errs, fmt.Errorf("--max-deployment-target-claims-per-namespace must not be negative, got %d", o.MaxClaimsPerNamespace))
	}
	if o.DeploymentRecordsPerDeployment < 0 || o.DeploymentRecordsPerDeployment > validation.MaxRevisionHistoryLimit {
		errs = append(errs, fmt.Errorf("--deployment-records-per-deployment must be between 0 and %d, got %d",
			validation.MaxRevisionHistoryLimit, o.DeploymentRecordsPerDeployment))
	}
	if o.Postgres.AuditRetention < 0 {
		errs = append(errs, fmt.Errorf("--audit-retention must not be negative, got %s", o.Postgres.AuditRetention))
	}
	if o.Postgres.ConnectionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--postgres-connection-timeout must be positive, got %s", o.Postgres.ConnectionTimeout))
	}
	return utilerrors.NewAggregate(errs)
}

// Config builds the server configuration. The returned cleanup closes the storage.
func (o *Options) Config(ctx context.Context) (*Config, func(), error) {
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	serverConfig := genericapiserver.NewRecommendedConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, namer)
	serverConfig.OpenAPIConfig.Info.Title = "GitOps Service"
	serverConfig.OpenAPIConfig.Info.Version = "v1alpha1"
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, namer)
	serverConfig.OpenAPIV3Config.Info.Title = "GitOps Service"
	serverConfig.OpenAPIV3Config.Info.Version = "v1alpha1"
	// On shutdown, end watches (clients re-establish them, on another replica if there is one)
	// instead of holding the process until the request timeout.
	serverConfig.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	serverConfig.FeatureGate = utilfeature.DefaultFeatureGate
	if o.RecommendedOptions.Traces == nil || o.RecommendedOptions.Traces.ConfigFile == "" {
		serverConfig.FeatureGate = withoutTracingFilter{serverConfig.FeatureGate}
	}
	serverConfig.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		return withGrownServerStack(withFastGzip(genericapiserver.DefaultBuildHandlerChain(apiHandler, c)))
	}
	serverConfig.EffectiveVersion = utilversion.DefaultKubeEffectiveVersion()

	if err := o.RecommendedOptions.ApplyTo(serverConfig); err != nil {
		return nil, nil, err
	}
	// Without an authenticator the apiserver skips authentication; wrapping nil would turn
	// that into a nil call on every request.
	if authn := serverConfig.Authentication.Authenticator; authn != nil {
		serverConfig.Authentication.Authenticator = withGrownStack(withVerifiedFrontProxies(authn, serverConfig.Authentication.RequestHeaderConfig))
	}
	internal := internalUsers{users: o.InternalAPIUsers, groups: o.InternalAPIGroups, agents: fleetidentity.Agents{UserPrefix: o.AgentUserPrefix}}
	authz := serverConfig.Authorization.Authorizer
	if o.AuthorizeNamespaceWideFirst {
		authz = askNamespaceWideFirst(authz)
	}
	serverConfig.Authorization.Authorizer = guardServiceRecords(guardInternalKinds(authz, internal), internal)

	dsn, err := o.Postgres.resolveDSN()
	if err != nil {
		return nil, nil, err
	}
	storage, err := newPostgresStorage(ctx, dsn, o.Postgres)
	if err != nil {
		return nil, nil, err
	}
	serverConfig.RESTOptionsGetter = storage
	// Not a liveness check: restarting the server does not bring PostgreSQL back.
	serverConfig.HealthzChecks = append(serverConfig.HealthzChecks, storage.healthCheck())
	serverConfig.AddReadyzChecks(storage.healthCheck())

	return &Config{
		GenericConfig: serverConfig,
		ExtraConfig: ExtraConfig{Validation: validation.Options{AllowFileRepositories: o.AllowFileRepositories},
			Agents: fleetidentity.Agents{UserPrefix: o.AgentUserPrefix}, MaxClaimsPerNamespace: o.MaxClaimsPerNamespace,
			DeploymentRecordsPerDeployment: o.DeploymentRecordsPerDeployment},
	}, storage.Close, nil
}

// Run serves until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	runSoftMemoryLimit(ctx, o.SoftMemoryLimitFloor.Value())
	config, cleanup, err := o.Config(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// withoutTracingFilter leaves the tracing filter out of the handler chain. Without a tracing
// configuration its tracer discards every span, yet the filter still ran otelhttp's middleware
// on every request: 2% of the server's CPU and 3 KB allocated per create.
type withoutTracingFilter struct{ featuregate.FeatureGate }

func (g withoutTracingFilter) Enabled(f featuregate.Feature) bool {
	return f != genericfeatures.APIServerTracing && g.FeatureGate.Enabled(f)
}

// quantityValue is a resource.Quantity as a pflag.Value.
type quantityValue struct{ q *resource.Quantity }

func (v *quantityValue) String() string { return v.q.String() }
func (v *quantityValue) Type() string   { return "quantity" }
func (v *quantityValue) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	*v.q = q
	return nil
}
