// Package pgtest gives tests their own PostgreSQL database on the server that
// hack/test-postgres.sh starts.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDSN names the variable holding a superuser DSN of the test server.
const EnvDSN = "GITOPS_TEST_POSTGRES_DSN"

// ServerDSN returns the test server's superuser DSN. Tests fail, never skip, without one:
// a storage change that was never run against PostgreSQL must not pass as green.
func ServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		t.Fatalf("%s is not set; these tests need PostgreSQL. Run them as: hack/test-postgres.sh go test ./pkg/storage/...", EnvDSN)
	}
	return dsn
}

// NewDatabase creates an empty database and returns its DSN. The database is dropped when the
// test ends, disconnecting whatever still uses it.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerDSN(t)
	buf := make([]byte, 6)
	_, _ = rand.Read(buf)
	name := "t_" + hex.EncodeToString(buf)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	// Identifiers cannot be parameters; name is generated above from hex digits only.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("creating database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("connecting to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		// A keyword/value DSN: a later dbname overrides an earlier one.
		return server + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

// NewPool opens a pool on dsn with at most maxConns connections, closed when the test ends.
func NewPool(t testing.TB, dsn string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
