package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// labelRowsDiff lists the rows object_labels lacks ("-") and the rows it has that no object's
// labels account for ("+").
func labelRowsDiff(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `
WITH want AS (SELECT l.key AS lkey, l.value AS lvalue, o.key FROM objects o, jsonb_each_text(o.labels) l)
(SELECT '-', * FROM want EXCEPT SELECT '-', * FROM object_labels)
UNION ALL
(SELECT '+', * FROM object_labels EXCEPT SELECT '+', * FROM want)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var diff []string
	for rows.Next() {
		var sign, lkey, lvalue, key string
		if err := rows.Scan(&sign, &lkey, &lvalue, &key); err != nil {
			t.Fatal(err)
		}
		diff = append(diff, fmt.Sprintf("%s %s %s=%s", sign, key, lkey, lvalue))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return diff
}

// TestObjectLabelsFollowWrites runs random creates, label changes, deletes and TTL expiries,
// some of them concurrent and so committed in one batch, and checks after each round that
// object_labels holds exactly the labels objects hold. The triggers of migration 000006 keep
// it; the upgrade tests run earlier releases' writers as well.
func TestObjectLabelsFollowWrites(t *testing.T) {
	ctx, s := testSetup(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0))
	randomLabels := func() map[string]string {
		l := map[string]string{}
		for range rnd.IntN(4) {
			l[fmt.Sprintf("k%d", rnd.IntN(4))] = fmt.Sprintf("v%d", rnd.IntN(3))
		}
		return l
	}
	for round := range 30 {
		errs := make(chan error, 8)
		for i := range 8 {
			// Each writer has its own keys, so the round's outcome does not depend on order.
			name := fmt.Sprintf("p%d-%d", i, rnd.IntN(3))
			key := "/pods/n/" + name
			op, l, ttl := rnd.IntN(3), randomLabels(), uint64(0)
			if rnd.IntN(10) == 0 {
				ttl = 1
			}
			go func() {
				switch op {
				case 0:
					pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name, Labels: l}}
					err := s.Create(ctx, key, pod, nil, ttl)
					if err != nil && !apistorage.IsExist(err) {
						errs <- err
						return
					}
				case 1:
					err := s.GuaranteedUpdate(ctx, key, &example.Pod{}, true, nil,
						func(obj runtime.Object, _ apistorage.ResponseMeta) (runtime.Object, *uint64, error) {
							pod := obj.(*example.Pod)
							pod.Namespace, pod.Name, pod.Labels = "n", name, l
							return pod, nil, nil
						}, nil)
					if err != nil {
						errs <- err
						return
					}
				case 2:
					err := s.Delete(ctx, key, &example.Pod{}, nil, apistorage.ValidateAllObjectFunc, nil)
					if err != nil && !apistorage.IsNotFound(err) {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if diff := labelRowsDiff(ctx, t, s.b.pool); len(diff) > 0 {
			t.Fatalf("round %d: object_labels differs from objects' labels: %v", round, diff)
		}
	}
	// Wait until the TTL loop has expired everything written with a TTL (1s), then compare.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, wait30s, true, func(ctx context.Context) (bool, error) {
		var pending bool
		err := s.b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM objects WHERE expires_at IS NOT NULL)`).Scan(&pending)
		return !pending, err
	}); err != nil {
		t.Fatalf("objects written with a TTL of 1s did not expire: %v", err)
	}
	if diff := labelRowsDiff(ctx, t, s.b.pool); len(diff) > 0 {
		t.Fatalf("after expiry: object_labels differs from objects' labels: %v", diff)
	}
}

// TestObjectLabelsBackfill checks that the migration that adds object_labels fills it with
// the labels of the objects already stored.
func TestObjectLabelsBackfill(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 4)
	m, done, err := newMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := m.Migrate(3); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv)
		VALUES ('/pods/n/a', '/pods', 'n', 'a', '{"x": "1", "y": "2"}', '', 1, 1),
		       ('/pods/n/b', '/pods', 'n', 'b', '{}', '', 1, 1),
		       ('/pods/n/c', '/pods', 'n', 'c', '{"x": "1"}', '', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil && err != migrate.ErrNoChange {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM object_labels`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows in object_labels (err %v), want 3", n, err)
	}
	if diff := labelRowsDiff(ctx, t, pool); len(diff) > 0 {
		t.Fatalf("object_labels differs from objects' labels: %v", diff)
	}
}

// TestObjectLabelsFollowAnyStatement writes objects with statements of every shape the
// triggers must follow, none of them the store's: several rows at once, COPY, a label change
// that keeps some pairs, a key change, and deletes.
func TestObjectLabelsFollowAnyStatement(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 4)
	if err := Migrate(pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"objects"}, []string{"key", "resource", "namespace", "name", "labels", "value", "create_rv", "mod_rv"},
		pgx.CopyFromRows([][]any{{"/pods/n/c", "/pods", "n", "c", map[string]string{"x": "1"}, []byte{}, 1, 1}})); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv)
		 VALUES ('/pods/n/a', '/pods', 'n', 'a', '{"x": "1", "y": "2", "z": "3"}', '', 1, 1),
		        ('/pods/n/b', '/pods', 'n', 'b', '{}', '', 1, 1),
		        ('/pods/n/d', '/pods', 'n', 'd', '{"x": "2"}', '', 1, 1)`,
		`UPDATE objects SET labels = '{"x": "1", "y": "3", "w": "4"}' WHERE key = '/pods/n/a'`,
		`UPDATE objects SET labels = '{"x": "5"}' WHERE key IN ('/pods/n/b', '/pods/n/c')`,
		`UPDATE objects SET key = '/pods/n/e', name = 'e' WHERE key = '/pods/n/d'`,
		`UPDATE objects SET value = 'status' WHERE key = '/pods/n/a'`,
		`DELETE FROM objects WHERE key = '/pods/n/c'`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
		if diff := labelRowsDiff(ctx, t, pool); len(diff) > 0 {
			t.Fatalf("after %s: object_labels differs from objects' labels: %v", stmt, diff)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM object_labels`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("%d rows in object_labels (err %v), want 5", n, err)
	}
}

// TestObjectLabelsRepair checks that migration 000006 repairs what writers of a release
// before object_labels left wrong after 000004: the labels of objects they created or
// relabelled missing, and the label rows of objects they relabelled or deleted left behind.
func TestObjectLabelsRepair(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.NewDatabase(t), 4)
	m, done, err := newMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := m.Migrate(5); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv)
		 VALUES ('/pods/n/created', '/pods', 'n', 'created', '{"x": "1", "y": "2"}', '', 1, 1),
		        ('/pods/n/relabelled', '/pods', 'n', 'relabelled', '{"x": "2", "y": "2"}', '', 1, 1),
		        ('/pods/n/untouched', '/pods', 'n', 'untouched', '{"x": "1"}', '', 1, 1)`,
		`INSERT INTO object_labels (lkey, lvalue, key)
		 VALUES ('x', '1', '/pods/n/relabelled'), ('y', '2', '/pods/n/relabelled'),
		        ('x', '1', '/pods/n/untouched'), ('x', '1', '/pods/n/deleted')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if diff := labelRowsDiff(ctx, t, pool); len(diff) != 5 {
		t.Fatalf("the old writers' damage was not set up: %v", diff)
	}
	if err := m.Up(); err != nil && err != migrate.ErrNoChange {
		t.Fatal(err)
	}
	if diff := labelRowsDiff(ctx, t, pool); len(diff) > 0 {
		t.Fatalf("object_labels differs from objects' labels after the repair: %v", diff)
	}
}
