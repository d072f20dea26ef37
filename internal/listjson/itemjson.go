package listjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// itemEncoder writes one kind of list item exactly as encoding/json does, but writes the
// item's ObjectMeta itself. Metadata is most of the cost of encoding a GitOpsDeployment with
// encoding/json (6 of 8.5 µs), and most of that is its managedFields: encoding/json parses
// and re-compacts every FieldsV1 (already compact JSON, as decoded from storage), and
// allocates for every timestamp and every map it sorts. The other fields (spec, status) still
// go through encoding/json, which is quick for them. The bytes are the same: the tests compare
// them with encoding/json's on randomly filled objects of every kind the server serves.
type itemEncoder struct {
	meta  int          // index of the ObjectMeta field
	other []otherField // the fields after it, in order
}

// otherField is a field encoding/json writes after metadata.
type otherField struct {
	index     int
	key       string // `"name":`
	omitEmpty bool
}

var (
	typeMetaType      = reflect.TypeFor[metav1.TypeMeta]()
	objectMetaType    = reflect.TypeFor[metav1.ObjectMeta]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	itemEncoders      sync.Map // reflect.Type → *itemEncoder, nil when the type does not fit
)

// itemEncoderFor returns the encoder of items of type t, or nil when t is not laid out as
// every Kubernetes kind is: an inline TypeMeta, then metadata, then fields with a plain JSON
// name (and at most omitempty). encoding/json encodes the others.
func itemEncoderFor(t reflect.Type) *itemEncoder {
	if e, ok := itemEncoders.Load(t); ok {
		return e.(*itemEncoder)
	}
	e := newItemEncoder(t)
	itemEncoders.Store(t, e)
	return e
}

func newItemEncoder(t reflect.Type) *itemEncoder {
	if t.Kind() != reflect.Struct || t.NumField() < 2 || marshalsItself(t) {
		return nil
	}
	if f := t.Field(0); !f.Anonymous || f.Type != typeMetaType || f.Tag.Get("json") != ",inline" {
		return nil
	}
	if f := t.Field(1); f.Type != objectMetaType || (f.Tag.Get("json") != "metadata" && f.Tag.Get("json") != "metadata,omitempty") {
		return nil
	}
	e := &itemEncoder{meta: 1}
	seen := map[string]bool{"kind": true, "apiVersion": true, "metadata": true}
	for i := 2; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || !f.IsExported() || !isPlainName(name) || (opts != "" && opts != "omitempty") || seen[name] {
			return nil
		}
		seen[name] = true
		e.other = append(e.other, otherField{index: i, key: `"` + name + `":`, omitEmpty: opts == "omitempty"})
	}
	return e
}

// marshalsItself reports whether encoding/json calls a method of t's to encode it.
func marshalsItself(t reflect.Type) bool {
	for _, m := range []reflect.Type{marshalerType, textMarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

// isPlainName reports whether a JSON field name is made of ASCII letters and digits only, as
// Kubernetes' are: encoding/json writes those as they are, and takes them as given.
func isPlainName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// encode appends item (addressable) to buf as encoding/json's Encoder writes it, without the
// newline. enc writes into buf.
func (e *itemEncoder) encode(buf *bytes.Buffer, enc *json.Encoder, item reflect.Value) error {
	tm := item.Field(0).Addr().Interface().(*metav1.TypeMeta)
	b := buf.AvailableBuffer()
	b = append(b, '{')
	b = appendStringField(b, "kind", tm.Kind)
	b = appendStringField(b, "apiVersion", tm.APIVersion)
	b = appendKey(b, "metadata")
	b, err := appendObjectMeta(b, item.Field(e.meta).Addr().Interface().(*metav1.ObjectMeta))
	if err != nil {
		return err
	}
	buf.Write(b)
	for _, f := range e.other {
		v := item.Field(f.index)
		if f.omitEmpty && isEmptyValue(v) {
			continue
		}
		buf.WriteByte(',')
		buf.WriteString(f.key)
		if err := enc.Encode(v.Addr().Interface()); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteByte('}')
	return nil
}

// isEmptyValue is encoding/json's omitempty rule.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// appendObjectMeta appends m as encoding/json writes it: its fields in declaration order,
// empty ones left out (creationTimestamp, a struct, never is), map keys sorted.
func appendObjectMeta(b []byte, m *metav1.ObjectMeta) ([]byte, error) {
	b = append(b, '{')
	b = appendStringField(b, "name", m.Name)
	b = appendStringField(b, "generateName", m.GenerateName)
	b = appendStringField(b, "namespace", m.Namespace)
	b = appendStringField(b, "selfLink", m.SelfLink)
	b = appendStringField(b, "uid", string(m.UID))
	b = appendStringField(b, "resourceVersion", m.ResourceVersion)
	if m.Generation != 0 {
		b = appendKey(b, "generation")
		b = strconv.AppendInt(b, m.Generation, 10)
	}
	b = appendKey(b, "creationTimestamp")
	b = appendTime(b, m.CreationTimestamp.Time)
	if m.DeletionTimestamp != nil {
		b = appendKey(b, "deletionTimestamp")
		b = appendTime(b, m.DeletionTimestamp.Time)
	}
	if m.DeletionGracePeriodSeconds != nil {
		b = appendKey(b, "deletionGracePeriodSeconds")
		b = strconv.AppendInt(b, *m.DeletionGracePeriodSeconds, 10)
	}
	b = appendMapField(b, "labels", m.Labels)
	b = appendMapField(b, "annotations", m.Annotations)
	// Owner references and finalizers always encode; managed fields may hold a FieldsV1 that
	// is not JSON.
	b, _ = appendArrayField(b, "ownerReferences", m.OwnerReferences, appendOwnerReference)
	b, _ = appendArrayField(b, "finalizers", m.Finalizers, func(b []byte, f *string) ([]byte, error) {
		return appendString(b, *f), nil
	})
	b, err := appendArrayField(b, "managedFields", m.ManagedFields, appendManagedFieldsEntry)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendArrayField appends `"key":[…]`, each item written by item, unless items is empty.
func appendArrayField[T any](b []byte, key string, items []T, item func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if len(items) == 0 {
		return b, nil
	}
	b = appendKey(b, key)
	b = append(b, '[')
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = item(b, &items[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendOwnerReference(b []byte, r *metav1.OwnerReference) ([]byte, error) {
	b = append(b, `{"apiVersion":`...)
	b = appendString(b, r.APIVersion)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"name":`...)
	b = appendString(b, r.Name)
	b = append(b, `,"uid":`...)
	b = appendString(b, string(r.UID))
	if r.Controller != nil {
		b = append(b, `,"controller":`...)
		b = strconv.AppendBool(b, *r.Controller)
	}
	if r.BlockOwnerDeletion != nil {
		b = append(b, `,"blockOwnerDeletion":`...)
		b = strconv.AppendBool(b, *r.BlockOwnerDeletion)
	}
	return append(b, '}'), nil
}

func appendManagedFieldsEntry(b []byte, f *metav1.ManagedFieldsEntry) ([]byte, error) {
	b = append(b, '{')
	b = appendStringField(b, "manager", f.Manager)
	b = appendStringField(b, "operation", string(f.Operation))
	b = appendStringField(b, "apiVersion", f.APIVersion)
	if f.Time != nil {
		b = appendKey(b, "time")
		b = appendTime(b, f.Time.Time)
	}
	b = appendStringField(b, "fieldsType", f.FieldsType)
	if f.FieldsV1 != nil {
		b = appendKey(b, "fieldsV1")
		var err error
		if b, err = appendFieldsV1(b, f.FieldsV1); err != nil {
			return nil, err
		}
	}
	b = appendStringField(b, "subresource", f.Subresource)
	return append(b, '}'), nil
}

// appendKey appends `"key":`, after a comma unless it is the object's first field (b ends
// in '{'). Keys are plain ASCII, written as they are.
func appendKey(b []byte, key string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(appendKey(b, key), s)
}

func appendMapField(b []byte, key string, m map[string]string) []byte {
	if len(m) == 0 {
		return b
	}
	b = appendKey(b, key)
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // encoding/json orders keys bytewise, as strings compare
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

// appendTime is metav1.Time's MarshalJSON: null when zero, else RFC 3339 in UTC.
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendString appends s as encoding/json quotes it with HTML escaping on. Strings of
// printable ASCII without `"`, `\`, `<`, `>` and `&` (every name, label and timestamp a
// client normally writes) are copied as they are; any other goes through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainByte lists the bytes encoding/json writes inside a string as they are.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendFieldsV1 appends f as encoding/json writes it: its MarshalJSON's output, compacted.
// FieldsV1 decoded from storage is already compact JSON made of objects and plain strings
// only; such bytes (checked by isCompactFieldsV1, a single pass) are copied. Anything else
// goes through encoding/json, which also rejects what is not JSON.
func appendFieldsV1(b []byte, f *metav1.FieldsV1) ([]byte, error) {
	if f.Raw == nil {
		return append(b, "null"...), nil
	}
	if isCompactFieldsV1(f.Raw) {
		return append(b, f.Raw...), nil
	}
	out, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// isCompactFieldsV1 reports whether raw is a JSON object whose values are all objects, with
// no whitespace, and whose keys are ASCII strings in which encoding/json's compaction changes
// nothing (no raw `<`, `>`, `&`, and only valid escapes). That is the shape structured merge
// diff writes; encoding/json's output for it is raw itself.
func isCompactFieldsV1(raw []byte) bool {
	depth, i, ok := 0, 0, false
	for {
		// A value, always an object: '{', then '}' or its first key.
		if i >= len(raw) || raw[i] != '{' {
			return false
		}
		depth++
		i++
		if i < len(raw) && raw[i] == '"' {
			if i, ok = skipPlainString(raw, i); !ok || i >= len(raw) || raw[i] != ':' {
				return false
			}
			i++
			continue // the key's value
		}
		if i >= len(raw) || raw[i] != '}' {
			return false
		}
		i++
		depth--
		// A value has ended: its object goes on with ',' and the next key, or ends with '}'.
		for depth > 0 {
			if i >= len(raw) {
				return false
			}
			if raw[i] == '}' {
				i++
				depth--
				continue
			}
			if raw[i] != ',' {
				return false
			}
			if i, ok = skipPlainString(raw, i+1); !ok || i >= len(raw) || raw[i] != ':' {
				return false
			}
			i++
			break // the key's value
		}
		if depth == 0 {
			return i == len(raw)
		}
	}
}

// skipPlainString returns the index after the JSON string at raw[i], if it is one made of
// printable ASCII without `<`, `>`, `&`, whose escapes are valid.
func skipPlainString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	for i++; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			i++
			if i >= len(raw) {
				return 0, false
			}
			switch raw[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) || !isHex(raw[i+3]) || !isHex(raw[i+4]) {
					return 0, false
				}
				i += 4
			default:
				return 0, false
			}
		case c < 0x20 || c >= 0x80 || c == '<' || c == '>' || c == '&':
			return 0, false
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
