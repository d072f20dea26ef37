package fieldvalidation

import (
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	timeType      = reflect.TypeOf(metav1.Time{})
	microTimeType = reflect.TypeOf(metav1.MicroTime{})
)

// Times checks every metav1.Time and metav1.MicroTime in obj, wherever it is: each must have
// an RFC 3339 form, that is a year from 0 to 9999 once in UTC, because that is how it is
// stored. A time such as 0000-01-01T00:00:00+01:00 decodes, but is written back as year -1,
// which no decoder reads: the object, and every list of its resource, could never be read
// again. The conditions helpers of apimachinery do not check this, so it is done here once for
// every field of every kind.
func Times(obj any) field.ErrorList {
	var errs field.ErrorList
	walkTimes(reflect.ValueOf(obj), nil, &errs)
	return errs
}

func walkTimes(v reflect.Value, path *field.Path, errs *field.ErrorList) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkTimes(v.Elem(), path, errs)
		}
	case reflect.Struct:
		switch v.Type() {
		case timeType:
			checkYear(v.Interface().(metav1.Time).Time, path, errs)
			return
		case microTimeType:
			checkYear(v.Interface().(metav1.MicroTime).Time, path, errs)
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, inline := jsonName(f)
			child := path
			if !inline {
				child = childPath(path, name)
			}
			walkTimes(v.Field(i), child, errs)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes hold no times
		}
		for i := range v.Len() {
			walkTimes(v.Index(i), indexPath(path, i), errs)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkTimes(iter.Value(), keyPath(path, iter.Key()), errs)
		}
	}
}

func checkYear(t time.Time, path *field.Path, errs *field.ErrorList) {
	// The zero time is written as null, not as year 1.
	if year := t.UTC().Year(); t.IsZero() || (year >= 0 && year <= 9999) {
		return
	}
	*errs = append(*errs, field.Invalid(path, t.String(), "must be a time whose year is between 0000 and 9999 in UTC"))
}

// jsonName is the field's name on the wire, and whether it is inlined into its parent.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

func childPath(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

func indexPath(path *field.Path, i int) *field.Path {
	if path == nil {
		return field.NewPath("").Index(i)
	}
	return path.Index(i)
}

func keyPath(path *field.Path, key reflect.Value) *field.Path {
	k := ""
	if key.Kind() == reflect.String {
		k = key.String()
	}
	if path == nil {
		return field.NewPath("").Key(k)
	}
	return path.Key(k)
}
