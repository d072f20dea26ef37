package storage

import "context"

// FeedLag is how many resourceVersions the database is ahead of what this process's watch feed
// has dispatched: 0 when watches are current, growing when the feed falls behind the writers.
func (b *Backend) FeedLag(ctx context.Context) (int64, error) {
	mark := b.feed.mark()
	var current int64
	if err := b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
		return 0, err
	}
	b.feed.check(mark, current)
	b.feed.mu.Lock()
	dispatched := b.feed.rv
	b.feed.mu.Unlock()
	if lag := current - dispatched; lag > 0 {
		return lag, nil
	}
	return 0, nil
}
