// Package argocdcache reads what an Argo CD instance keeps in its Redis rather than in its
// Applications: the resource tree, where Argo CD 3.x keeps each resource's health
// (controller.resource.health.persist false, the Application's status.resourceHealthSource
// appTree). It reads through Argo CD's own cache code (util/cache/appstate), as argocd-server
// does for its UI, so that keys, compression and encoding are Argo CD's.
package argocdcache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	appstatecache "github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/redis/go-redis/v9"
)

// ErrNoTree is returned for an Application whose tree Argo CD has not written (yet), or whose
// entry expired.
var ErrNoTree = errors.New("Argo CD keeps no resource tree for the Application")

// Options say how to reach an Argo CD instance's Redis.
type Options struct {
	// Address is host:port of the Redis Argo CD's application-controller writes to (its
	// --redis).
	Address string
	// PasswordFile holds the password (Argo CD's REDIS_PASSWORD, the argocd-redis Secret's
	// key auth); none when empty.
	PasswordFile string
	// TLS connects with TLS, verifying the server with CAFile (the system's roots when empty).
	TLS    bool
	CAFile string
	// Compression is Argo CD's --redis-compress: gzip (its default) or none.
	Compression string
	// Timeout bounds each read, dial included: a reconcile waits at most this long on an
	// unreachable Redis.
	Timeout time.Duration
}

// Reader reads Application resource trees from one Argo CD instance's Redis.
type Reader struct {
	cache   *appstatecache.Cache
	client  *redis.Client
	address string
}

// New makes a Reader; it does not connect until the first read.
func New(o Options) (*Reader, error) {
	compression, err := cacheutil.CompressionTypeFromString(o.Compression)
	if err != nil {
		return nil, fmt.Errorf("compression %q: want gzip or none", o.Compression)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	opts := &redis.Options{
		Addr: o.Address,
		// One try: the next reconcile is the retry, and a down Redis must not hold a worker.
		MaxRetries:  -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
	}
	if o.PasswordFile != "" {
		raw, err := os.ReadFile(o.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("password file: %w", err)
		}
		opts.Password = strings.TrimRight(string(raw), "\r\n")
	}
	if o.TLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("CA file %s: no PEM certificate in it", o.CAFile)
			}
			opts.TLSConfig.RootCAs = pool
		}
	}
	client := redis.NewClient(opts)
	// The expiration is for writes, which the agent never makes.
	c := appstatecache.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(client, 0, compression)), 0)
	return &Reader{cache: c, client: client, address: o.Address}, nil
}

// ResourceTree reads the resource tree of an Application, named as Argo CD keys it
// (Application.InstanceName of Argo CD's namespace). ErrNoTree when Argo CD has none for it.
func (r *Reader) ResourceTree(appName string) (*argov1alpha1.ApplicationTree, error) {
	tree := &argov1alpha1.ApplicationTree{}
	err := r.cache.GetAppResourcesTree(appName, tree)
	if errors.Is(err, appstatecache.ErrCacheMiss) {
		return nil, ErrNoTree
	}
	if err != nil {
		return nil, fmt.Errorf("reading the resource tree of Application %s from Argo CD's Redis at %s: %w", appName, r.address, err)
	}
	return tree, nil
}

// Ping tells whether Redis answers.
func (r *Reader) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }

// Address is the Redis read, for the agent's log.
func (r *Reader) Address() string { return r.address }

// Close closes the connections.
func (r *Reader) Close() error { return r.client.Close() }
