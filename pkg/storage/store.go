package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/klog/v2"
)

// Store is the storage.Interface of one resource.
type Store struct {
	b              *Backend
	codec          runtime.Codec
	versioner      apistorage.Versioner
	newFunc        func() runtime.Object
	newListFunc    func() runtime.Object
	pathPrefix     string // ends in "/"
	resourcePrefix string
	groupResource  schema.GroupResource
	objectType     string
	// transformer is swapped by tests while watches run, hence atomic.
	transformer atomic.Pointer[value.Transformer]
	// unique is the resource's UniqueIndex, if it has one.
	unique *UniqueIndex
}

var _ apistorage.Interface = &Store{}

// NewStore returns the storage.Interface for one resource. prefix is prepended to every key
// (like etcd's --etcd-prefix); resourcePrefix is the resource's key root below it, which
// watches and the current-RV probe use. The transformer sees every stored value, with the
// key as authenticated data, so encryption at rest can be plugged in.
func (b *Backend) NewStore(codec runtime.Codec, newFunc, newListFunc func() runtime.Object, prefix, resourcePrefix string,
	groupResource schema.GroupResource, transformer value.Transformer) *Store {
	pathPrefix := path.Join("/", prefix)
	if !strings.HasSuffix(pathPrefix, "/") {
		pathPrefix += "/"
	}
	s := &Store{
		b:              b,
		codec:          codec,
		versioner:      apistorage.APIObjectVersioner{},
		newFunc:        newFunc,
		newListFunc:    newListFunc,
		pathPrefix:     pathPrefix,
		resourcePrefix: resourcePrefix,
		groupResource:  groupResource,
		objectType:     "<unknown>",
		unique:         b.uniqueIndex(groupResource),
	}
	if newFunc != nil {
		s.objectType = reflect.TypeOf(newFunc()).String()
	}
	s.SetTransformer(transformer)
	if s.unique != nil && newFunc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.fillUniqueKeys(ctx); err != nil {
			klog.Errorf("giving %s stored before migration 000002 their unique keys: %v", groupResource, err)
		}
	}
	return s
}

// Transformer returns the value transformer in use.
func (s *Store) Transformer() value.Transformer { return *s.transformer.Load() }

// SetTransformer replaces the value transformer for all later reads, writes and watch events.
func (s *Store) SetTransformer(t value.Transformer) { s.transformer.Store(&t) }

// authenticatedData binds a stored value to its key, as etcd3 does.
type authenticatedData string

func (d authenticatedData) AuthenticatedData() []byte { return []byte(d) }

func (s *Store) fromStorage(ctx context.Context, key string, data []byte) ([]byte, bool, error) {
	return s.Transformer().TransformFromStorage(ctx, data, authenticatedData(key))
}

// Versioner implements storage.Interface.
func (s *Store) Versioner() apistorage.Versioner { return s.versioner }

// ReadinessCheck implements storage.Interface.
func (s *Store) ReadinessCheck() error { return s.b.ReadinessCheck() }

// RequestWatchProgress implements storage.Interface: every watch of this process opened with
// ProgressNotify gets a bookmark at the feed's RV once the feed has read the log as of this call.
func (s *Store) RequestWatchProgress(context.Context) error {
	s.b.feed.askProgress()
	return nil
}

// prepareKey validates a key and roots it under the path prefix, exactly like etcd3.
func (s *Store) prepareKey(key string) (string, error) {
	if key == ".." || strings.HasPrefix(key, "../") || strings.HasSuffix(key, "/..") || strings.Contains(key, "/../") ||
		key == "." || strings.HasPrefix(key, "./") || strings.HasSuffix(key, "/.") || strings.Contains(key, "/./") {
		return "", fmt.Errorf("invalid key: %q", key)
	}
	if key == "" || key == "/" {
		return "", fmt.Errorf("empty key: %q", key)
	}
	return s.pathPrefix + strings.TrimPrefix(key, "/"), nil
}

// newRecord encodes obj for storage under key.
func (s *Store) newRecord(ctx context.Context, key string, obj runtime.Object, data []byte, ttl uint64) (record, error) {
	r := record{key: key, resource: s.resourcePrefix, ttl: int64(ttl)}
	if m, err := meta.Accessor(obj); err == nil {
		r.namespace, r.name, r.labels = m.GetNamespace(), m.GetName(), m.GetLabels()
	}
	v, err := s.Transformer().TransformToStorage(ctx, data, authenticatedData(key))
	if err != nil {
		return record{}, apistorage.NewInternalError(err.Error())
	}
	r.value = v
	return r, nil
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) (err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return err
	}
	if version, err := s.versioner.ObjectResourceVersion(obj); err == nil && version != 0 {
		return apistorage.ErrResourceVersionSetOnCreate
	}
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	data, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return err
	}
	r, err := s.newRecord(ctx, key, obj, data, ttl)
	if err != nil {
		return err
	}
	if r, err = limitCreate(ctx, r, key, obj); err != nil {
		return err
	}
	audit, err := s.auditOf(ctx, "create", obj)
	if err != nil {
		return err
	}
	rv, err := s.b.create(ctx, s.claimUniqueKey(r, obj), audit)
	if errors.Is(err, errKeyExists) {
		return apistorage.NewKeyExistsError(key, 0)
	}
	if err := s.uniqueConflict(err, obj); err != nil {
		return err
	}
	if out != nil {
		return decode(s.codec, s.versioner, data, out, rv)
	}
	return nil
}

// claimUniqueKey sets the unique key a new object claims, if its resource has a unique index.
// Every path that creates an object goes through it: Create, and GuaranteedUpdate of a missing
// key (server-side apply and update of a new object).
func (s *Store) claimUniqueKey(r record, obj runtime.Object) record {
	if s.unique != nil {
		if k := s.unique.Key(obj); k != "" {
			r.uniqueKey = &k
		}
	}
	return r
}

// uniqueConflict turns the error of a create whose unique key was taken into the index's own
// error for obj; other errors pass unchanged.
func (s *Store) uniqueConflict(err error, obj runtime.Object) error {
	var taken *uniqueConflictError
	if errors.As(err, &taken) {
		return s.unique.Conflict(obj, taken.holder)
	}
	return err
}

// Get implements storage.Interface. Like etcd3 it always reads the latest state; the RV is
// only a lower bound.
func (s *Store) Get(ctx context.Context, key string, opts apistorage.GetOptions, out runtime.Object) (err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return err
	}
	obj, current, err := s.b.get(ctx, key)
	if err != nil {
		return err
	}
	if err := s.validateMinimumResourceVersion(opts.ResourceVersion, uint64(current)); err != nil {
		return err
	}
	if obj == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return apistorage.NewKeyNotFoundError(key, 0)
	}
	data, _, err := s.fromStorage(ctx, key, obj.value)
	if err != nil {
		return apistorage.NewInternalError(err.Error())
	}
	return decode(s.codec, s.versioner, data, out, obj.rv)
}

// Count implements storage.Interface.
func (s *Store) Count(key string) (_ int64, err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return 0, err
	}
	if !strings.HasSuffix(key, "/") {
		key += "/"
	}
	// Not rangeRead's count, which stops at maxCount for remainingItemCount: Count feeds
	// apiserver_storage_objects and API Priority and Fairness' estimate of what a list costs,
	// which must see 100,000 objects as 100,000.
	var args argList
	keyRange := (&rangeQuery{start: key, end: prefixEnd(key)}).keyRange(&args)
	var n int64
	err = s.b.pool.QueryRow(context.Background(), `SELECT count(*) FROM objects WHERE `+keyRange, args...).Scan(&n)
	return n, err
}

// objState is an object as last seen, with its stored (untransformed) bytes.
type objState struct {
	obj   runtime.Object
	meta  *apistorage.ResponseMeta
	rev   int64
	data  []byte
	stale bool
}

func (s *Store) newObjOf(v reflect.Value) runtime.Object {
	if u, ok := v.Addr().Interface().(runtime.Unstructured); ok {
		return u.NewEmptyInstance()
	}
	return reflect.New(v.Type()).Interface().(runtime.Object)
}

// stateOf decodes a raw object (nil: missing) into an objState.
func (s *Store) stateOf(ctx context.Context, key string, raw *rawObject, v reflect.Value, ignoreNotFound bool) (*objState, error) {
	st := &objState{meta: &apistorage.ResponseMeta{}, obj: s.newObjOf(v)}
	if raw == nil {
		if !ignoreNotFound {
			return nil, apistorage.NewKeyNotFoundError(key, 0)
		}
		if err := runtime.SetZeroValue(st.obj); err != nil {
			return nil, err
		}
		return st, nil
	}
	data, stale, err := s.fromStorage(ctx, key, raw.value)
	if err != nil {
		return nil, apistorage.NewInternalError(err.Error())
	}
	st.rev, st.data, st.stale = raw.rv, data, stale
	st.meta.ResourceVersion = uint64(raw.rv)
	if err := decode(s.codec, s.versioner, data, st.obj, raw.rv); err != nil {
		return nil, err
	}
	return st, nil
}

func (s *Store) currentState(ctx context.Context, key string, v reflect.Value, ignoreNotFound bool) func() (*objState, error) {
	return func() (*objState, error) {
		raw, _, err := s.b.get(ctx, key)
		if err != nil {
			return nil, err
		}
		return s.stateOf(ctx, key, raw, v, ignoreNotFound)
	}
}

// stateFromObject turns a caller-supplied cached object into an objState; it may be stale.
func (s *Store) stateFromObject(obj runtime.Object) (*objState, error) {
	rv, err := s.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return nil, fmt.Errorf("couldn't get resource version: %v", err)
	}
	st := &objState{obj: obj, rev: int64(rv), meta: &apistorage.ResponseMeta{ResourceVersion: rv}}
	// The stored form has no resourceVersion, so encode without it and put it back afterwards.
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return nil, fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	if st.data, err = runtime.Encode(s.codec, obj); err != nil {
		return nil, err
	}
	if err := s.versioner.UpdateObject(st.obj, rv); err != nil {
		klog.Errorf("failed to update object version: %v", err)
	}
	return st, nil
}

// Delete implements storage.Interface with etcd3's rules for preconditions, validateDeletion
// and a cached object used as a suggestion.
func (s *Store) Delete(ctx context.Context, key string, out runtime.Object, preconditions *apistorage.Preconditions,
	validateDeletion apistorage.ValidateObjectFunc, cachedExistingObject runtime.Object) (err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(out)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	getCurrent := s.currentState(ctx, key, v, false)

	var orig *objState
	var origIsCurrent bool
	if cachedExistingObject != nil {
		orig, err = s.stateFromObject(cachedExistingObject)
	} else {
		orig, err = getCurrent()
		origIsCurrent = true
	}
	if err != nil {
		return err
	}
	// refresh handles a failed check: the error stands if orig was current or turns out to
	// be; otherwise the loop retries with the current state.
	refresh := func(checkErr error) (retry bool, err error) {
		if origIsCurrent {
			return false, checkErr
		}
		cachedRev := orig.rev
		if orig, err = getCurrent(); err != nil {
			return false, err
		}
		origIsCurrent = true
		if cachedRev == orig.rev {
			return false, checkErr
		}
		return true, nil
	}
	for {
		if preconditions != nil {
			if err := preconditions.Check(key, orig.obj); err != nil {
				if retry, err := refresh(err); !retry {
					return err
				}
				continue
			}
		}
		if err := validateDeletion(ctx, orig.obj); err != nil {
			if retry, err := refresh(err); !retry {
				return err
			}
			continue
		}
		audit, err := s.auditOf(ctx, "delete", orig.obj)
		if err != nil {
			return err
		}
		rv, conflict, cur, err := s.b.delete(ctx, key, orig.rev, audit, namespaceOf(orig.obj))
		if err != nil {
			return err
		}
		if conflict {
			klog.V(4).Infof("deletion of %s failed because of a conflict, going to retry", key)
			if orig, err = s.stateOf(ctx, key, cur, v, false); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}
		return decode(s.codec, s.versioner, orig.data, out, rv)
	}
}

// GuaranteedUpdate implements storage.Interface: a compare-and-swap loop on the key's mod RV
// with etcd3's rules for suggestions, no-op detection and stale transformer data.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *apistorage.Preconditions, tryUpdate apistorage.UpdateFunc, cachedExistingObject runtime.Object) (err error) {
	defer func() { err = clientError(err) }()
	key, err = s.prepareKey(key)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(destination)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	getCurrent := s.currentState(ctx, key, v, ignoreNotFound)

	var orig *objState
	var origIsCurrent bool
	if cachedExistingObject != nil {
		orig, err = s.stateFromObject(cachedExistingObject)
	} else {
		orig, err = getCurrent()
		origIsCurrent = true
	}
	if err != nil {
		return err
	}

	for {
		if err := preconditions.Check(key, orig.obj); err != nil {
			if origIsCurrent {
				return err
			}
			if orig, err = getCurrent(); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}

		ret, ttl, err := s.updateState(orig, tryUpdate)
		if err != nil {
			if origIsCurrent {
				return err
			}
			cachedRev, cachedErr := orig.rev, err
			if orig, err = getCurrent(); err != nil {
				return err
			}
			origIsCurrent = true
			if cachedRev == orig.rev {
				return cachedErr
			}
			continue
		}

		data, err := runtime.Encode(s.codec, ret)
		if err != nil {
			return err
		}
		if !orig.stale && bytes.Equal(data, orig.data) {
			// A suggestion may be out of date: only skip the write once the stored bytes
			// are known to equal ours.
			if !origIsCurrent {
				if orig, err = getCurrent(); err != nil {
					return err
				}
				origIsCurrent = true
				if !bytes.Equal(data, orig.data) {
					continue
				}
			}
			if !orig.stale {
				return decode(s.codec, s.versioner, orig.data, destination, orig.rev)
			}
		}

		r, err := s.newRecord(ctx, key, ret, data, ttl)
		if err != nil {
			return err
		}
		var (
			rv       int64
			conflict bool
			cur      *rawObject
		)
		if orig.rev == 0 {
			// The key did not exist (ignoreNotFound): create it, or start over if someone else did.
			if r, err = limitCreate(ctx, r, key, ret); err != nil {
				return err
			}
			var audit []byte
			if audit, err = s.auditOf(ctx, "create", ret); err != nil {
				return err
			}
			rv, err = s.b.create(ctx, s.claimUniqueKey(r, ret), audit)
			err = s.uniqueConflict(err, ret)
			if errors.Is(err, errKeyExists) {
				if cur, _, err = s.b.get(ctx, key); err != nil {
					return err
				}
				conflict = true
			}
		} else {
			var audit []byte
			if audit, err = s.auditOf(ctx, "update", ret); err != nil {
				return err
			}
			rv, conflict, cur, err = s.b.update(ctx, r, orig.rev, audit)
		}
		if err != nil {
			return err
		}
		if conflict {
			klog.V(4).Infof("GuaranteedUpdate of %s failed because of a conflict, going to retry", key)
			if orig, err = s.stateOf(ctx, key, cur, v, ignoreNotFound); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}
		return decode(s.codec, s.versioner, data, destination, rv)
	}
}

func (s *Store) updateState(st *objState, userUpdate apistorage.UpdateFunc) (runtime.Object, uint64, error) {
	ret, ttlPtr, err := userUpdate(st.obj, *st.meta)
	if err != nil {
		return nil, 0, err
	}
	if err := s.versioner.PrepareObjectForStorage(ret); err != nil {
		return nil, 0, fmt.Errorf("PrepareObjectForStorage failed: %v", err)
	}
	var ttl uint64
	if ttlPtr != nil {
		ttl = *ttlPtr
	}
	return ret, ttl, nil
}

// validateMinimumResourceVersion returns the 'too large resource version' error when the
// requested minimum RV is newer than the storage's.
func (s *Store) validateMinimumResourceVersion(minimumResourceVersion string, actual uint64) error {
	if minimumResourceVersion == "" {
		return nil
	}
	minimumRV, err := s.versioner.ParseResourceVersion(minimumResourceVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	if minimumRV > actual {
		return apistorage.NewTooLargeResourceVersionError(minimumRV, actual, 0)
	}
	return nil
}

// decode decodes value into objPtr and sets its resourceVersion to rv.
func decode(codec runtime.Codec, versioner apistorage.Versioner, value []byte, objPtr runtime.Object, rv int64) error {
	if _, err := conversion.EnforcePtr(objPtr); err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %v", err)
	}
	if _, _, err := codec.Decode(value, nil, objPtr); err != nil {
		return err
	}
	if err := versioner.UpdateObject(objPtr, uint64(rv)); err != nil {
		klog.Errorf("failed to update object version: %v", err)
	}
	return nil
}
