package storage

import (
	"context"
	"errors"
	"time"
)

// Results of a write transaction, as CommitObserver is told them.
const (
	// CommitCommitted: the transaction committed (some of its writes may have been refused as
	// conflicts, which is an answer, not a failure).
	CommitCommitted = "committed"
	// CommitRetried: the transaction was rolled back because a create lost its key to a
	// concurrent writer, and the batch's other writes run again.
	CommitRetried = "retried"
	// CommitFailed: the transaction failed; its writes' callers get the error.
	CommitFailed = "failed"
)

// CommitObserver is told of every write transaction of the committer: how long it took from
// BEGIN to the end of its COMMIT (with synchronous replication, the standby's confirmation
// included) or its failure, and its result (CommitCommitted, CommitRetried, CommitFailed).
// It runs on the committer's path and must return at once.
type CommitObserver func(d time.Duration, result string)

// SetCommitObserver makes the backend tell observe of each write transaction from now on.
func (b *Backend) SetCommitObserver(observe CommitObserver) {
	b.commitObserver.Store(&observe)
}

func (b *Backend) observeCommit(d time.Duration, err error) {
	observe := b.commitObserver.Load()
	if observe == nil || *observe == nil {
		return
	}
	result := CommitCommitted
	switch {
	case errors.Is(err, errRetry):
		result = CommitRetried
	case err != nil:
		result = CommitFailed
	}
	(*observe)(d, result)
}

// StandbySyncStates are the values Standbys reports counts of: PostgreSQL's
// pg_stat_replication.sync_state, and "unknown" for a standby whose state the database role
// may not read (only superusers and members of pg_read_all_stats, or pg_monitor, see it).
var StandbySyncStates = []string{"sync", "quorum", "potential", "async", "unknown"}

// Standbys counts the WAL senders of the primary the backend writes to, by sync_state (one of
// StandbySyncStates): the streaming standbys connected to it (and any other replication
// client, such as pg_basebackup, while it runs). Every state of StandbySyncStates is in the
// map, with 0 when none is in it.
func (b *Backend) Standbys(ctx context.Context) (map[string]int, error) {
	rows, err := b.pool.Query(ctx, `SELECT coalesce(sync_state, 'unknown'), count(*) FROM pg_stat_replication GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := make(map[string]int, len(StandbySyncStates))
	for _, s := range StandbySyncStates {
		counts[s] = 0
	}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		if _, known := counts[state]; !known {
			state = "unknown"
		}
		counts[state] += n
	}
	return counts, rows.Err()
}
