package storage

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// TestMigrations applies the migrations from several "replicas" at once, then down, then up
// again, checking the schema each time.
func TestMigrations(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 10)
	tables := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()
			AND tablename IN ('state', 'compaction', 'objects', 'changes')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = Migrate(pgtest.NewPool(t, pool.Config().ConnString(), 2))
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("concurrent up: %v", err)
		}
	}
	if n := tables(); n != 4 {
		t.Fatalf("after up: %d of 4 tables", n)
	}
	if err := MigrateDown(pool); err != nil {
		t.Fatal(err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("after down: %d tables left", n)
	}
	if err := Migrate(pool); err != nil {
		t.Fatal(err)
	}
	if n := tables(); n != 4 {
		t.Fatalf("after up again: %d of 4 tables", n)
	}
	var rv int64
	if err := pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&rv); err != nil || rv != 1 {
		t.Fatalf("state after up again: rv=%d err=%v", rv, err)
	}
}

// schemaFingerprint describes the schema's tables, columns, indexes, statistics, storage
// options, triggers and functions, one line each, to compare schemas.
func schemaFingerprint(ctx context.Context, t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var fp string
	if err := pool.QueryRow(ctx, `
SELECT coalesce(string_agg(x, E'\n' ORDER BY x), '') FROM (
	SELECT format('column %s.%s %s %s %s %s', table_name, column_name, data_type, is_nullable, column_default, collation_name)
	FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> $1
	UNION ALL SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = current_schema() AND tablename <> $1
	UNION ALL SELECT format('statistics %s', pg_get_statisticsobjdef(oid)) FROM pg_statistic_ext WHERE stxnamespace = current_schema()::regnamespace
	UNION ALL SELECT format('options %s %s', relname, reloptions) FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND reloptions IS NOT NULL
	UNION ALL SELECT format('trigger %s', pg_get_triggerdef(oid)) FROM pg_trigger WHERE NOT tgisinternal
	UNION ALL SELECT format('function %s %s', oid::regprocedure, md5(pg_get_functiondef(oid))) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
) s(x)`, migrationsTable).Scan(&fp); err != nil {
		t.Fatal(err)
	}
	return fp
}

// lineDiff lists the lines only got has ("+") and those only want has ("-").
func lineDiff(got, want string) []string {
	count := map[string]int{}
	for _, l := range strings.Split(got, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(want, "\n") {
		count[l]--
	}
	var diff []string
	for l, n := range count {
		switch {
		case n > 0:
			diff = append(diff, "+ "+l)
		case n < 0:
			diff = append(diff, "- "+l)
		}
	}
	sort.Strings(diff)
	return diff
}

// TestMigrationsDownRestore checks that each down migration restores the schema its up
// migration found: one database goes up a version at a time, another all the way up and then
// down a version at a time, and their schemas must match at every version.
func TestMigrationsDownRestore(t *testing.T) {
	ctx := context.Background()
	upPool := pgtest.NewPool(t, pgtest.NewDatabase(t), 2)
	downPool := pgtest.NewPool(t, pgtest.NewDatabase(t), 2)
	up, doneUp, err := newMigrator(upPool)
	if err != nil {
		t.Fatal(err)
	}
	defer doneUp()
	down, doneDown, err := newMigrator(downPool)
	if err != nil {
		t.Fatal(err)
	}
	defer doneDown()
	want := map[int]string{0: schemaFingerprint(ctx, t, upPool)}
	for v := 1; v <= schemaVersion; v++ {
		if err := up.Steps(1); err != nil {
			t.Fatal(err)
		}
		want[v] = schemaFingerprint(ctx, t, upPool)
	}
	if err := down.Up(); err != nil {
		t.Fatal(err)
	}
	for v := schemaVersion - 1; v >= 0; v-- {
		if err := down.Steps(-1); err != nil {
			t.Fatal(err)
		}
		if got := schemaFingerprint(ctx, t, downPool); got != want[v] {
			t.Errorf("down to %d: the schema differs from up to %d: %v", v, v, lineDiff(got, want[v]))
		}
	}
}

// TestMigrateLeavesANewerSchema: a replica of this release that restarts during the rollout
// of a newer one must start on the newer schema unless the schema refuses its writes.
func TestMigrateLeavesANewerSchema(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 2)
	if err := Migrate(pool); err != nil {
		t.Fatal(err)
	}
	m, done, err := newMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Force(schemaVersion + 1)
	done()
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(pool); err != nil {
		t.Fatalf("migrating a schema newer than this release's: %v", err)
	}
	if _, err := pool.Exec(context.Background(), `UPDATE state SET min_writer = $1`, schemaVersion+1); err != nil {
		t.Fatal(err)
	}
	var tooOld *WriterTooOldError
	if err := Migrate(pool); !errors.As(err, &tooOld) || tooOld.Required != schemaVersion+1 || tooOld.Have != schemaVersion {
		t.Fatalf("migrating a schema that refuses this release's writers: %v, want a WriterTooOldError", err)
	}
}
