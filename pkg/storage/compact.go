package storage

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/klog/v2"
)

// compactBatch bounds how many log rows one DELETE removes, so that no single statement holds
// locks or WAL for long.
const compactBatch = 10000

// compactLoop periodically drops change-log history older than the compaction window.
func (b *Backend) compactLoop(ctx context.Context) {
	t := time.NewTicker(b.opts.CompactionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.compactOnce(ctx); err != nil && ctx.Err() == nil {
				klog.Warningf("postgresql storage compaction: %v", err)
			}
		}
	}
}

// compactOnce compacts to the newest change committed before the window. Several replicas
// may run it at once: the published RV only moves forward and the DELETEs are idempotent.
func (b *Backend) compactOnce(ctx context.Context) error {
	var target *int64
	err := b.pool.QueryRow(ctx, `SELECT max(rv) FROM changes WHERE committed_at < now() - make_interval(secs => $1)`,
		b.opts.CompactionWindow.Seconds()).Scan(&target)
	if err != nil || target == nil {
		return err
	}
	return b.compact(ctx, *target)
}

// compact publishes rv as the oldest readable RV, then deletes the log rows before it. The
// row at rv itself stays, so that a watch from rv-1 still works, as with etcd. Readers read
// compaction.rv in the same snapshot as the log, so they never see half of a compaction.
func (b *Backend) compact(ctx context.Context, rv int64) error {
	if _, err := b.pool.Exec(ctx, `UPDATE compaction SET rv = greatest(rv, $1)`, rv); err != nil {
		return err
	}
	for {
		tag, err := b.pool.Exec(ctx, `DELETE FROM changes WHERE rv IN (SELECT rv FROM changes WHERE rv < $1 ORDER BY rv LIMIT $2)`, rv, compactBatch)
		if err != nil {
			return err
		}
		if tag.RowsAffected() < compactBatch {
			return nil
		}
	}
}

// ttlLoop deletes objects written with a TTL once it expires. The deletes are ordinary
// compare-and-swap deletes, so watchers see them and replicas racing for one key are harmless.
func (b *Backend) ttlLoop(ctx context.Context) {
	t := time.NewTicker(b.opts.TTLInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.expireOnce(ctx); err != nil && ctx.Err() == nil {
				klog.V(2).Infof("postgresql storage TTL sweep: %v", err)
			}
		}
	}
}

func (b *Backend) expireOnce(ctx context.Context) error {
	rows, err := b.pool.Query(ctx, `SELECT key, mod_rv FROM objects WHERE expires_at <= now() ORDER BY expires_at LIMIT 100`)
	if err != nil {
		return err
	}
	type due struct {
		key string
		rv  int64
	}
	expired, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		return d, r.Scan(&d.key, &d.rv)
	})
	if err != nil {
		return err
	}
	for _, d := range expired {
		if _, _, _, err := b.delete(ctx, d.key, d.rv, nil, ""); err != nil {
			return err
		}
	}
	return nil
}
