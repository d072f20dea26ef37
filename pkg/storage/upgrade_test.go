package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// oldRelease is an earlier release's writer: its statements, verbatim from git history, run
// the way its committer ran them for a batch of one write.
type oldRelease struct {
	name                   string
	create, update, delete string
}

// Both releases took their RVs with this statement, and locked rows with lockSQL as now.
const oldBumpSQL = `UPDATE state SET rv = rv + $1 RETURNING rv`

var (
	// release3 is the release before migration 000004 (commit 50e2b5a, the parent of 83a5792,
	// which added object_labels): it writes objects and changes, and no label rows.
	release3 = oldRelease{
		name: "release3",
		create: `
WITH s AS (SELECT rv - $8::bigint AS rv FROM state),
i AS (
	INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv, expires_at, unique_key)
	SELECT $1, $2, $3, $4, $5, $6, s.rv, s.rv, CASE WHEN $7::bigint > 0 THEN now() + $7 * interval '1 second' END, $9 FROM s
	ON CONFLICT DO NOTHING
	RETURNING mod_rv),
l AS (INSERT INTO changes (rv, key, created, deleted, value) SELECT i.mod_rv, $1, true, false, $6 FROM i)
SELECT mod_rv FROM i`,
		update: `
WITH s AS (SELECT rv - $7::bigint AS rv FROM state),
old AS (SELECT value, labels, namespace, mod_rv FROM objects WHERE key = $1),
u AS (
	UPDATE objects o SET namespace = $2, name = $3, labels = $4, value = $5, mod_rv = s.rv,
		expires_at = CASE WHEN $6::bigint > 0 THEN now() + $6 * interval '1 second' END
	FROM s WHERE o.key = $1
	RETURNING o.mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, value, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, false, $5, old.value, old.labels, old.namespace, old.mod_rv FROM s, old)
SELECT mod_rv FROM u`,
		delete: `
WITH s AS (SELECT rv - $2::bigint AS rv FROM state),
d AS (DELETE FROM objects WHERE key = $1 RETURNING value, labels, namespace, mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, true, d.value, d.labels, d.namespace, d.mod_rv FROM s, d)
SELECT s.rv FROM s, d`,
	}

	// release5 is the release before migration 000006 (its statements are those of 83a5792,
	// unchanged through 618f64a): it writes object_labels in CTEs of its own statements.
	release5 = oldRelease{
		name: "release5",
		create: `
WITH s AS (SELECT rv - $8::bigint AS rv FROM state),
i AS (
	INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv, expires_at, unique_key)
	SELECT $1, $2, $3, $4, $5, $6, s.rv, s.rv, CASE WHEN $7::bigint > 0 THEN now() + $7 * interval '1 second' END, $9 FROM s
	ON CONFLICT DO NOTHING
	RETURNING mod_rv),
l AS (INSERT INTO changes (rv, key, created, deleted, value) SELECT i.mod_rv, $1, true, false, $6 FROM i),
li AS (INSERT INTO object_labels (lkey, lvalue, key) SELECT e.key, e.value, $1 FROM i, jsonb_each_text($5) e ON CONFLICT DO NOTHING)
SELECT mod_rv FROM i`,
		update: `
WITH s AS (SELECT rv - $7::bigint AS rv FROM state),
old AS (SELECT value, labels, namespace, mod_rv FROM objects WHERE key = $1),
u AS (
	UPDATE objects o SET namespace = $2, name = $3, labels = $4, value = $5, mod_rv = s.rv,
		expires_at = CASE WHEN $6::bigint > 0 THEN now() + $6 * interval '1 second' END
	FROM s WHERE o.key = $1
	RETURNING o.mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, value, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, false, $5, old.value, old.labels, old.namespace, old.mod_rv FROM s, old),
-- Only the labels that changed: one statement's sub-statements cannot delete a row and insert
-- it again, and most updates change no label at all.
ld AS (
	DELETE FROM object_labels ol USING old, jsonb_each_text(old.labels) e
	WHERE ol.lkey = e.key AND ol.lvalue = e.value AND ol.key = $1 AND NOT $4::jsonb @> jsonb_build_object(e.key, e.value)),
li AS (
	INSERT INTO object_labels (lkey, lvalue, key)
	SELECT e.key, e.value, $1 FROM old, jsonb_each_text($4) e WHERE NOT old.labels @> jsonb_build_object(e.key, e.value)
	ON CONFLICT DO NOTHING)
SELECT mod_rv FROM u`,
		delete: `
WITH s AS (SELECT rv - $2::bigint AS rv FROM state),
d AS (DELETE FROM objects WHERE key = $1 RETURNING value, labels, namespace, mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, true, d.value, d.labels, d.namespace, d.mod_rv FROM s, d),
ld AS (
	DELETE FROM object_labels ol USING d, jsonb_each_text(d.labels) e
	WHERE ol.lkey = e.key AND ol.lvalue = e.value AND ol.key = $1)
SELECT s.rv FROM s, d`,
	}
)

// upgradeKeys is the key space every writer of the upgrade tests shares, so that each release
// updates and deletes what the others created.
const upgradeKeys = 16

// upgradeWrite is one random write: a create or update (an upsert) with random labels from a
// small set, or a delete.
type upgradeWrite struct {
	name   string
	labels map[string]string
	delete bool
}

func randomUpgradeWrite(rnd *rand.Rand) upgradeWrite {
	w := upgradeWrite{name: fmt.Sprintf("p%d", rnd.IntN(upgradeKeys)), labels: map[string]string{}, delete: rnd.IntN(4) == 0}
	for range rnd.IntN(4) {
		w.labels[fmt.Sprintf("k%d", rnd.IntN(3))] = fmt.Sprintf("v%d", rnd.IntN(3))
	}
	return w
}

func (w upgradeWrite) pod() *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: w.name, Labels: w.labels}}
}

// apply runs w as the release's committer did: lock the row, take an RV, write, notify, in one
// transaction. A create that lost its key to a concurrent writer rolls back, as the release's
// batch did before it retried.
func (r oldRelease) apply(ctx context.Context, pool *pgxpool.Pool, w upgradeWrite) error {
	key := "/pods/n/" + w.name
	data, err := runtime.Encode(codec, w.pod())
	if err != nil {
		return err
	}
	value := append([]byte(testPrefix), data...)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var locked string
		var cur []byte
		var modRV int64
		err := tx.QueryRow(ctx, lockSQL, []string{key}).Scan(&locked, &cur, &modRV)
		exists := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if !exists && w.delete {
			return nil
		}
		var rv int64
		if err := tx.QueryRow(ctx, oldBumpSQL, 1).Scan(&rv); err != nil {
			return err
		}
		switch {
		case !exists:
			err = tx.QueryRow(ctx, r.create, key, "/pods", "n", w.name, w.labels, value, int64(0), int64(0), nil).Scan(&rv)
		case w.delete:
			err = tx.QueryRow(ctx, r.delete, key, int64(0)).Scan(&rv)
		default:
			err = tx.QueryRow(ctx, r.update, key, "n", w.name, w.labels, value, int64(0), int64(0)).Scan(&rv)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', '')`)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// applyThroughStore runs w through this release's store.
func applyThroughStore(ctx context.Context, s *Store, w upgradeWrite) error {
	key := "/pods/n/" + w.name
	if w.delete {
		err := s.Delete(ctx, key, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil)
		if apistorage.IsNotFound(err) {
			return nil
		}
		return err
	}
	return s.GuaranteedUpdate(ctx, key, &example.Pod{}, true, nil,
		func(runtime.Object, apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
			return w.pod(), nil, nil
		}, nil)
}

// writers runs writer goroutines until stop is called, counting each one's writes. Writes are
// never cancelled: a store write whose context ends may still commit after it returned, and
// the checks need every write done.
type writers struct {
	t       *testing.T
	stopped atomic.Bool
	wg      sync.WaitGroup
	errs    chan error
}

func newWriters(t *testing.T) *writers {
	ws := &writers{t: t, errs: make(chan error, 16)}
	t.Cleanup(func() {
		ws.stopped.Store(true)
		ws.wg.Wait()
	})
	return ws
}

// start runs apply in n goroutines, each with its own random writes, and returns the count of
// their writes.
func (ws *writers) start(n int, apply func(upgradeWrite) error) *atomic.Int64 {
	var count atomic.Int64
	for range n {
		seed := rand.Uint64()
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			rnd := rand.New(rand.NewPCG(seed, 0))
			for !ws.stopped.Load() {
				if err := apply(randomUpgradeWrite(rnd)); err != nil {
					ws.errs <- err
					return
				}
				count.Add(1)
			}
		}()
	}
	return &count
}

// waitFor waits until cond holds, failing the test on a writer's error or after 30 seconds.
func (ws *writers) waitFor(what string, cond func() bool) {
	ws.t.Helper()
	deadline := time.After(wait30s)
	for !cond() {
		select {
		case err := <-ws.errs:
			ws.t.Fatalf("waiting for %s: a writer failed: %v", what, err)
		case <-deadline:
			ws.t.Fatalf("%s did not happen in %s", what, wait30s)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitWrites waits until each counter has grown by at least n.
func (ws *writers) waitWrites(n int64, counts ...*atomic.Int64) {
	ws.t.Helper()
	from := make([]int64, len(counts))
	for i, c := range counts {
		from[i] = c.Load()
	}
	ws.waitFor(fmt.Sprintf("%d more writes of each writer", n), func() bool {
		for i, c := range counts {
			if c.Load()-from[i] < n {
				return false
			}
		}
		return true
	})
}

// stop ends the writers and fails the test if one of them failed.
func (ws *writers) stop() {
	ws.t.Helper()
	ws.stopped.Store(true)
	ws.wg.Wait()
	close(ws.errs)
	for err := range ws.errs {
		ws.t.Fatalf("a writer failed: %v", err)
	}
}

// checkLabelIndex requires object_labels to hold exactly the labels of objects, and every
// label-selected list through the store (which reads the keys from object_labels) to return
// exactly the objects whose labels match.
func checkLabelIndex(ctx context.Context, t *testing.T, s *Store) {
	t.Helper()
	if diff := labelRowsDiff(ctx, t, s.b.pool); len(diff) > 0 {
		t.Errorf("object_labels differs from objects' labels: %v", diff)
	}
	for k := range 3 {
		lkey := fmt.Sprintf("k%d", k)
		selectors := map[string]string{lkey: `labels ? $1`}
		for v := range 3 {
			selectors[fmt.Sprintf("%s=v%d", lkey, v)] = fmt.Sprintf(`labels ->> $1 = 'v%d'`, v)
		}
		for selector, where := range selectors {
			rows, err := s.b.pool.Query(ctx, `SELECT name FROM objects WHERE `+where+` ORDER BY name`, lkey)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			sel, err := labels.Parse(selector)
			if err != nil {
				t.Fatal(err)
			}
			list := &example.PodList{}
			if err := s.GetList(ctx, "/pods", apistorage.ListOptions{Recursive: true, Predicate: apistorage.SelectionPredicate{
				Label: sel, Field: fields.Everything(), GetAttrs: podAttrsForTest}}, list); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, pod := range list.Items {
				got = append(got, pod.Name)
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("list with %q: %v, want %v (objects' labels)", selector, got, want)
			}
		}
	}
}

// TestUpgradeWithOldWritersWriting replays the rolling upgrades this schema went through, with
// every release's writers writing throughout: a replica of release 3 (before object_labels)
// keeps writing while migrations 000004 and 000005 run, and its rows go missing from the
// label index; then, with replicas of releases 3 and 5 still writing, a replica of this
// release starts, which migrates to the newest schema, and writes too. The index must end up
// exact: the newest migrations repair what the old writers left wrong, and the triggers keep it
// so whoever writes.
func TestUpgradeWithOldWritersWriting(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	pool := pgtest.NewPool(t, dsn, 20)
	m, done, err := newMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := m.Migrate(3); err != nil {
		t.Fatal(err)
	}
	ws := newWriters(t)
	old3 := ws.start(2, func(w upgradeWrite) error { return release3.apply(ctx, pool, w) })
	ws.waitWrites(20, old3)

	if err := m.Migrate(5); err != nil {
		t.Fatalf("migrating to 5 with release 3 writing: %v", err)
	}
	ws.waitFor("release 3's writes to break the label index (the defect)", func() bool {
		return len(labelRowsDiff(ctx, t, pool)) > 0
	})
	old5 := ws.start(2, func(w upgradeWrite) error { return release5.apply(ctx, pool, w) })
	ws.waitWrites(20, old3, old5)

	b, err := NewBackend(ctx, pgtest.NewPool(t, dsn, 10), testOptions)
	if err != nil {
		t.Fatalf("starting this release with releases 3 and 5 writing: %v", err)
	}
	t.Cleanup(b.Close)
	s := newPodStore(b)
	current := ws.start(2, func(w upgradeWrite) error { return applyThroughStore(ctx, s, w) })
	ws.waitWrites(50, old3, old5, current)
	ws.stop()

	var version int
	if err := pool.QueryRow(ctx, `SELECT version FROM `+migrationsTable).Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("schema version %d (err %v), want %d", version, err, schemaVersion)
	}
	t.Logf("writes: release 3 %d, release 5 %d, this release %d", old3.Load(), old5.Load(), current.Load())
	checkLabelIndex(ctx, t, s)
}

// TestUpgradeOldWritersAfterUpgrade runs the writers of releases 3 and 5 (old replicas not yet
// replaced) and this release's store side by side on the newest schema: the label index must
// stay exact whichever of them writes.
func TestUpgradeOldWritersAfterUpgrade(t *testing.T) {
	for _, old := range []oldRelease{release3, release5} {
		t.Run(old.name, func(t *testing.T) {
			ctx, s := testSetup(t)
			ws := newWriters(t)
			oldCount := ws.start(2, func(w upgradeWrite) error { return old.apply(ctx, s.b.pool, w) })
			current := ws.start(2, func(w upgradeWrite) error { return applyThroughStore(ctx, s, w) })
			ws.waitWrites(150, oldCount, current)
			ws.stop()
			checkLabelIndex(ctx, t, s)
		})
	}
}

// TestUpgradeWriterGuard raises the schema's minimum writer version above this release's:
// writes must be refused with a 503 that says what to do, without taking an RV or writing
// anything, and a new replica of this release must not start; at this release's version,
// writes are admitted again.
func TestUpgradeWriterGuard(t *testing.T) {
	ctx, s := testSetup(t)
	pod := func(name string) *example.Pod {
		return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name, Labels: map[string]string{"a": "1"}}}
	}
	if err := s.Create(ctx, "/pods/n/kept", pod("kept"), nil, 0); err != nil {
		t.Fatal(err)
	}
	setMinWriter := func(v int) {
		if _, err := s.b.pool.Exec(ctx, `UPDATE state SET min_writer = $1`, v); err != nil {
			t.Fatal(err)
		}
	}
	state := func() string {
		var rv, objects, changes int64
		if err := s.b.pool.QueryRow(ctx, `SELECT (SELECT rv FROM state), (SELECT count(*) FROM objects), (SELECT count(*) FROM changes)`).
			Scan(&rv, &objects, &changes); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("rv %d, %d objects, %d changes", rv, objects, changes)
	}

	setMinWriter(schemaVersion + 1)
	before := state()
	want := fmt.Sprintf("the storage schema requires gitops-apiserver of schema version ≥ %d; this replica has %d: finish the upgrade",
		schemaVersion+1, schemaVersion)
	for name, write := range map[string]func() error{
		"create": func() error { return s.Create(ctx, "/pods/n/refused", pod("refused"), nil, 0) },
		"update": func() error {
			return s.GuaranteedUpdate(ctx, "/pods/n/kept", &example.Pod{}, false, nil,
				apistorage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
					obj.(*example.Pod).Labels = map[string]string{"a": "2"}
					return obj, nil
				}), nil)
		},
		"delete": func() error {
			return s.Delete(ctx, "/pods/n/kept", &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil)
		},
	} {
		err := write()
		if !apierrors.IsServiceUnavailable(err) || err.Error() != want {
			t.Errorf("%s with the minimum writer above this release: %v, want a 503 saying %q", name, err, want)
		}
	}
	if after := state(); after != before {
		t.Errorf("refused writes changed the database: %s before, %s after", before, after)
	}
	if err := s.b.ReadinessCheck(); err == nil || err.Error() != want {
		t.Errorf("readiness of a replica whose writes the schema refuses: %v, want %q", err, want)
	}
	var tooOld *WriterTooOldError
	if _, err := NewBackend(ctx, pgtest.NewPool(t, s.b.pool.Config().ConnString(), 2), testOptions); !errors.As(err, &tooOld) {
		t.Errorf("a new replica started with the minimum writer above its version: %v", err)
	}

	setMinWriter(schemaVersion)
	if err := s.Create(ctx, "/pods/n/admitted", pod("admitted"), nil, 0); err != nil {
		t.Fatalf("create with the minimum writer at this release: %v", err)
	}
	if err := s.b.ReadinessCheck(); err != nil {
		t.Errorf("readiness once the schema takes this release's writes again: %v", err)
	}
	b, err := NewBackend(ctx, pgtest.NewPool(t, s.b.pool.Config().ConnString(), 2), testOptions)
	if err != nil {
		t.Fatalf("a new replica did not start with the minimum writer at its version: %v", err)
	}
	b.Close()
}
