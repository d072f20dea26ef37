package storage

import (
	"context"
	"fmt"
	"strings"
)

// countLimitKey is the context key of WithCountLimit.
type countLimitKey struct{}

// WithCountLimit returns ctx with a limit for the Create that runs with it: the object is
// created only if its namespace holds fewer than limit objects of its resource, otherwise the
// Create fails with a *CountLimitError. The count is taken in the transaction that inserts the
// object, after the write counter's row lock that every write of every replica takes first, so
// two concurrent creates cannot both take the last place.
func WithCountLimit(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, countLimitKey{}, limit)
}

func countLimitFrom(ctx context.Context) (int64, bool) {
	l, ok := ctx.Value(countLimitKey{}).(int64)
	return l, ok
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
