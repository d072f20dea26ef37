package storage

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// countLimitKey is the context key of WithCountLimit.
type countLimitKey struct{}

// CountLimitFunc is the limit for the creation of obj; 0 or less for none.
type CountLimitFunc func(ctx context.Context, obj runtime.Object) (int64, error)

// WithCountLimit returns ctx with a limit for an object that a Create, or a GuaranteedUpdate of
// a missing key (server-side apply), running with it creates: the object is created only if its
// namespace holds fewer than limit(obj) objects of its resource, otherwise the write fails with
// a *CountLimitError. The count is taken in the transaction that inserts the object, after the
// write counter's row lock that every write of every replica takes first, so two concurrent
// creates cannot both take the last place.
func WithCountLimit(ctx context.Context, limit CountLimitFunc) context.Context {
	return context.WithValue(ctx, countLimitKey{}, limit)
}

// limitCreate sets the limit of r, the creation of obj under key, from ctx.
func limitCreate(ctx context.Context, r record, key string, obj runtime.Object) (record, error) {
	f, ok := ctx.Value(countLimitKey{}).(CountLimitFunc)
	if !ok {
		return r, nil
	}
	limit, err := f(ctx, obj)
	if err != nil || limit <= 0 {
		return r, err
	}
	r.limit = newCountLimit(key, limit)
	return r, nil
}

// CountLimitError is a create refused by WithCountLimit.
type CountLimitError struct {
	// Limit is the limit the create ran with.
	Limit int64
}

func (e *CountLimitError) Error() string {
	return fmt.Sprintf("the namespace holds %d objects of this resource, the most allowed", e.Limit)
}

// countLimit is a record's limit and the key range of the objects it counts: those of its
// resource in its namespace, the keys that share its own up to the last "/".
type countLimit struct {
	limit  int64
	lo, hi string
}

// group is what no two limited creates of one batch may share: the second could lose to a
// row that the batch's rollback then removes, and retrying them together would repeat that.
func (l *countLimit) group() string { return "\x01" + l.lo }

func newCountLimit(key string, limit int64) *countLimit {
	lo := key[:strings.LastIndex(key, "/")+1]
	// "0" follows "/" in byte order (the key column's collation is C): [lo, hi) is every key
	// that starts with lo.
	return &countLimit{limit: limit, lo: lo, hi: lo[:len(lo)-1] + "0"}
}
