package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// FeedLag is how many resourceVersions the database is ahead of what this process's watch feed
// has dispatched: 0 when watches are current, growing when the feed falls behind the writers.
func (b *Backend) FeedLag(ctx context.Context) (int64, error) {
	mark := b.feed.mark()
	var current int64
	if err := b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
		return 0, err
	}
	b.feed.check(mark, current)
	if lag := current - b.dispatched(); lag > 0 {
		return lag, nil
	}
	return 0, nil
}

// FeedDelay is how long ago the oldest change this process's watch feed has not dispatched yet
// was written (by the database's clock): 0 when watches are current. Unlike FeedLag it does
// not grow with the write rate, only with the time watchers wait.
func (b *Backend) FeedDelay(ctx context.Context) (time.Duration, error) {
	var seconds float64
	err := b.pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - committed_at)::float8 FROM changes WHERE rv > $1 ORDER BY rv LIMIT 1`,
		b.dispatched()).Scan(&seconds)
	if errors.Is(err, pgx.ErrNoRows) || seconds < 0 {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// dispatched is the resourceVersion up to which the feed has dispatched every change.
func (b *Backend) dispatched() int64 {
	b.feed.mu.Lock()
	defer b.feed.mu.Unlock()
	return b.feed.rv
}
