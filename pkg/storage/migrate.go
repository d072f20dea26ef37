package storage

import (
	"embed"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
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

// Migrate brings the schema up to the newest embedded migration.
func Migrate(pool *pgxpool.Pool) error {
	m, done, err := newMigrator(pool)
	if err != nil {
		return err
	}
	defer done()
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
