package recorddiff

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

func manifest(group, kind, name, object string) gitops.RecordedManifest {
	return gitops.RecordedManifest{Group: group, Kind: kind, Namespace: "jane", Name: name, Object: runtime.RawExtension{Raw: []byte(object)}}
}

func raw(v string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(v)} }

// fd is a FieldDiff; "" for a side that has no value.
func fd(path, from, to string) gitops.FieldDiff {
	f := gitops.FieldDiff{Path: path}
	if from != "" {
		f.From = raw(from)
	}
	if to != "" {
		f.To = raw(to)
	}
	return f
}

func TestDiff(t *testing.T) {
	cm := func(data string) gitops.RecordedManifest {
		return manifest("", "ConfigMap", "web", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"},"data":`+data+`}`)
	}
	secret := func(data string) gitops.RecordedManifest {
		return manifest("", "Secret", "db", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":`+data+`}`)
	}
	dep := func(spec string) gitops.RecordedManifest {
		return manifest("apps", "Deployment", "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app.kubernetes.io/name":"web"}},"spec":`+spec+`}`)
	}
	tests := []struct {
		name      string
		from, to  []gitops.RecordedManifest
		limits    Limits
		want      []gitops.ResourceDiff
		truncated bool
	}{
		{name: "the same manifests: nothing", from: []gitops.RecordedManifest{cm(`{"color":"blue"}`)}, to: []gitops.RecordedManifest{cm(`{"color":"blue"}`)}},
		{name: "one field of a ConfigMap and one key of a Secret, the rest unchanged",
			from: []gitops.RecordedManifest{cm(`{"color":"blue","size":"1"}`), secret(`{"password":"redacted:aaaa","user":"redacted:bbbb"}`), dep(`{"replicas":1}`)},
			to:   []gitops.RecordedManifest{dep(`{"replicas":1}`), cm(`{"color":"red","size":"1"}`), secret(`{"password":"redacted:cccc","user":"redacted:bbbb"}`)},
			want: []gitops.ResourceDiff{
				{Kind: "ConfigMap", Namespace: "jane", Name: "web", Change: gitops.ResourceModified, Fields: []gitops.FieldDiff{fd(".data.color", `"blue"`, `"red"`)}},
				{Kind: "Secret", Namespace: "jane", Name: "db", Change: gitops.ResourceModified,
					Fields: []gitops.FieldDiff{fd(".data.password", `"redacted:aaaa"`, `"redacted:cccc"`)}},
			}},
		{name: "added and removed resources, and keys",
			from: []gitops.RecordedManifest{cm(`{"a":"1"}`)},
			to:   []gitops.RecordedManifest{dep(`{"replicas":2}`), cm(`{"b.txt":"2"}`)},
			want: []gitops.ResourceDiff{
				{Kind: "ConfigMap", Namespace: "jane", Name: "web", Change: gitops.ResourceModified,
					Fields: []gitops.FieldDiff{fd(".data.a", `"1"`, ""), fd(`.data["b.txt"]`, "", `"2"`)}},
				{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Change: gitops.ResourceAdded},
			}},
		{name: "removed", from: []gitops.RecordedManifest{secret(`{}`)},
			want: []gitops.ResourceDiff{{Kind: "Secret", Namespace: "jane", Name: "db", Change: gitops.ResourceRemoved}}},
		{name: "lists: element by element when the length is the same, else whole; types that differ: whole",
			from: []gitops.RecordedManifest{dep(`{"containers":[{"image":"a:1"},{"image":"b:1"}],"ports":[80],"replicas":1}`)},
			to:   []gitops.RecordedManifest{dep(`{"containers":[{"image":"a:2"},{"image":"b:1"}],"ports":[80,443],"replicas":"1"}`)},
			want: []gitops.ResourceDiff{{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Change: gitops.ResourceModified,
				Fields: []gitops.FieldDiff{fd(".spec.containers[0].image", `"a:1"`, `"a:2"`), fd(".spec.ports", `[80]`, `[80,443]`), fd(".spec.replicas", `1`, `"1"`)}}}},
		{name: "numbers compared as written", from: []gitops.RecordedManifest{dep(`{"replicas":10000000000000001}`)},
			to: []gitops.RecordedManifest{dep(`{"replicas":10000000000000000}`)},
			want: []gitops.ResourceDiff{{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Change: gitops.ResourceModified,
				Fields: []gitops.FieldDiff{fd(".spec.replicas", `10000000000000001`, `10000000000000000`)}}}},
		{name: "cut at the most fields", limits: Limits{MaxFields: 1},
			from: []gitops.RecordedManifest{cm(`{"a":"1","b":"1"}`), secret(`{"k":"redacted:1"}`)},
			to:   []gitops.RecordedManifest{cm(`{"a":"2","b":"2"}`), secret(`{"k":"redacted:2"}`)},
			want: []gitops.ResourceDiff{{Kind: "ConfigMap", Namespace: "jane", Name: "web", Change: gitops.ResourceModified,
				Fields: []gitops.FieldDiff{fd(".data.a", `"1"`, `"2"`)}}},
			truncated: true},
		{name: "a value too long is replaced", limits: Limits{MaxValueBytes: 8},
			from: []gitops.RecordedManifest{cm(`{"a":"short"}`)}, to: []gitops.RecordedManifest{cm(`{"a":"much longer"}`)},
			want: []gitops.ResourceDiff{{Kind: "ConfigMap", Namespace: "jane", Name: "web", Change: gitops.ResourceModified,
				Fields: []gitops.FieldDiff{fd(".data.a", `"short"`, `"\u003c13 bytes of JSON, not shown\u003e"`)}}},
			truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated, err := Diff(tt.from, tt.to, tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff (-want +got):\n%s", d)
			}
			if truncated != tt.truncated {
				t.Errorf("truncated %v, want %v", truncated, tt.truncated)
			}
		})
	}
}

func TestDiffRefusesWhatIsNotJSON(t *testing.T) {
	_, _, err := Diff([]gitops.RecordedManifest{manifest("", "ConfigMap", "x", "{")}, nil, DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "from: ConfigMap jane/x") {
		t.Errorf("error %v", err)
	}
	var v interface{}
	if json.Unmarshal([]byte(`"<13 bytes of JSON, not shown>"`), &v) != nil {
		t.Fatal("bad fixture")
	}
}
