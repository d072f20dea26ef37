package storage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	apistorage "k8s.io/apiserver/pkg/storage"
)

// auditStorage serves the audit trail (AuditTrail) from audit_log: read-only (the writes
// that are audited insert the rows), but for deletes, with which a namespace's trail goes with
// it. Keys are the registry's, <resourcePrefix>/<namespace>/<name>; an entry's name is its
// RV, zero-padded to 20 digits, and its resourceVersion that RV. No watch cache: lists read
// the table (by namespace and RV, its primary key), watches follow it as the feed advances.
type auditStorage struct {
	b              *Backend
	trail          *AuditTrail
	resourcePrefix string // "/<group>/<resource>"
	groupResource  schema.GroupResource
	versioner      apistorage.Versioner
	newFunc        func() runtime.Object
}

var _ apistorage.Interface = &auditStorage{}

// auditStorage returns the storage of the audit trail's resource, which the decorators hand
// it instead of a Store; false for every other resource.
func (b *Backend) auditStorage(resourcePrefix string, gr schema.GroupResource, newFunc func() runtime.Object) (*auditStorage, bool) {
	t := b.auditTrail.Load()
	if t == nil || gr != t.Resource {
		return nil, false
	}
	return &auditStorage{b: b, trail: t, resourcePrefix: strings.TrimSuffix(resourcePrefix, "/"), groupResource: gr,
		versioner: apistorage.APIObjectVersioner{}, newFunc: newFunc}, true
}

// auditNameDigits is the length of an entry's name: its RV in 20 digits.
const auditNameDigits = 20

// AuditEntryName is the name of the entry of the write at rv.
func AuditEntryName(rv int64) string { return fmt.Sprintf("%0*d", auditNameDigits, rv) }

// parseKey splits a key into namespace and RV (0 when the key names no entry, or a namespace
// or the whole resource when prefix is set).
func (a *auditStorage) parseKey(key string) (namespace string, rv int64, err error) {
	rest, ok := strings.CutPrefix(key, a.resourcePrefix)
	if !ok {
		return "", 0, fmt.Errorf("key %q is not under %q", key, a.resourcePrefix)
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "":
		return "", 0, nil
	case len(parts) == 1:
		return parts[0], 0, nil
	case len(parts) == 2:
		rv, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil || len(parts[1]) != auditNameDigits || rv <= 0 {
			return parts[0], -1, nil // a name no entry has
		}
		return parts[0], rv, nil
	}
	return "", 0, fmt.Errorf("invalid key %q", key)
}

func (a *auditStorage) decodeInto(row AuditRow, out runtime.Object) error {
	obj, err := a.trail.Decode(row)
	if err != nil {
		return apistorage.NewInternalError(err.Error())
	}
	if err := a.versioner.UpdateObject(obj, uint64(row.RV)); err != nil {
		return err
	}
	outVal, err := conversion.EnforcePtr(out)
	if err != nil {
		return err
	}
	inVal, err := conversion.EnforcePtr(obj)
	if err != nil {
		return err
	}
	if outVal.Type() != inVal.Type() {
		return fmt.Errorf("audit entry of type %s decoded into %s", inVal.Type(), outVal.Type())
	}
	outVal.Set(inVal)
	return nil
}

// Versioner implements storage.Interface.
func (a *auditStorage) Versioner() apistorage.Versioner { return a.versioner }

// Create implements storage.Interface: entries are written with the writes they describe.
func (a *auditStorage) Create(context.Context, string, runtime.Object, runtime.Object, uint64) error {
	return apierrors.NewMethodNotSupported(a.groupResource, "create")
}

// GuaranteedUpdate implements storage.Interface: entries do not change.
func (a *auditStorage) GuaranteedUpdate(context.Context, string, runtime.Object, bool, *apistorage.Preconditions,
	apistorage.UpdateFunc, runtime.Object) error {
	return apierrors.NewMethodNotSupported(a.groupResource, "update")
}

// Get implements storage.Interface.
func (a *auditStorage) Get(ctx context.Context, key string, opts apistorage.GetOptions, out runtime.Object) error {
	ns, rv, err := a.parseKey(key)
	if err != nil {
		return err
	}
	row, err := a.row(ctx, ns, rv)
	if err != nil {
		return err
	}
	if row == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return apistorage.NewKeyNotFoundError(key, 0)
	}
	return a.decodeInto(*row, out)
}

func (a *auditStorage) row(ctx context.Context, ns string, rv int64) (*AuditRow, error) {
	if rv <= 0 {
		return nil, nil
	}
	row := AuditRow{Namespace: ns, RV: rv}
	err := a.b.pool.QueryRow(ctx, `SELECT committed_at, entry FROM audit_log WHERE namespace = $1 AND rv = $2`, ns, rv).
		Scan(&row.CommittedAt, &row.Entry)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &row, err
}

// Delete implements storage.Interface.
func (a *auditStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *apistorage.Preconditions,
	validateDeletion apistorage.ValidateObjectFunc, _ runtime.Object) error {
	ns, rv, err := a.parseKey(key)
	if err != nil {
		return err
	}
	row, err := a.row(ctx, ns, rv)
	if err != nil {
		return err
	}
	if row == nil {
		return apistorage.NewKeyNotFoundError(key, 0)
	}
	if err := a.decodeInto(*row, out); err != nil {
		return err
	}
	if preconditions != nil {
		if err := preconditions.Check(key, out); err != nil {
			return err
		}
	}
	if err := validateDeletion(ctx, out); err != nil {
		return err
	}
	_, err = a.b.pool.Exec(ctx, `DELETE FROM audit_log WHERE namespace = $1 AND rv = $2`, ns, rv)
	return err
}

// auditPage is how many rows a list or a watch reads at once.
const auditPage = 500

// GetList implements storage.Interface. Entries never change, so every list reads the latest
// state, whatever resourceVersion it asks for; continue tokens carry the last key read.
func (a *auditStorage) GetList(ctx context.Context, key string, opts apistorage.ListOptions, listObj runtime.Object) error {
	ns, _, err := a.parseKey(key)
	if err != nil {
		return err
	}
	keyPrefix := strings.TrimSuffix(key, "/") + "/"
	v, err := itemsOf(listObj)
	if err != nil {
		return err
	}
	pred := opts.Predicate
	afterNS, afterRV := ns, int64(0)
	if len(pred.Continue) > 0 {
		continueKey, _, err := apistorage.DecodeContinue(pred.Continue, keyPrefix)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if afterNS, afterRV, err = a.parseKey(strings.TrimSuffix(continueKey, "\x00")); err != nil || afterRV < 0 {
			return apierrors.NewBadRequest("invalid continue token")
		}
	}
	var current int64
	if err := a.b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
		return err
	}
	var lastKey string
	hasMore := false
	for {
		rows, err := a.b.pool.Query(ctx, `SELECT namespace, rv, committed_at, entry FROM audit_log
			WHERE ($1 = '' OR namespace = $1) AND (namespace, rv) > ($2, $3) ORDER BY namespace, rv LIMIT $4`,
			ns, afterNS, afterRV, auditPage)
		if err != nil {
			return err
		}
		read, err := pgx.CollectRows(rows, scanAuditRow)
		if err != nil {
			return err
		}
		for _, row := range read {
			if pred.Limit > 0 && int64(v.Len()) >= pred.Limit {
				hasMore = true
				break
			}
			afterNS, afterRV = row.Namespace, row.RV
			lastKey = a.resourcePrefix + "/" + row.Namespace + "/" + AuditEntryName(row.RV)
			obj, err := a.trail.Decode(row)
			if err != nil {
				return apistorage.NewInternalError(err.Error())
			}
			if err := a.versioner.UpdateObject(obj, uint64(row.RV)); err != nil {
				return err
			}
			if matched, err := pred.Matches(obj); err == nil && matched {
				v.Set(reflect.Append(v, reflect.ValueOf(obj).Elem()))
			}
		}
		if hasMore || len(read) < auditPage {
			break
		}
	}
	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	continueValue := ""
	if hasMore {
		if continueValue, err = apistorage.EncodeContinue(lastKey+"\x00", keyPrefix, current); err != nil {
			return err
		}
	}
	return a.versioner.UpdateList(listObj, uint64(current), continueValue, nil)
}

// scanAuditRow reads a row of the columns namespace, rv, committed_at, entry.
func scanAuditRow(r pgx.CollectableRow) (AuditRow, error) {
	var row AuditRow
	return row, r.Scan(&row.Namespace, &row.RV, &row.CommittedAt, &row.Entry)
}

// Count implements storage.Interface.
func (a *auditStorage) Count(key string) (int64, error) {
	ns, _, err := a.parseKey(key)
	if err != nil {
		return 0, err
	}
	var n int64
	if ns == "" {
		// The object count metric asks every minute: the planner's estimate, not a scan of a
		// table of millions of rows.
		err = a.b.pool.QueryRow(context.Background(), `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'audit_log'::regclass`).Scan(&n)
		return n, err
	}
	err = a.b.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE namespace = $1`, ns).Scan(&n)
	return n, err
}

// ReadinessCheck implements storage.Interface.
func (a *auditStorage) ReadinessCheck() error { return a.b.ReadinessCheck() }

// RequestWatchProgress implements storage.Interface; the trail's watches send bookmarks of
// their own.
func (a *auditStorage) RequestWatchProgress(context.Context) error { return nil }

// auditBookmarkInterval is how often a watch that allows bookmarks gets one.
const auditBookmarkInterval = 30 * time.Second

// Watch implements storage.Interface: Added events for the entries committed after the
// resourceVersion (from "" or "0": every entry first, then what follows). A row is read once
// the feed has read its RV, when every write up to it has committed, so none is skipped.
func (a *auditStorage) Watch(ctx context.Context, key string, opts apistorage.ListOptions) (watch.Interface, error) {
	ns, _, err := a.parseKey(key)
	if err != nil {
		return nil, err
	}
	from, err := a.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	pred := opts.Predicate
	if pred.Empty() {
		pred = apistorage.Everything
	}
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan watch.Event, resultBuffer)
	w := watch.NewProxyWatcher(out)
	go func() {
		<-w.StopChan()
		cancel()
	}()
	go func() {
		defer close(out)
		send := func(ev watch.Event) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		last := int64(from)
		if from == 0 {
			// A watch from "now" with the state first, as etcd's: the current entries as Added.
			var current int64
			if err := a.b.pool.QueryRow(ctx, `SELECT rv FROM state`).Scan(&current); err != nil {
				send(watchError(err))
				return
			}
			if !a.follow(ctx, ns, pred, &last, current, send) {
				return
			}
		}
		bookmark := time.NewTicker(auditBookmarkInterval)
		defer bookmark.Stop()
		for {
			a.b.feed.mu.Lock()
			upTo, advanced := a.b.feed.rv, a.b.feed.advanced
			a.b.feed.mu.Unlock()
			if upTo > last {
				if !a.follow(ctx, ns, pred, &last, upTo, send) {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-advanced:
			case <-bookmark.C:
				if pred.AllowWatchBookmarks {
					obj := a.newFunc()
					if err := a.versioner.UpdateObject(obj, uint64(last)); err == nil && !send(watch.Event{Type: watch.Bookmark, Object: obj}) {
						return
					}
				}
			}
		}
	}()
	return w, nil
}

// follow sends the entries of ns (all when "") after *last up to upTo that match pred, and
// moves *last to upTo. It returns false when the watch must end.
func (a *auditStorage) follow(ctx context.Context, ns string, pred apistorage.SelectionPredicate, last *int64, upTo int64,
	send func(watch.Event) bool) bool {
	for {
		rows, err := a.b.pool.Query(ctx, `SELECT namespace, rv, committed_at, entry FROM audit_log
			WHERE ($1 = '' OR namespace = $1) AND rv > $2 AND rv <= $3 ORDER BY rv LIMIT $4`, ns, *last, upTo, auditPage)
		if err != nil {
			if ctx.Err() == nil {
				send(watchError(err))
			}
			return false
		}
		read, err := pgx.CollectRows(rows, scanAuditRow)
		if err != nil {
			if ctx.Err() == nil {
				send(watchError(err))
			}
			return false
		}
		for _, row := range read {
			*last = row.RV
			obj, err := a.trail.Decode(row)
			if err == nil {
				err = a.versioner.UpdateObject(obj, uint64(row.RV))
			}
			if err != nil {
				send(watchError(err))
				return false
			}
			if matched, err := pred.Matches(obj); err == nil && matched && !send(watch.Event{Type: watch.Added, Object: obj}) {
				return false
			}
		}
		if len(read) < auditPage {
			*last = upTo
			return true
		}
	}
}

func watchError(err error) watch.Event {
	status := toStatusError(clientError(err)).Status()
	return watch.Event{Type: watch.Error, Object: &status}
}
