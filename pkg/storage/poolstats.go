package storage

import "github.com/jackc/pgx/v5/pgxpool"

// PoolStat is the state of one of the backend's own connection pools.
type PoolStat struct {
	// Role is what the pool's connection serves: "committer" or "feed".
	Role string
	*pgxpool.Stat
}

// OwnPoolStats reports the pools the backend opened beside the caller's: a committer or feed
// that waits for its connection (it is being replaced after a failure) shows there, not in
// the request pool's figures.
func (b *Backend) OwnPoolStats() []PoolStat {
	return []PoolStat{{"committer", b.writePool.Stat()}, {"feed", b.feedPool.Stat()}}
}
