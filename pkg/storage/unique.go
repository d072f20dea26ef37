package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// UniqueIndex is a rule that no two objects of a resource in one namespace may share a key,
// checked in the transaction that creates an object. The key must not change on update (the
// registry makes the fields it derives from immutable).
type UniqueIndex struct {
	// Key returns the object's key; "" claims nothing.
	Key func(obj runtime.Object) string
	// Conflict is the error returned for obj when the object named holder has its key.
	Conflict func(obj runtime.Object, holder string) error
}

// SetUniqueIndex applies idx to the stores of resource created from now on.
func (b *Backend) SetUniqueIndex(resource schema.GroupResource, idx UniqueIndex) {
	b.uniqueMu.Lock()
	defer b.uniqueMu.Unlock()
	if b.unique == nil {
		b.unique = map[schema.GroupResource]UniqueIndex{}
	}
	b.unique[resource] = idx
}

func (b *Backend) uniqueIndex(resource schema.GroupResource) *UniqueIndex {
	b.uniqueMu.Lock()
	defer b.uniqueMu.Unlock()
	if idx, ok := b.unique[resource]; ok {
		return &idx
	}
	return nil
}

// uniqueConflictError says which object holds the unique key a create wanted.
type uniqueConflictError struct{ holder string }

func (e *uniqueConflictError) Error() string {
	return fmt.Sprintf("unique key held by %q", e.holder)
}

// whyCreateLost tells, after a create inserted nothing, whether its key was taken
// (errKeyExists), its limit reached (*CountLimitError) or its unique key taken
// (*uniqueConflictError); nil means neither holds any more
// (the winner was deleted meanwhile) and the create may run again. It runs on the committer's
// own connection, free again once the batch rolled back: with every request connection busy,
// the request pool would hold up the committer, and every write behind it.
func (b *Backend) whyCreateLost(ctx context.Context, r record) error {
	var found bool
	if err := b.writePool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM objects WHERE key = $1)`, r.key).Scan(&found); err != nil {
		return err
	}
	if found {
		return errKeyExists
	}
	if r.limit != nil {
		var n int64
		if err := b.writePool.QueryRow(ctx, `SELECT count(*) FROM objects WHERE key >= $1 AND key < $2`, r.limit.lo, r.limit.hi).Scan(&n); err != nil {
			return err
		}
		if n >= r.limit.limit {
			return &CountLimitError{Limit: r.limit.limit}
		}
	}
	if r.uniqueKey == nil {
		return nil
	}
	var holder string
	err := b.writePool.QueryRow(ctx, `SELECT name FROM objects WHERE resource = $1 AND namespace = $2 AND unique_key = $3`,
		r.resource, r.namespace, *r.uniqueKey).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return &uniqueConflictError{holder: holder}
}

// fillUniqueKeys gives their unique key to the resource's objects stored without one: rows
// written before migration 000002 added the column, which a create with the same key would
// otherwise pass. Oldest first, so that of two such rows with one key the older keeps it; the
// other is reported and stays without, since only a person can decide which binding to keep.
// Objects that claim no key ("") are read again at every start; there are none among valid
// SnapshotEnvironmentBindings, nor among PromotionApprovals made through an authenticating
// server (the two resources with an index).
func (s *Store) fillUniqueKeys(ctx context.Context) error {
	rows, err := s.b.pool.Query(ctx, `SELECT key, value, mod_rv FROM objects WHERE resource = $1 AND unique_key IS NULL ORDER BY create_rv`,
		s.resourcePrefix)
	if err != nil {
		return err
	}
	type stored struct {
		key   string
		value []byte
		rv    int64
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
		var o stored
		return o, r.Scan(&o.key, &o.value, &o.rv)
	})
	if err != nil {
		return err
	}
	for _, o := range all {
		data, _, err := s.fromStorage(ctx, o.key, o.value)
		if err != nil {
			return fmt.Errorf("reading %s: %w", o.key, err)
		}
		obj := s.newFunc()
		if err := decode(s.codec, s.versioner, data, obj, o.rv); err != nil {
			return fmt.Errorf("decoding %s: %w", o.key, err)
		}
		k := s.unique.Key(obj)
		if k == "" {
			continue
		}
		// The check in the statement skips a key already held; the unique index still decides
		// if another replica's create takes it at the same moment.
		tag, err := s.b.pool.Exec(ctx, `UPDATE objects o SET unique_key = $2 WHERE o.key = $1 AND o.unique_key IS NULL
			AND NOT EXISTS (SELECT 1 FROM objects h WHERE h.resource = o.resource AND h.namespace = o.namespace AND h.unique_key = $2)`,
			o.key, k)
		if err != nil && !isUniqueViolation(err) {
			return fmt.Errorf("setting the unique key of %s: %w", o.key, err)
		}
		if err != nil || tag.RowsAffected() == 0 {
			klog.Warningf("%s was stored before its unique key %q was enforced, and another object of its namespace holds that key (or %s was deleted meanwhile): both keep working; delete one of them", o.key, k, o.key)
		}
	}
	return nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" // unique_violation
}
