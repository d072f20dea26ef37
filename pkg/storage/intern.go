package storage

import (
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unique"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Objects decoded for watches and lists end up in the apiserver's watch cache: every object of
// a resource, plus the previous version of each one changed in the last 75 s. Most of their
// metadata repeats across objects and versions: the namespace, label and annotation keys,
// label values, and above all the managed fields, whose FieldsV1 sets are byte for byte the
// same for every object written the same way. internMetadata makes those share one copy
// through unique.Make, which keeps a string's copy only while a handle to it lives: the objects
// hold strings, not handles, so each collection starts new copies. That is one copy per string
// per collection rather than per object; a pool holding its strings measured 5 to 17 MiB more
// heap with 30,000 objects and their previous versions cached, not less. Watch cache objects are
// shared by every request that lists them and are never modified or decoded into, which is
// what makes sharing FieldsV1's bytes safe. Maps other than labels and annotations keep their
// strings.

// maxInternedValue is the longest annotation value interned; longer ones (last-applied
// configurations) are rarely shared.
const maxInternedValue = 64

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// internBytes returns b's canonical copy, backed by an interned string; it must not be written to.
func internBytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	s := unique.Make(string(b)).Value()
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// internObject interns obj's metadata and, below it, every string of at most
// maxInternedValue bytes, and trims the spare capacity of its slices: in a resource's objects most of them (enum values, repository
// URLs, references, status messages) repeat across objects, and all of them between the
// versions of one object that the watch cache holds at once.
func internObject(obj runtime.Object) {
	internMetadata(obj)
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	v = v.Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Type == objectMetaType {
			continue // internMetadata's, and the rest of it (name, uid) is unique
		}
		internStrings(v.Field(i))
	}
}

var objectMetaType = reflect.TypeOf(metav1.ObjectMeta{})

func internStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if n := v.Len(); n > 0 && n <= maxInternedValue && v.CanSet() {
			v.SetString(intern(v.String()))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			internStrings(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() { // not time.Time's location, say
				internStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		if v.Kind() == reflect.Slice && v.Cap() > v.Len() && v.CanSet() {
			v.Set(clip(v))
		}
		for i := range v.Len() {
			internStrings(v.Index(i))
		}
	}
}

// clip returns a copy of slice v with no spare capacity. encoding/json gives a slice of one to
// four elements room for four, and the watch cache keeps it for the object's lifetime.
func clip(v reflect.Value) reflect.Value {
	c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	reflect.Copy(c, v)
	return c
}

func internMetadata(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetNamespace(intern(m.GetNamespace()))
	if l := m.GetLabels(); len(l) > 0 {
		m.SetLabels(labelSets.shared(l))
	}
	if a := m.GetAnnotations(); len(a) > 0 {
		n := make(map[string]string, len(a))
		for k, v := range a {
			if len(v) <= maxInternedValue {
				v = intern(v)
			}
			n[intern(k)] = v
		}
		m.SetAnnotations(n)
	}
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = intern(refs[i].APIVersion), intern(refs[i].Kind)
	}
	fields := m.GetManagedFields()
	if cap(fields) > len(fields) {
		fields = clip(reflect.ValueOf(fields)).Interface().([]metav1.ManagedFieldsEntry)
		m.SetManagedFields(fields)
	}
	for i := range fields {
		f := &fields[i]
		f.Manager, f.APIVersion, f.FieldsType, f.Subresource = intern(f.Manager), intern(f.APIVersion), intern(f.FieldsType), intern(f.Subresource)
		f.Operation = metav1.ManagedFieldsOperationType(intern(string(f.Operation)))
		if f.FieldsV1 != nil {
			f.FieldsV1 = &metav1.FieldsV1{Raw: internBytes(f.FieldsV1.Raw)}
		}
	}
}

// labelSets holds one map per distinct label set, which every object carrying that set
// shares. The objects of a resource mostly repeat a few sets, and the versions of one object
// nearly always repeat its own: after a status update of 100,000 objects, the watch cache holds
// 200,000 versions, and a map of three labels is about 300 bytes. Sharing relies on what the
// interned strings and FieldsV1 bytes already rely on: nothing modifies the watch cache's
// objects (its own lists hand out shallow copies that share their maps too).
var labelSets = labelSetCache{sets: map[string]map[string]string{}}

// maxLabelSets bounds the cache. Past it the cache starts over: objects keep the maps they
// have, and those decoded next share new ones.
const maxLabelSets = 8192

type labelSetCache struct {
	mu   sync.Mutex
	sets map[string]map[string]string // labelSetKey(set) → the shared map
}

// shared returns the map shared by every object with labels l, whose keys and values are
// interned; it must not be written to.
func (c *labelSetCache) shared(l map[string]string) map[string]string {
	key := labelSetKey(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.sets[key]; ok {
		return m
	}
	if len(c.sets) >= maxLabelSets {
		clear(c.sets)
	}
	m := make(map[string]string, len(l))
	for k, v := range l {
		m[intern(k)] = intern(v)
	}
	c.sets[key] = m
	return m
}

// labelSetKey is a string equal for equal label sets and different otherwise: sorted pairs,
// each string preceded by its length, so that no separator has to be kept out of labels
// (the store does not rely on them having been validated).
func labelSetKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	n := 0
	for k, v := range l {
		keys = append(keys, k)
		n += len(k) + len(v) + 8
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		v := l[k]
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(b, ':')
		b = append(b, v...)
	}
	return string(b)
}
