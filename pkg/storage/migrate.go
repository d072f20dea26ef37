package storage

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"k8s.io/klog/v2"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationsTable keeps golang-migrate's bookkeeping apart from any other user of the schema.
const migrationsTable = "gitops_storage_migrations"

// newMigrator returns a golang-migrate instance over the embedded migrations. golang-migrate
// holds a session advisory lock while it works, so replicas may start at the same time.
func newMigrator(pool *pgxpool.Pool) (*migrate.Migrate, func(), error) {
	src, err := iofs.New(migrationFiles, "migrations")
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: migrationsTable})
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migration driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return m, func() { _, _ = m.Close() }, nil
}

// schemaVersion is the newest embedded migration: the schema this release writes for. The
// counter statement carries it, and the database refuses it below state.min_writer.
var schemaVersion = newestMigration()

func newestMigration() int {
	src, err := iofs.New(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	v, err := src.First()
	for err == nil {
		var next uint
		if next, err = src.Next(v); err == nil {
			v = next
		}
	}
	if !errors.Is(err, os.ErrNotExist) {
		panic(err)
	}
	return int(v)
}

// Migrate brings the schema up to the newest embedded migration, and fails if the schema
// refuses this release's writes (WriterTooOldError). A schema newer than this release's is
// left as it is: during a rolling upgrade an old replica that restarts must still start, and
// the newer release's migrations keep the previous release's writers working or refuse them.
func Migrate(pool *pgxpool.Pool) error {
	if err := migrateUp(pool); err != nil {
		return err
	}
	// A replica the schema refuses does not start, rather than answer every write with a 503.
	var minWriter int
	if err := pool.QueryRow(context.Background(), `SELECT min_writer FROM state`).Scan(&minWriter); err != nil {
		return fmt.Errorf("reading the storage schema's minimum writer version: %w", err)
	}
	if minWriter > schemaVersion {
		return &WriterTooOldError{Required: minWriter, Have: schemaVersion}
	}
	return nil
}

// migrateUp runs the migrations this release has and the schema lacks. The migrator holds a
// connection of the pool until it returns.
func migrateUp(pool *pgxpool.Pool) error {
	m, done, err := newMigrator(pool)
	if err != nil {
		return err
	}
	defer done()
	if v, dirty, err := m.Version(); err == nil && !dirty && int(v) > schemaVersion {
		klog.InfoS("The storage schema is newer than this release's; leaving it as it is", "schema", v, "release", schemaVersion)
		return nil
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrating storage schema: %w", err)
	}
	return nil
}

// MigrateDown reverts every migration. It exists for tests and for operators removing the schema.
func MigrateDown(pool *pgxpool.Pool) error {
	m, done, err := newMigrator(pool)
	if err != nil {
		return err
	}
	defer done()
	if err := m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("reverting storage schema: %w", err)
	}
	return nil
}
