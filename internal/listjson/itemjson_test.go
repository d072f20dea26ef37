package listjson

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	fuzz "github.com/google/gofuzz"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestItemEncoderWritesWhatEncodingJSONWrites fills lists of every kind both groups serve,
// and metav1's PartialObjectMetadataList, with random content, and checks that StreamingLists
// (whose items go through itemEncoder) writes exactly the JSON serializer's bytes, or fails
// where it fails. The strings include every byte encoding/json escapes, invalid UTF-8 and
// U+2028; FieldsV1 is compact (the copied fast path), indented, HTML-bearing, non-ASCII or not
// JSON at all.
func TestItemEncoderWritesWhatEncodingJSONWrites(t *testing.T) {
	plain := jsonSerializer(t)
	streaming := StreamingLists{plain}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	f := fuzz.New().NilChance(0.2).NumElements(0, 3).RandSource(r).Funcs(
		func(s *string, c fuzz.Continue) { *s = randomString(c.Rand) },
		func(m *map[string]string, c fuzz.Continue) {
			if c.Intn(5) == 0 {
				return // nil
			}
			*m = map[string]string{}
			for range c.Intn(5) {
				(*m)[randomString(c.Rand)] = randomString(c.Rand)
			}
		},
		func(tm *metav1.Time, c fuzz.Continue) {
			if c.Intn(4) > 0 {
				tm.Time = time.Unix(c.Int63n(1<<35)-1<<34, c.Int63n(1e9)).In(time.FixedZone("x", 3600*(c.Intn(25)-12)))
			}
		},
		func(fv *metav1.FieldsV1, c fuzz.Continue) { fv.Raw = randomFieldsV1(c.Rand) },
		func(e *runtime.RawExtension, c fuzz.Continue) {
			if c.RandBool() {
				e.Raw = []byte(`{"a": [1, "<b>"]}`)
			}
		},
	)
	var kinds []reflect.Type
	for _, group := range []string{"managed-gitops.redhat.com", "appstudio.redhat.com"} {
		for kind, typ := range Scheme.KnownTypes(schema.GroupVersion{Group: group, Version: "v1alpha1"}) {
			if strings.HasSuffix(kind, "List") && itemEncoderFor(typ.Field(typ.NumField()-1).Type.Elem()) != nil {
				kinds = append(kinds, typ)
			}
		}
	}
	if len(kinds) < 12 {
		t.Fatalf("%d list kinds the item encoder takes, want all 12", len(kinds))
	}
	kinds = append(kinds, reflect.TypeFor[metav1.PartialObjectMetadataList]())
	objects := 0
	for _, typ := range kinds {
		encoded, failed := 0, 0
		for range 300 {
			list := reflect.New(typ)
			f.Fuzz(list.Interface())
			obj := list.Interface().(runtime.Object)
			var want, got bytes.Buffer
			wantErr := plain.Encode(obj, &want)
			gotErr := streaming.Encode(obj, &got)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("%s: error %v, encoding/json's %v", typ.Name(), gotErr, wantErr)
			}
			if wantErr != nil {
				failed++
				continue
			}
			encoded++
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s: wrote\n%s\nencoding/json wrote\n%s", typ.Name(), got.Bytes(), want.Bytes())
			}
			// Each item alone, as a get writes it.
			items := list.Elem().Field(typ.NumField() - 1)
			for i := range items.Len() {
				item := items.Index(i).Addr().Interface().(runtime.Object)
				want.Reset()
				got.Reset()
				wantErr, gotErr := plain.Encode(item, &want), streaming.Encode(item, &got)
				if (wantErr == nil) != (gotErr == nil) {
					t.Fatalf("%s item: error %v, encoding/json's %v", typ.Name(), gotErr, wantErr)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("%s item: wrote\n%s\nencoding/json wrote\n%s", typ.Name(), got.Bytes(), want.Bytes())
				}
				objects++
			}
		}
		if encoded < 100 {
			t.Errorf("%s: only %d of 300 random lists could be encoded (%d failed)", typ.Name(), encoded, failed)
		}
	}
	if objects < 1000 {
		t.Errorf("only %d single objects compared", objects)
	}
}

// randomString is empty, plain ASCII, or ASCII mixed with what encoding/json escapes or
// replaces.
func randomString(r *rand.Rand) string {
	const special = "\"\\<>&\n\r\t\b\f\x00\x1f\x7f/é日\u2028\u2029\xff\xc3"
	var b strings.Builder
	n := r.Intn(12)
	plain := r.Intn(2) == 0
	for range n {
		if plain || r.Intn(3) > 0 {
			b.WriteByte(byte('a' + r.Intn(26)))
		} else {
			i := r.Intn(len(special))
			b.WriteString(special[i : i+1])
		}
	}
	return b.String()
}

// randomFieldsV1 is nil, or managed fields JSON: compact as encoding/json writes it, or in a
// form encoding/json's compaction changes, or not JSON.
func randomFieldsV1(r *rand.Rand) []byte {
	var tree func(depth int) map[string]any
	tree = func(depth int) map[string]any {
		m := map[string]any{}
		if depth == 0 {
			return m
		}
		for range r.Intn(4) {
			key := "f:" + randomString(r)
			if r.Intn(4) == 0 {
				key = `k:{"name":"` + randomString(r) + `"}`
			}
			m[key] = tree(depth - 1)
		}
		return m
	}
	compact, _ := json.Marshal(tree(4))
	switch r.Intn(6) {
	case 0:
		return nil
	case 1:
		var indented bytes.Buffer
		json.Indent(&indented, compact, "", "  ")
		return indented.Bytes()
	case 2:
		return []byte(`{"f:a<b>&c":{}}`)
	case 3:
		return compact[:len(compact)-1] // not JSON
	default:
		return compact
	}
}

func TestIsCompactFieldsV1(t *testing.T) {
	for raw, want := range map[string]bool{
		`{}`:                              true,
		`{"f:a":{}}`:                      true,
		`{"f:a":{},"f:b":{"f:c":{}}}`:     true,
		`{"k:{\"name\":\"x\"}":{".":{}}}`: true,
		`{"f:\u003c":{}}`:                 true,
		``:                                false,
		`{`:                               false,
		`{}}`:                             false,
		`{} `:                             false,
		`{"f:a":{},}`:                     false,
		`{"f:a":{}`:                       false,
		`{"f:a" :{}}`:                     false,
		`{"f:a":1}`:                       false,
		`{"f:<":{}}`:                      false,
		`{"f:é":{}}`:                      false,
		`{"f:\x":{}}`:                     false,
		`{"f:\u12":{}}`:                   false,
		`{"f:a":{}}{}`:                    false,
		`[]`:                              false,
	} {
		if got := isCompactFieldsV1([]byte(raw)); got != want {
			t.Errorf("isCompactFieldsV1(%q) = %v, want %v", raw, got, want)
		}
	}
}

type (
	kindLike struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              struct{} `json:"spec"`
		Status            *int     `json:"status,omitempty"`
	}
	metadataFirst struct {
		metav1.ObjectMeta `json:"metadata,omitempty"`
		metav1.TypeMeta   `json:",inline"`
	}
	hidesKind struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Kind              string `json:"kind"`
	}
	untagged struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              string
	}
	stringOption struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		N                 int `json:"n,string"`
	}
	textMarshaling struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
)

func (textMarshaling) MarshalText() ([]byte, error) { return []byte("x"), nil }

// TestItemEncoderTakesOnlyWhatItEncodesAsEncodingJSONDoes checks the layouts left to
// encoding/json: anything but TypeMeta, metadata and plainly named fields, in that order.
func TestItemEncoderTakesOnlyWhatItEncodesAsEncodingJSONDoes(t *testing.T) {
	for typ, want := range map[reflect.Type]bool{
		reflect.TypeFor[kindLike]():       true,
		reflect.TypeFor[metadataFirst]():  false,
		reflect.TypeFor[hidesKind]():      false,
		reflect.TypeFor[untagged]():       false,
		reflect.TypeFor[stringOption]():   false,
		reflect.TypeFor[textMarshaling](): false,
	} {
		if got := newItemEncoder(typ) != nil; got != want {
			t.Errorf("%s: item encoder %v, want %v", typ.Name(), got, want)
		}
	}
}
