package storage

import (
	"reflect"
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
// (unique.Make: entries nobody references any more are collected). Watch cache objects are
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
		n := make(map[string]string, len(l))
		for k, v := range l {
			n[intern(k)] = intern(v)
		}
		m.SetLabels(n)
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
