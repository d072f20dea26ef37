package storage

import (
	"context"
	"sync"
	"testing"

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
