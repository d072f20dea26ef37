package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/promotionapproval"
	"github.com/gitops-service/gitops-service/pkg/registry/appstudio/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/pkg/registry/managedgitops/auditentry"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

// keyPrefix is the root of every key, as --etcd-prefix is for kube-apiserver.
const keyPrefix = "/registry"

// postgresStorage hands every resource a storage.Interface on one PostgreSQL backend: one
// pool, one change feed and one compactor per process, whatever the number of resources.
type postgresStorage struct {
	pool       *pgxpool.Pool
	backend    *storage.Backend
	codec      runtime.Codec
	watchCache bool
	closeOnce  sync.Once
}

var _ generic.RESTOptionsGetter = &postgresStorage{}

func newPostgresStorage(ctx context.Context, dsn string, opts PostgresOptions) (*postgresStorage, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the connection string, password included.
		return nil, fmt.Errorf("the PostgreSQL connection string is not valid (it is not repeated here because it may hold a password)")
	}
	storageOpts := opts.Storage
	cfg.MaxConns = opts.MaxConns
	cfg.ConnConfig.Tracer = queryTracer{}
	// Session limits: a replica frozen inside a write, or gone without closing its socket,
	// must not hold the resourceVersion counter lock, and with it every replica's writes.
	storage.ConfigurePool(cfg, storageOpts)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	if err := waitForPostgres(ctx, pool, opts.ConnectionTimeout); err != nil {
		pool.Close()
		return nil, err
	}
	// NewBackend applies pending migrations under an advisory lock, so replicas may start together.
	backend, err := storage.NewBackend(ctx, pool, storageOpts)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("starting the PostgreSQL storage: %w", err)
	}
	backend.SetUniqueIndex(appstudio.Resource("snapshotenvironmentbindings"), snapshotenvironmentbinding.UniqueIndex)
	backend.SetUniqueIndex(appstudio.Resource("promotionapprovals"), promotionapproval.UniqueIndex)
	recorded := audited
	if !opts.AuditTrail {
		recorded = func(schema.GroupResource) bool { return false }
	}
	backend.SetAuditTrail(storage.AuditTrail{
		Resource:  auditentry.Resource,
		Audited:   recorded,
		Encode:    auditentry.Encode,
		Decode:    auditentry.Decode,
		Retention: opts.AuditRetention,
	})
	exposeStorageMetrics(pool, backend)
	return &postgresStorage{
		pool:       pool,
		backend:    backend,
		codec:      Codecs.LegacyCodec(gitopsv1alpha1.SchemeGroupVersion, appstudiov1alpha1.SchemeGroupVersion),
		watchCache: opts.EnableWatchCache,
	}, nil
}

func waitForPostgres(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = pool.Ping(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("PostgreSQL did not accept connections within %s: %w", timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// decorator builds each resource's PostgreSQL store, behind the apiserver's watch cache when
// it is enabled.
func (p *postgresStorage) decorator() generic.StorageDecorator {
	if p.watchCache {
		return p.backend.CachedDecorator()
	}
	return p.backend.Decorator()
}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (p *postgresStorage) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	config := storagebackend.NewDefaultConfig(keyPrefix, p.codec)
	return generic.RESTOptions{
		StorageConfig:           config.ForResource(resource),
		Decorator:               p.decorator(),
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          resource.Group + "/" + resource.Resource,
		CountMetricPollPeriod:   time.Minute,
	}, nil
}

func (p *postgresStorage) healthCheck() healthz.HealthChecker {
	return healthz.NamedCheck("postgres", func(r *http.Request) error {
		return p.backend.ReadinessCheck()
	})
}

// Close stops the change feed and closes the pool.
func (p *postgresStorage) Close() {
	p.closeOnce.Do(func() {
		p.backend.Close()
		p.pool.Close()
	})
}
