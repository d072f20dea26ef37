package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// rangeQuery selects keys in [start, end) (or only start when exact) as of rv (0: latest).
type rangeQuery struct {
	start          string
	startExclusive bool
	end            string // "" for no upper bound
	exact          bool
	rv             int64
	limit          int64 // rows to return, 0 for all
	withCount      bool  // also count every matching key from start, ignoring limit, up to maxCount
	filters        filters
}

// filters are pushed-down pre-filters; every row is still matched in Go afterwards.
type filters struct {
	namespace *string
	labels    labels.Requirements
}

func filtersFor(p apistorage.SelectionPredicate) filters {
	var f filters
	if p.Field != nil {
		if ns, ok := p.Field.RequiresExactMatch("metadata.namespace"); ok {
			f.namespace = &ns
		}
	}
	if p.Label != nil {
		if reqs, ok := p.Label.Requirements(); ok {
			f.labels = reqs
		}
	}
	return f
}

// maxCount is the most keys a paged list counts for its remainingItemCount. The API leaves
// the field unset when the server does not know it ("clients should not rely on
// remainingItemCount to be set or to be exact"); it is exact whenever it is set.
var maxCount int64 = 1000

// rangeResult is what one rangeQuery returns: rows in key order plus the snapshot's header.
type rangeResult struct {
	rows        []rawRow
	currentRV   int64 // global RV of the snapshot
	compactedRV int64
	count       int64
}

type rawRow struct {
	key   string
	value []byte
	rv    int64
}

type argList []any

func (a *argList) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// keyRange renders the key bounds of the query.
func (q *rangeQuery) keyRange(args *argList) string {
	switch {
	case q.exact:
		return "key = " + args.add(q.start)
	case q.end == "" && q.startExclusive:
		return "key > " + args.add(q.start)
	case q.end == "":
		return "key >= " + args.add(q.start)
	case q.startExclusive:
		return "key > " + args.add(q.start) + " AND key < " + args.add(q.end)
	default:
		return "key >= " + args.add(q.start) + " AND key < " + args.add(q.end)
	}
}

// labelCondition translates one requirement into a predicate on a jsonb column of labels.
// Operators without a jsonb form (Gt, Lt) are left to the Go matcher.
func labelCondition(args *argList, col string, r labels.Requirement) string {
	contains := func() string {
		var ors []string
		for _, v := range r.Values().List() {
			doc, _ := json.Marshal(map[string]string{r.Key(): v})
			ors = append(ors, col+" @> "+args.add(string(doc))+"::jsonb")
		}
		if len(ors) == 0 {
			return "false"
		}
		return "(" + strings.Join(ors, " OR ") + ")"
	}
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
		return contains()
	case selection.NotEquals, selection.NotIn:
		return "NOT " + contains()
	case selection.Exists:
		return col + " ? " + args.add(r.Key())
	case selection.DoesNotExist:
		return "NOT (" + col + " ? " + args.add(r.Key()) + ")"
	}
	return ""
}

// inObjectLabels reports whether object_labels answers the requirement: a label exists, or
// has one of some values.
func inObjectLabels(r labels.Requirement) bool {
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In, selection.Exists:
		return true
	}
	return false
}

// labeledKeys renders the keys in [keyRange] of the objects that meet a requirement
// inObjectLabels accepts, from object_labels' primary key alone.
func labeledKeys(args *argList, keyRange string, r labels.Requirement) string {
	keys := `SELECT key FROM object_labels WHERE lkey = ` + args.add(r.Key())
	// One value is an equality, which keeps the keys in index order: a page then walks
	// object_labels and objects side by side (a merge join) and stops at its end.
	switch values := r.Values().List(); {
	case r.Operator() == selection.Exists:
	case len(values) == 1:
		keys += ` AND lvalue = ` + args.add(values[0])
	default:
		keys += ` AND lvalue = ANY(` + args.add(values) + `::text[])`
	}
	return keys + ` AND ` + keyRange
}

// sql renders the query. Reads at the latest RV use objects alone. Reads at an older RV r
// combine objects unchanged since r with, for keys changed after r, the prev_* columns of
// their first change after r (unless that change created the key). Both branches are
// disjoint: a key in objects with mod_rv > r always has a change after r.
func (q *rangeQuery) sql() (string, []any) {
	var args argList
	limit := ""
	if q.limit > 0 {
		limit = " ORDER BY key LIMIT " + args.add(q.limit)
	}
	keyRange := q.keyRange(&args)
	objectsWhere := keyRange + ` AND ` + q.objectFilters(&args, keyRange)
	var inner, count string
	// Counting every key of a large range reads every index entry and, for the pages that
	// writes left not all-visible, the heap too: at 100,000 objects after a burst of updates,
	// half a second per page. Past maxCount the count is unknown (-1).
	var current, countCap string
	if q.withCount {
		countCap = args.add(maxCount + 1)
		current = `(SELECT count(*) FROM (SELECT 1 FROM objects WHERE ` + objectsWhere + ` LIMIT ` + countCap + `) c)`
	}
	if q.rv == 0 {
		inner = `SELECT key, value, mod_rv FROM objects WHERE ` + objectsWhere
		count = `SELECT CASE WHEN n >= ` + countCap + ` THEN -1 ELSE n END FROM ` + current + ` AS c(n)`
	} else {
		rv := args.add(q.rv)
		changedAfter := `SELECT DISTINCT ON (key) key, created, prev_value, prev_rv, prev_labels, prev_namespace
			FROM changes WHERE rv > ` + rv + ` AND ` + q.keyRange(&args) + `
			ORDER BY key, rv`
		existedBefore := `NOT created AND ` + q.prevFilters(&args)
		// Each branch takes its own first rows in key order, so that a page reads the key
		// index up to the page's end instead of every object of the range.
		inner = `(SELECT key, value, mod_rv FROM objects WHERE mod_rv <= ` + rv + ` AND ` + objectsWhere + limit + `)
		UNION ALL
		(SELECT key, prev_value, prev_rv FROM (` + changedAfter + `) h WHERE ` + existedBefore + limit + `)`
		// The objects as of rv, counted without reading every row for its mod_rv: all objects
		// of the range now, less those written after rv (they all have a change after rv),
		// plus those whose first change after rv found them existing.
		if q.withCount {
			count = `SELECT CASE WHEN n >= ` + countCap + ` THEN -1 ELSE n
			- (SELECT count(*) FROM objects WHERE mod_rv > ` + rv + ` AND ` + objectsWhere + ` AND key IN (
				SELECT key FROM changes WHERE rv > ` + rv + ` AND ` + q.keyRange(&args) + `))
			+ (SELECT count(*) FROM (` + changedAfter + `) h WHERE ` + existedBefore + `) END FROM ` + current + ` AS c(n)`
		}
	}
	if !q.withCount {
		count = "SELECT 0::bigint"
	}
	return `SELECT (SELECT rv FROM state), (SELECT rv FROM compaction), (` + count + `), r.key, r.value, r.mod_rv
FROM (SELECT) one
LEFT JOIN LATERAL (SELECT * FROM (` + inner + `) u` + limit + `) r ON true
ORDER BY r.key`, args
}

// objectFilters renders the pushed-down filters against objects in keyRange (the rendered
// key bounds, whose parameters it reuses); label requirements that object_labels can answer
// are answered from there.
func (q *rangeQuery) objectFilters(args *argList, keyRange string) string {
	return q.filterOnly(args, "namespace", "labels", keyRange)
}

// prevFilters renders the pushed-down filters against the previous state a change records.
func (q *rangeQuery) prevFilters(args *argList) string {
	return q.filterOnly(args, "prev_namespace", "prev_labels", "")
}

// filterOnly renders the pushed-down filters against the given columns, taking what it can
// from object_labels within keyRange unless keyRange is "".
func (q *rangeQuery) filterOnly(args *argList, nsCol, labelsCol, keyRange string) string {
	c := []string{"true"}
	switch ns := q.filters.namespace; {
	case ns == nil:
	case !isText(*ns):
		// PostgreSQL refuses such a parameter with an error (a 500), and no namespace, being
		// text, equals it.
		c = append(c, "false")
	default:
		c = append(c, nsCol+" = "+args.add(*ns))
	}
	for _, r := range q.filters.labels {
		if keyRange != "" && inObjectLabels(r) {
			c = append(c, "key IN ("+labeledKeys(args, keyRange, r)+")")
			continue
		}
		if cond := labelCondition(args, labelsCol, r); cond != "" {
			c = append(c, cond)
		}
	}
	return strings.Join(c, " AND ")
}

func (b *Backend) rangeRead(ctx context.Context, q rangeQuery) (*rangeResult, error) {
	stmt, args := q.sql()
	if len(q.filters.labels) > 0 {
		// Planned for its own values every time. pgx prepares and caches statements, and after
		// five executions PostgreSQL may switch a prepared statement to a generic plan, which
		// cannot see whether a label value is rare (start from object_labels) or common (walk
		// the objects in key order): with the GIN index object_labels replaced, the generic
		// plan intersected the label index with a bitmap of every key in the range, 18 ms of
		// a 34 ms query at 100,000 objects.
		args = append([]any{pgx.QueryExecModeDescribeExec}, args...)
	}
	rows, err := b.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &rangeResult{}
	// Declared once, with the argument list, so that scanning a row allocates nothing but its
	// key and value: a label-selected list reads a thousand rows. Each value scanned is a new
	// slice (pgx copies bytea out of its read buffer).
	var (
		key   pgtype.Text
		rv    pgtype.Int8
		value []byte
	)
	dest := []any{&res.currentRV, &res.compactedRV, &res.count, &key, &value, &rv}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if key.Valid {
			res.rows = append(res.rows, rawRow{key: key.String, value: value, rv: rv.Int64})
		}
	}
	return res, rows.Err()
}

// labelKeysSQL renders the keys in [start, end) of the objects whose labels meet every
// requirement that object_labels can answer, at most rowCap of them in key order, with the
// snapshot's RV. At least one requirement must be one it answers.
func labelKeysSQL(start, end string, reqs labels.Requirements, rowCap int64) (string, []any) {
	var args argList
	keyRange := (&rangeQuery{start: start, end: end}).keyRange(&args)
	var keys string
	for _, r := range reqs {
		switch {
		case !inObjectLabels(r):
		case keys == "":
			keys = labeledKeys(&args, keyRange, r)
		default:
			keys += ` AND key IN (` + labeledKeys(&args, keyRange, r) + `)`
		}
	}
	return `SELECT (SELECT rv FROM state), k.key
FROM (SELECT) one
LEFT JOIN LATERAL (` + keys + ` LIMIT ` + args.add(rowCap) + `) k ON true
ORDER BY k.key`, args
}

// labelKeys runs labelKeysSQL.
func (b *Backend) labelKeys(ctx context.Context, start, end string, reqs labels.Requirements, rowCap int64) ([]string, int64, error) {
	stmt, args := labelKeysSQL(start, end, reqs, rowCap)
	// A prepared statement, unlike rangeRead's label queries: whatever the values, the plan
	// is a scan of object_labels' primary key.
	rows, err := b.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var (
		keys []string
		rv   int64
		key  pgtype.Text
	)
	dest := []any{&rv, &key} // once, not per row (see rangeRead)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		if key.Valid {
			keys = append(keys, key.String)
		}
	}
	return keys, rv, rows.Err()
}

// isText reports whether PostgreSQL text can hold s: neither NUL nor invalid UTF-8.
func isText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// prefixEnd returns the smallest key greater than every key starting with prefix.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0x7f {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
