package recordmanifest

import (
	"strings"
	"testing"
)

func redactor(t *testing.T, key string) *Redactor {
	t.Helper()
	r, err := NewRedactor([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	cmBlue  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"},"data":{"color":"blue"}}`
	cmRed   = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"jane","name":"web"},"data":{"color":"red"}}`
	deploy  = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":10000000000000001}}`
	secretA = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"aHVudGVyMg==\"}}"}},"data":{"password":"aHVudGVyMg=="},"stringData":{"user":"admin"}}`
)

func TestBuild(t *testing.T) {
	r := redactor(t, "k1")
	tests := []struct {
		name      string
		manifests []string
		max       int
		// want are the objects' canonical JSON, in order; nil when truncated.
		want      []string
		truncated bool
		err       string
	}{
		{name: "none", want: []string{}},
		{name: "blank strings are skipped", manifests: []string{"", "  ", "null"}, want: []string{}},
		{name: "ordered by group, kind, namespace, name; keys sorted; numbers exact", manifests: []string{deploy, cmRed},
			max: MaxBytes, want: []string{
				`{"apiVersion":"v1","data":{"color":"red"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"}}`,
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":10000000000000001}}`}},
		{name: "a Secret's values and its last-applied copy are redacted", manifests: []string{secretA}, max: MaxBytes, want: []string{
			`{"apiVersion":"v1","data":{"password":"` + r.Marker("aHVudGVyMg==") + `"},"kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"` +
				r.Marker(`{"data":{"password":"aHVudGVyMg=="}}`) + `"},"name":"db"},"stringData":{"user":"` + r.Marker("admin") + `"}}`}},
		{name: "over the cap: digest only", manifests: []string{cmBlue, deploy}, max: 100, truncated: true},
		{name: "not JSON", manifests: []string{"kind: ConfigMap"}, err: "manifest 0"},
		{name: "no name", manifests: []string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`}, err: "metadata.name"},
		{name: "bad apiVersion", manifests: []string{`{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"x"}}`}, err: "apiVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Build(tt.manifests, r, tt.max)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.Digest, "sha256:") || len(res.Digest) != len("sha256:")+64 {
				t.Errorf("digest %q", res.Digest)
			}
			if res.Truncated != tt.truncated {
				t.Errorf("truncated %v, want %v", res.Truncated, tt.truncated)
			}
			if tt.truncated {
				if res.Manifests != nil {
					t.Errorf("manifests kept over the cap: %d", len(res.Manifests))
				}
				return
			}
			var got []string
			for _, m := range res.Manifests {
				got = append(got, string(m.Object.Raw))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("manifests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, m := range res.Manifests {
				if strings.Contains(string(m.Object.Raw), "aHVudGVyMg==") || strings.Contains(string(m.Object.Raw), "admin") {
					t.Errorf("a Secret's value left in %s", m.Object.Raw)
				}
			}
		})
	}
}

// The digest is the same for the same objects whatever their order and key order, and changes
// with a value; a Secret's digest changes with its value, and with the redaction key.
func TestDigest(t *testing.T) {
	digest := func(r *Redactor, manifests ...string) string {
		t.Helper()
		res, err := Build(manifests, r, MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		return res.Digest
	}
	r1, r2 := redactor(t, "k1"), redactor(t, "k2")
	cmRedReordered := `{"apiVersion":"v1","data":{"color":"red"},"kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"}}`
	secretB := strings.Replace(secretA, `"password":"aHVudGVyMg=="}`, `"password":"aHVudGVyMw=="}`, 1)
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"order of objects and keys", digest(r1, deploy, cmRed), digest(r1, cmRedReordered, deploy), true},
		{"a ConfigMap's value", digest(r1, cmBlue), digest(r1, cmRed), false},
		{"a Secret's value", digest(r1, secretA), digest(r1, secretB), false},
		{"the redaction key", digest(r1, secretA), digest(r2, secretA), false},
		{"a ConfigMap is not redacted, so the key does not matter", digest(r1, cmBlue), digest(r2, cmBlue), true},
	}
	for _, tt := range tests {
		if (tt.a == tt.b) != tt.same {
			t.Errorf("%s: digests %s and %s, same %v wanted", tt.name, tt.a, tt.b, tt.same)
		}
	}
}

func TestMarker(t *testing.T) {
	r := redactor(t, "k1")
	if m := r.Marker("x"); !strings.HasPrefix(m, RedactedPrefix) || len(m) != len(RedactedPrefix)+markerHexLength || m != r.Marker("x") || m == r.Marker("y") {
		t.Errorf("marker %q", m)
	}
	if _, err := NewRedactor(nil); err == nil {
		t.Error("an empty key was taken")
	}
}
