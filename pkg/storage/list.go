package storage

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// maxLimit caps how far a filtered page grows its fetch size, as in etcd3.
const maxLimit = 10000

const (
	expiredList     = "The resourceVersion for the provided list is too old."
	continueExpired = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter."
	inconsistentContinue = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// compactedListError is the 410 a list gets for a compacted RV; a paged list also gets a
// continue token that resumes at the latest RV (-1), as etcd3 returns.
func compactedListError(paging bool, continueKey, keyPrefix string) error {
	if !paging {
		return apierrors.NewResourceExpired(expiredList)
	}
	token, err := apistorage.EncodeContinue(continueKey, keyPrefix, -1)
	if err != nil {
		utilruntime.HandleError(err)
		return apierrors.NewResourceExpired(continueExpired)
	}
	statusErr := apierrors.NewResourceExpired(inconsistentContinue)
	statusErr.ErrStatus.ListMeta.Continue = token
	return statusErr
}

// resolveGetListRev returns the RV to read at (0: latest), with etcd3's rules.
func (s *Store) resolveGetListRev(continueKey string, continueRV int64, opts apistorage.ListOptions) (int64, error) {
	if len(continueKey) > 0 {
		if len(opts.ResourceVersion) > 0 && opts.ResourceVersion != "0" {
			return 0, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		// A negative continue RV asks for the latest state.
		if continueRV > 0 {
			return continueRV, nil
		}
		return 0, nil
	}
	if len(opts.ResourceVersion) == 0 {
		return 0, nil
	}
	parsedRV, err := s.versioner.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchNotOlderThan:
		return 0, nil
	case metav1.ResourceVersionMatchExact:
		return int64(parsedRV), nil
	case "":
		if opts.Recursive && opts.Predicate.Limit > 0 && parsedRV > 0 {
			return int64(parsedRV), nil
		}
		return 0, nil
	default:
		return 0, fmt.Errorf("unknown ResourceVersionMatch value: %v", opts.ResourceVersionMatch)
	}
}

// errTooManyRows is matchingKeys' answer when more than maxRows rows pass the pushed-down
// filters.
var errTooManyRows = errors.New("more rows match than asked for")

// GetList implements storage.Interface.
func (s *Store) GetList(ctx context.Context, key string, opts apistorage.ListOptions, listObj runtime.Object) (err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return err
	}
	v, err := itemsOf(listObj)
	if err != nil {
		return err
	}
	// A trailing "/" keeps "/a" from listing "/ab/...".
	if opts.Recursive && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	keyPrefix := key
	pred := opts.Predicate
	q := rangeQuery{start: key, exact: !opts.Recursive, filters: filtersFor(pred)}
	if opts.Recursive {
		q.end = prefixEnd(keyPrefix)
	}

	var continueKey string
	var continueRV int64
	if opts.Recursive && len(pred.Continue) > 0 {
		continueKey, continueRV, err = apistorage.DecodeContinue(pred.Continue, keyPrefix)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		q.start, q.startExclusive = continueStart(continueKey)
		// Keys are PostgreSQL text, which refuses what it cannot hold with an error of its own.
		if !isText(q.start) {
			return apierrors.NewBadRequest("invalid continue token: its key is not valid text")
		}
	}
	withRev, err := s.resolveGetListRev(continueKey, continueRV, opts)
	if err != nil {
		return err
	}
	q.rv = withRev

	limit := pred.Limit
	paging := limit > 0
	newItem := newItemFunc(listObj, v)
	var (
		lastKey string
		hasMore bool
		count   int64
	)
	for {
		// One extra row tells whether more remain without decoding it.
		if paging {
			q.limit = limit + 1
			q.withCount = pred.Empty()
		}
		mark := s.b.feed.mark()
		res, err := s.b.rangeRead(ctx, q)
		if err != nil {
			return err
		}
		s.b.feed.check(mark, res.currentRV)
		if q.rv != 0 && q.rv < res.compactedRV {
			return compactedListError(len(pred.Continue) > 0, continueKey, keyPrefix)
		}
		if q.rv > res.currentRV {
			if continueKey != "" {
				// No server hands out a token ahead of the log it read, so the client made this
				// one up: its error (400), not a 504 that tells it to retry.
				return apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: resourceVersion %d is newer than the current %d", q.rv, res.currentRV))
			}
			return apistorage.NewTooLargeResourceVersionError(uint64(q.rv), uint64(res.currentRV), 1)
		}
		if err := s.validateMinimumResourceVersion(opts.ResourceVersion, uint64(res.currentRV)); err != nil {
			return err
		}
		// Later pages of this call, and continue tokens, read the same snapshot.
		if q.rv == 0 {
			q.rv = res.currentRV
		}
		count = res.count
		rows := res.rows
		hasMore = paging && int64(len(rows)) > limit
		if hasMore {
			rows = rows[:limit]
		}
		// Room for every row at once: appending one by one leaves up to half the array spare,
		// and the watch cache keeps the array of its initial list as long as any item of it.
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, len(rows)))
		}
		for _, row := range rows {
			if paging && int64(v.Len()) >= pred.Limit {
				hasMore = true
				break
			}
			lastKey = row.key
			data, _, err := s.fromStorage(ctx, row.key, row.value)
			if err != nil {
				return apistorage.NewInternalErrorf("unable to transform key %q: %v", row.key, err)
			}
			if ctx.Err() != nil {
				return apistorage.NewTimeoutError(row.key, "request did not complete within requested timeout")
			}
			obj, _, err := s.codec.Decode(data, nil, newItem())
			if err != nil {
				return err
			}
			internObject(obj)
			if err := s.versioner.UpdateObject(obj, uint64(row.rv)); err != nil {
				klog.Errorf("failed to update object version: %v", err)
			}
			if matched, err := pred.Matches(obj); err == nil && matched {
				v.Set(reflect.Append(v, reflect.ValueOf(obj).Elem()))
			}
		}
		if !hasMore || int64(v.Len()) >= pred.Limit {
			break
		}
		// Filters dropped items: fetch more, in growing pages, until the page is full.
		if limit < maxLimit {
			limit = min(limit*2, maxLimit)
		}
		q.start, q.startExclusive = lastKey, true
	}
	if v.IsNil() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	continueValue, remaining, err := apistorage.PrepareContinueToken(lastKey, keyPrefix, q.rv, count, hasMore, opts)
	if err != nil {
		return err
	}
	if count < 0 { // more than maxCount: unknown
		remaining = nil
	}
	return s.versioner.UpdateList(listObj, uint64(q.rv), continueValue, remaining)
}

// matchingKeys returns the keys of the objects an unpaged list at the latest RV would return
// before the Go matcher runs, as far as object_labels tells (the label requirements it
// answers, which must include one), in key order, and the RV of that snapshot, reading
// nothing but object_labels' primary key. With more than maxRows matches it returns
// errTooManyRows. opts must be a read the latest RV satisfies (cacheWouldServe); a minimum RV
// is checked against the snapshot.
func (s *Store) matchingKeys(ctx context.Context, key string, opts apistorage.ListOptions, maxRows int64) ([]string, int64, error) {
	key, err := s.prepareKey(key)
	if err != nil {
		return nil, 0, err
	}
	if !strings.HasSuffix(key, "/") {
		key += "/"
	}
	mark := s.b.feed.mark()
	keys, rv, err := s.b.labelKeys(ctx, key, prefixEnd(key), filtersFor(opts.Predicate).labels, maxRows+1)
	if err != nil {
		return nil, 0, err
	}
	s.b.feed.check(mark, rv)
	if int64(len(keys)) > maxRows {
		return nil, 0, errTooManyRows
	}
	if err := s.validateMinimumResourceVersion(opts.ResourceVersion, uint64(rv)); err != nil {
		return nil, 0, err
	}
	// The cacher's keys are the rows' without the path prefix, keeping its final "/": a
	// substring, where "/" + the rest would copy a thousand keys per label-selected list.
	for i := range keys {
		keys[i] = keys[i][len(s.pathPrefix)-1:]
	}
	return keys, rv, nil
}

// itemsOf returns the Items slice of a list object, settable.
func itemsOf(listObj runtime.Object) (reflect.Value, error) {
	listPtr, err := meta.GetItemsPtr(listObj)
	if err != nil {
		return reflect.Value{}, err
	}
	v, err := conversion.EnforcePtr(listPtr)
	if err != nil || v.Kind() != reflect.Slice {
		return reflect.Value{}, fmt.Errorf("need ptr to slice: %v", err)
	}
	return v, nil
}

// continueStart turns a continue key into a range start. Continue keys end in "\x00" (the
// smallest key after the last one returned), which PostgreSQL text cannot hold, so that
// becomes an exclusive bound on the last key instead.
func continueStart(continueKey string) (string, bool) {
	if k, ok := strings.CutSuffix(continueKey, "\x00"); ok {
		return k, true
	}
	return continueKey, false
}

// newItemFunc returns a constructor for list items, keeping the apiVersion of unstructured lists.
func newItemFunc(listObj runtime.Object, v reflect.Value) func() runtime.Object {
	if ul, ok := listObj.(*unstructured.UnstructuredList); ok {
		if apiVersion := ul.GetAPIVersion(); len(apiVersion) > 0 {
			return func() runtime.Object {
				return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": apiVersion}}
			}
		}
	}
	elem := v.Type().Elem()
	return func() runtime.Object {
		return reflect.New(elem).Interface().(runtime.Object)
	}
}
