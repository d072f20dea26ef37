package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// (errKeyExists) or its unique key (*uniqueConflictError); nil means neither holds any more
// (the winner was deleted meanwhile) and the create may run again.
func (b *Backend) whyCreateLost(ctx context.Context, r record) error {
	var found bool
	if err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM objects WHERE key = $1)`, r.key).Scan(&found); err != nil {
		return err
	}
	if found {
		return errKeyExists
	}
	if r.uniqueKey == nil {
		return nil
	}
	var holder string
	err := b.pool.QueryRow(ctx, `SELECT name FROM objects WHERE resource = $1 AND namespace = $2 AND unique_key = $3`,
		r.resource, r.namespace, *r.uniqueKey).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return &uniqueConflictError{holder: holder}
}
