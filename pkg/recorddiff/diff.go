// Package recorddiff computes the difference, per resource and per field, between the
// manifests two DeploymentRecords keep (status.manifests): the answer of the
// deploymentrecords/diff subresource. It is pure; the registry reads the records.
package recorddiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// Limits cap what a diff holds, so that its answer stays small whatever the manifests.
type Limits struct {
	// MaxFields is the most fields listed, over every resource.
	MaxFields int
	// MaxValueBytes is the longest JSON a field's value may have; a longer one is replaced by
	// a string saying its size.
	MaxValueBytes int
}

// DefaultLimits are the server's.
var DefaultLimits = Limits{MaxFields: 1000, MaxValueBytes: 4096}

type key struct{ group, kind, namespace, name string }

func keyOf(m gitops.RecordedManifest) key { return key{m.Group, m.Kind, m.Namespace, m.Name} }

func (k key) less(o key) bool {
	if k.group != o.group {
		return k.group < o.group
	}
	if k.kind != o.kind {
		return k.kind < o.kind
	}
	if k.namespace != o.namespace {
		return k.namespace < o.namespace
	}
	return k.name < o.name
}

// Diff is the difference from the manifests from to those to: the resources added, removed and
// modified (with the fields that differ), ordered by group, kind, namespace and name, and
// whether it was cut at the limits. A manifest whose object is not JSON is an error: the agent
// writes only JSON.
func Diff(from, to []gitops.RecordedManifest, l Limits) ([]gitops.ResourceDiff, bool, error) {
	a, err := decodeAll(from)
	if err != nil {
		return nil, false, fmt.Errorf("from: %w", err)
	}
	b, err := decodeAll(to)
	if err != nil {
		return nil, false, fmt.Errorf("to: %w", err)
	}
	keys := make([]key, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })

	w := walker{limits: l}
	var out []gitops.ResourceDiff
	for _, k := range keys {
		if w.full() {
			w.truncated = true
			break
		}
		rd := gitops.ResourceDiff{Group: k.group, Kind: k.kind, Namespace: k.namespace, Name: k.name}
		va, inA := a[k]
		vb, inB := b[k]
		switch {
		case !inA:
			rd.Change = gitops.ResourceAdded
		case !inB:
			rd.Change = gitops.ResourceRemoved
		default:
			w.fields = nil
			w.compare("", va, vb)
			if len(w.fields) == 0 {
				continue
			}
			rd.Change, rd.Fields = gitops.ResourceModified, w.fields
		}
		out = append(out, rd)
	}
	return out, w.truncated, nil
}

// decodeAll decodes manifests by key; of two with the same key (which the agent does not write)
// the last one counts.
func decodeAll(ms []gitops.RecordedManifest) (map[key]interface{}, error) {
	out := make(map[key]interface{}, len(ms))
	for _, m := range ms {
		var v interface{}
		dec := json.NewDecoder(bytes.NewReader(m.Object.Raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", m.Kind, m.Namespace, m.Name, err)
		}
		out[keyOf(m)] = v
	}
	return out, nil
}

type walker struct {
	limits    Limits
	total     int
	fields    []gitops.FieldDiff
	truncated bool
}

func (w *walker) full() bool { return w.limits.MaxFields > 0 && w.total >= w.limits.MaxFields }

// compare adds the fields of a and b that differ under path: leaves one by one; a map's keys
// one by one; a list element by element when both have the same length, else whole (an
// element inserted would show every later one changed); a whole value where the other side has
// none or its type differs.
func (w *walker) compare(path string, a, b interface{}) {
	if w.full() {
		w.truncated = true
		return
	}
	switch x := a.(type) {
	case map[string]interface{}:
		if y, ok := b.(map[string]interface{}); ok {
			keys := make([]string, 0, len(x)+len(y))
			for k := range x {
				keys = append(keys, k)
			}
			for k := range y {
				if _, ok := x[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				va, inA := x[k]
				vb, inB := y[k]
				p := path + field(k)
				switch {
				case !inA:
					w.add(p, nil, vb, false, true)
				case !inB:
					w.add(p, va, nil, true, false)
				default:
					w.compare(p, va, vb)
				}
			}
			return
		}
	case []interface{}:
		if y, ok := b.([]interface{}); ok && len(x) == len(y) {
			for i := range x {
				w.compare(path+"["+strconv.Itoa(i)+"]", x[i], y[i])
			}
			return
		}
	}
	if !reflect.DeepEqual(a, b) {
		w.add(path, a, b, true, true)
	}
}

func (w *walker) add(path string, a, b interface{}, hasA, hasB bool) {
	if w.full() {
		w.truncated = true
		return
	}
	if path == "" {
		path = "."
	}
	f := gitops.FieldDiff{Path: path}
	if hasA {
		f.From = w.value(a)
	}
	if hasB {
		f.To = w.value(b)
	}
	w.fields = append(w.fields, f)
	w.total++
}

// value is v's JSON, or, when longer than the limit, a string that says how long it is.
func (w *walker) value(v interface{}) *runtime.RawExtension {
	raw, _ := json.Marshal(v)
	if w.limits.MaxValueBytes > 0 && len(raw) > w.limits.MaxValueBytes {
		w.truncated = true
		raw, _ = json.Marshal(fmt.Sprintf("<%d bytes of JSON, not shown>", len(raw)))
	}
	return &runtime.RawExtension{Raw: raw}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// field is a map key's step in a path: .name, or ["name"] for a key that is not an identifier.
func field(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}
