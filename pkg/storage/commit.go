package storage

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Writes are group-committed: each backend runs one committer that takes whatever writes are
// waiting (up to maxBatch, one per key) and applies them in one transaction. The transaction
// takes one RV per write from the counter in a single statement and commits once, so concurrent
// writers share the counter lock and the WAL flush instead of queueing for one each. RV order
// is still commit order (README.md); within a batch it is queue order. One committer per
// process batches best: a second one only competes with the first for the counter lock.
const (
	maxBatch = 64
	// batchTimeout bounds one batch transaction; callers' contexts only bound their wait.
	batchTimeout = 30 * time.Second
)

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

type writeOp struct {
	kind     opKind
	rec      record // only rec.key for deletes
	expected int64  // the mod RV an update or delete requires
	// audit, when set, is the write's entry in the audit trail (AuditTrail), inserted by the
	// write's own statement into the namespace auditNamespace.
	audit          []byte
	auditNamespace string
	done           chan writeResult
}

// writeResult is the outcome of one write: its RV, or a conflict with the current state
// (cur is nil when the key is missing), or errKeyExists for a create, or an error.
type writeResult struct {
	rv       int64
	conflict bool
	cur      *rawObject
	err      error
}

var (
	errKeyExists = errors.New("key exists")
	errClosed    = errors.New("postgresql storage backend is closed")
	// errRetry rolls back a batch in which a create lost a race; it never leaves tryBatch.
	errRetry = errors.New("retry batch")
)

// The per-write statements. Each takes its RV as the counter's value minus its offset from
// the end of the batch: the batch's own counter update is visible to its later statements.
// The label index (object_labels) is the database's business: triggers on objects keep it
// exact whichever release writes (migration 000006). Each also inserts the write's audit
// entry, when it has one, only if the write happened: from the CTE that made it.
const (
	// bumpSQL takes the batch's RVs unless the schema requires a newer writer than this
	// release ($2, schemaVersion); then it takes none and the batch rolls back. The check is
	// on the counter row that every write locks, so a migration that raises min_writer stops
	// this release's writes from its commit on, without a gap.
	bumpSQL = `UPDATE state SET rv = rv + CASE WHEN min_writer <= $2 THEN $1 ELSE 0 END RETURNING rv, min_writer`

	createSQL = `
WITH s AS (SELECT rv - $8::bigint AS rv FROM state),
i AS (
	INSERT INTO objects (key, resource, namespace, name, labels, value, create_rv, mod_rv, expires_at, unique_key)
	SELECT $1, $2, $3, $4, $5, $6, s.rv, s.rv, CASE WHEN $7::bigint > 0 THEN now() + $7 * interval '1 second' END, $9 FROM s
	WHERE $10::bigint IS NULL OR (SELECT count(*) FROM objects WHERE key >= $11 AND key < $12) < $10
	ON CONFLICT DO NOTHING
	RETURNING mod_rv),
l AS (INSERT INTO changes (rv, key, created, deleted, value) SELECT i.mod_rv, $1, true, false, $6 FROM i),
a AS (INSERT INTO audit_log (namespace, rv, entry) SELECT $3, i.mod_rv, $13::bytea FROM i WHERE $13::bytea IS NOT NULL)
SELECT mod_rv FROM i`

	updateSQL = `
WITH s AS (SELECT rv - $7::bigint AS rv FROM state),
old AS (SELECT value, labels, namespace, mod_rv FROM objects WHERE key = $1),
u AS (
	UPDATE objects o SET namespace = $2, name = $3, labels = $4, value = $5, mod_rv = s.rv,
		expires_at = CASE WHEN $6::bigint > 0 THEN now() + $6 * interval '1 second' END
	FROM s WHERE o.key = $1
	RETURNING o.mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, value, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, false, $5, old.value, old.labels, old.namespace, old.mod_rv FROM s, old),
a AS (INSERT INTO audit_log (namespace, rv, entry) SELECT $2, u.mod_rv, $8::bytea FROM u WHERE $8::bytea IS NOT NULL)
SELECT mod_rv FROM u`

	deleteSQL = `
WITH s AS (SELECT rv - $2::bigint AS rv FROM state),
d AS (DELETE FROM objects WHERE key = $1 RETURNING value, labels, namespace, mod_rv),
l AS (
	INSERT INTO changes (rv, key, created, deleted, prev_value, prev_labels, prev_namespace, prev_rv)
	SELECT s.rv, $1, false, true, d.value, d.labels, d.namespace, d.mod_rv FROM s, d),
a AS (INSERT INTO audit_log (namespace, rv, entry) SELECT $3, s.rv, $4::bytea FROM s, d WHERE $4::bytea IS NOT NULL)
SELECT s.rv FROM s, d`

	// lockSQL locks the rows that updates and deletes are about to replace, in key order so
	// that batches of different processes cannot deadlock, and returns what is there now.
	lockSQL = `SELECT key, value, mod_rv FROM objects WHERE key = ANY($1) ORDER BY key FOR UPDATE`
)

// submit queues a write and waits for its outcome. A caller that gives up (ctx) does not
// learn whether the write committed, as with etcd.
func (b *Backend) submit(ctx context.Context, op *writeOp) writeResult {
	op.done = make(chan writeResult, 1)
	select {
	case b.writes <- op:
	case <-ctx.Done():
		return writeResult{err: ctx.Err()}
	case <-b.closed:
		return writeResult{err: errClosed}
	}
	select {
	case r := <-op.done:
		return r
	case <-ctx.Done():
		return writeResult{err: ctx.Err()}
	case <-b.closed:
		return writeResult{err: errClosed}
	}
}

// create inserts a new key and returns its RV, or errKeyExists.
func (b *Backend) create(ctx context.Context, r record, audit []byte) (int64, error) {
	res := b.submit(ctx, &writeOp{kind: opCreate, rec: r, audit: audit})
	return res.rv, res.err
}

// update replaces key if its mod RV is still expected; otherwise it reports a conflict and
// the current state.
func (b *Backend) update(ctx context.Context, r record, expected int64, audit []byte) (int64, bool, *rawObject, error) {
	res := b.submit(ctx, &writeOp{kind: opUpdate, rec: r, expected: expected, audit: audit})
	return res.rv, res.conflict, res.cur, res.err
}

// delete removes key if its mod RV is still expected, like update.
// auditNamespace is the namespace of the deleted object, where its audit entry goes.
func (b *Backend) delete(ctx context.Context, key string, expected int64, audit []byte, auditNamespace string) (int64, bool, *rawObject, error) {
	res := b.submit(ctx, &writeOp{kind: opDelete, rec: record{key: key}, expected: expected, audit: audit, auditNamespace: auditNamespace})
	return res.rv, res.conflict, res.cur, res.err
}

// commitLoop collects batches: it waits for one write, then takes whatever else is queued.
// A second write to a key already in the batch waits for the next one.
func (b *Backend) commitLoop(ctx context.Context) {
	var carry []*writeOp
	for {
		var batch, next []*writeOp
		// One write per key, per unique key and per count limit's group in a batch: two creates
		// claiming one unique key (or the last place under a limit) in the same transaction would
		// make the second lose to a row that the rollback then removes, and retrying them
		// together would repeat that forever.
		keys := map[string]bool{}
		add := func(op *writeOp) {
			ukey, group := "", ""
			if op.rec.uniqueKey != nil {
				ukey = "\x00" + op.rec.resource + "\x00" + op.rec.namespace + "\x00" + *op.rec.uniqueKey
			}
			if op.rec.limit != nil {
				group = op.rec.limit.group()
			}
			if keys[op.rec.key] || (ukey != "" && keys[ukey]) || (group != "" && keys[group]) || len(batch) == maxBatch {
				next = append(next, op)
				return
			}
			keys[op.rec.key] = true
			if ukey != "" {
				keys[ukey] = true
			}
			if group != "" {
				keys[group] = true
			}
			batch = append(batch, op)
		}
		for _, op := range carry {
			add(op)
		}
		if len(batch) == 0 {
			select {
			case op := <-b.writes:
				add(op)
			case <-ctx.Done():
				return
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case op := <-b.writes:
				add(op)
			default:
				break drain
			}
		}
		carry = next
		b.commitBatch(ctx, batch)
	}
}

func (b *Backend) commitBatch(ctx context.Context, ops []*writeOp) {
	for len(ops) > 0 {
		retry, err := b.tryBatch(ctx, ops)
		b.noteRefusal(err)
		if err != nil {
			for _, op := range ops {
				op.done <- writeResult{err: err}
			}
			return
		}
		ops = retry
	}
}

// noteRefusal remembers whether the schema refused this release's last batch, for
// ReadinessCheck: min_writer only goes up, so a refused replica stays refused until it is
// replaced, and it should leave the rotation rather than answer every write with 503.
func (b *Backend) noteRefusal(err error) {
	var tooOld *WriterTooOldError
	if errors.As(err, &tooOld) {
		b.refused.Store(tooOld)
	} else if err == nil {
		b.refused.Store(nil)
	}
}

// tryBatch applies ops in one transaction and delivers their results. When a create finds
// its key taken by a concurrent writer after the RVs were assigned, it reports that create,
// rolls everything back and returns the other ops to run again.
func (b *Backend) tryBatch(ctx context.Context, ops []*writeOp) (retry []*writeOp, err error) {
	ctx, cancel := context.WithTimeout(ctx, batchTimeout)
	defer cancel()
	results := make([]writeResult, len(ops))
	var exists []int
	var last int64
	started := time.Now()
	err = pgx.BeginFunc(ctx, b.writePool, func(tx pgx.Tx) error {
		cur, err := lockRows(ctx, tx, ops)
		if err != nil {
			return err
		}
		var writes []int
		for i, op := range ops {
			if op.kind == opCreate {
				writes = append(writes, i)
				continue
			}
			if o := cur[op.rec.key]; o == nil || o.rv != op.expected {
				results[i] = writeResult{conflict: true, cur: o}
				continue
			}
			writes = append(writes, i)
		}
		if len(writes) == 0 {
			return nil
		}
		if err := runHook(b.beforeRV); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		batch.Queue(bumpSQL, len(writes), schemaVersion)
		for j, i := range writes {
			r, offset := ops[i].rec, len(writes)-1-j
			switch ops[i].kind {
			case opCreate:
				var limit *int64
				var lo, hi string
				if r.limit != nil {
					limit, lo, hi = &r.limit.limit, r.limit.lo, r.limit.hi
				}
				batch.Queue(createSQL, r.key, r.resource, r.namespace, r.name, labelsJSON(r.labels), r.value, r.ttl, offset, r.uniqueKey,
					limit, lo, hi, ops[i].audit)
			case opUpdate:
				batch.Queue(updateSQL, r.key, r.namespace, r.name, labelsJSON(r.labels), r.value, r.ttl, offset, ops[i].audit)
			case opDelete:
				batch.Queue(deleteSQL, r.key, offset, ops[i].auditNamespace, ops[i].audit)
			}
		}
		batch.Queue(`SELECT pg_notify('` + notifyChannel + `', '')`)
		br := tx.SendBatch(ctx, batch)
		var minWriter int
		if err := br.QueryRow().Scan(&last, &minWriter); err != nil {
			br.Close()
			return err
		}
		if minWriter > schemaVersion {
			// The statements queued after the bump ran on the old counter; the rollback
			// undoes them, and what they reported is of no interest.
			br.Close()
			return &WriterTooOldError{Required: minWriter, Have: schemaVersion}
		}
		for _, i := range writes {
			err := br.QueryRow().Scan(&results[i].rv)
			switch {
			case errors.Is(err, pgx.ErrNoRows) && ops[i].kind == opCreate:
				exists = append(exists, i)
			case err != nil:
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if len(exists) > 0 {
			return errRetry
		}
		return runHook(b.afterRV)
	})
	b.observeCommit(time.Since(started), err)
	switch {
	case errors.Is(err, errRetry):
		skip := map[int]bool{}
		for _, i := range exists {
			// A create that inserted nothing lost its key or its unique key; if the winner is
			// gone again by now, it simply runs again with the others.
			lost := b.whyCreateLost(ctx, ops[i].rec)
			if lost == nil {
				continue
			}
			ops[i].done <- writeResult{err: lost}
			skip[i] = true
		}
		for i, op := range ops {
			if !skip[i] {
				retry = append(retry, op)
			}
		}
		return retry, nil
	case err != nil:
		return nil, err
	}
	// The acknowledgement waits for the feed off the committer's path, so the next batch
	// starts at once. A feed that cannot reach PostgreSQL holds acknowledgements up for 1s at
	// most.
	go func() {
		if last > 0 {
			b.feed.waitFor(last, time.Second)
		}
		for i, op := range ops {
			op.done <- results[i]
		}
	}()
	return nil, nil
}

// lockRows locks the current rows of the batch's updates and deletes.
func lockRows(ctx context.Context, tx pgx.Tx, ops []*writeOp) (map[string]*rawObject, error) {
	var keys []string
	for _, op := range ops {
		if op.kind != opCreate {
			keys = append(keys, op.rec.key)
		}
	}
	cur := map[string]*rawObject{}
	if len(keys) == 0 {
		return cur, nil
	}
	rows, err := tx.Query(ctx, lockSQL, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		o := &rawObject{}
		if err := rows.Scan(&key, &o.value, &o.rv); err != nil {
			return nil, err
		}
		cur[key] = o
	}
	return cur, rows.Err()
}

func runHook(h func() error) error {
	if h == nil {
		return nil
	}
	return h()
}
