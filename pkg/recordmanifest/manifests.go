// Package recordmanifest turns the manifests Argo CD's repo-server rendered for a sync into
// what a DeploymentRecord keeps of them: the objects in canonical form (ordered by group,
// kind, namespace and name, each as canonical JSON), Secrets' values replaced by redaction
// markers, their digest, and the objects themselves unless they exceed the size cap. Every
// function here is pure; the agent's deploymentrecord controller calls the repo-server and
// writes the result.
package recordmanifest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// MaxBytes is the most canonical JSON a record keeps of its manifests (the sum over its
// objects). Beyond it the record keeps the digest only (status.manifestsTruncated): records
// are stored rows that every list of them returns, and a diff of manifests that large is
// better read with git.
const MaxBytes = 256 << 10

// RedactedPrefix starts the marker that replaces a Secret's value.
const RedactedPrefix = "redacted:"

// markerHexLength is how many hex digits of the keyed hash a marker keeps: 64 bits tell two
// values apart, and are too few to serve as the value's hash anywhere else.
const markerHexLength = 16

// lastApplied is the annotation kubectl apply writes: a Secret's copy of its own data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Redactor replaces a Secret's values by markers: "redacted:" and the first 16 hex digits of
// HMAC-SHA256(key, value). The same key gives the same marker for the same value, so that a
// diff of two records tells a changed value from an unchanged one; without the key a marker
// reveals nothing of the value (an unkeyed hash of a short password could be reversed by
// trying them all).
type Redactor struct {
	key []byte
}

// NewRedactor returns a Redactor with key, which must not be empty.
func NewRedactor(key []byte) (*Redactor, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("the redaction key is empty")
	}
	return &Redactor{key: bytes.Clone(key)}, nil
}

// Marker is the marker of value.
func (r *Redactor) Marker(value string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(value))
	return RedactedPrefix + hex.EncodeToString(m.Sum(nil))[:markerHexLength]
}

// Result is what a record keeps of its manifests.
type Result struct {
	// Digest is "sha256:" and the hex SHA-256 of the canonical form, redacted.
	Digest string
	// Manifests are the objects in canonical order, nil when Truncated.
	Manifests []managedv1alpha1.RecordedManifest
	// Truncated: the canonical form exceeded the cap; Manifests are left out.
	Truncated bool
}

// Build makes a record's manifests from the repo-server's (one JSON or YAML-as-JSON object per
// string, as ManifestResponse.Manifests holds them), with Secrets redacted by r, keeping them
// when their canonical JSON totals at most maxBytes. An object that is not a JSON object with
// a kind and a name is an error: the repo-server never returns one.
func Build(manifests []string, r *Redactor, maxBytes int) (Result, error) {
	type entry struct {
		m   managedv1alpha1.RecordedManifest
		raw []byte
	}
	entries := make([]entry, 0, len(manifests))
	for i, s := range manifests {
		if strings.TrimSpace(s) == "" {
			continue
		}
		var obj map[string]interface{}
		dec := json.NewDecoder(strings.NewReader(s))
		// Numbers as written: a float64 would change large integers.
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			return Result{}, fmt.Errorf("manifest %d: %w", i, err)
		}
		if obj == nil {
			continue
		}
		m, err := identify(obj)
		if err != nil {
			return Result{}, fmt.Errorf("manifest %d: %w", i, err)
		}
		if m.Group == "" && m.Kind == "Secret" {
			redactSecret(obj, r)
		}
		// encoding/json writes map keys sorted and no insignificant space: canonical.
		raw, err := json.Marshal(obj)
		if err != nil {
			return Result{}, fmt.Errorf("manifest %d: %w", i, err)
		}
		m.Object = runtime.RawExtension{Raw: raw}
		entries = append(entries, entry{m: m, raw: raw})
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i].m, entries[j].m
		if c := Compare(a, b); c != 0 {
			return c < 0
		}
		return bytes.Compare(entries[i].raw, entries[j].raw) < 0
	})

	h := sha256.New()
	size := 0
	res := Result{Manifests: make([]managedv1alpha1.RecordedManifest, 0, len(entries))}
	for _, e := range entries {
		h.Write(e.raw)
		h.Write([]byte{'\n'})
		size += len(e.raw)
		res.Manifests = append(res.Manifests, e.m)
	}
	res.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	if size > maxBytes {
		res.Manifests, res.Truncated = nil, true
	}
	return res, nil
}

// Compare orders manifests by group, kind, namespace and name.
func Compare(a, b managedv1alpha1.RecordedManifest) int {
	for _, p := range [][2]string{{a.Group, b.Group}, {a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return 0
}

// identify reads an object's group, kind, namespace and name.
func identify(obj map[string]interface{}) (managedv1alpha1.RecordedManifest, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]interface{})
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	if kind == "" || name == "" {
		return managedv1alpha1.RecordedManifest{}, fmt.Errorf("an object needs a kind and a metadata.name")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return managedv1alpha1.RecordedManifest{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	return managedv1alpha1.RecordedManifest{Group: gv.Group, Kind: kind, Namespace: namespace, Name: name}, nil
}

// redactSecret replaces each value of a Secret's data and stringData by its marker, and its
// last-applied-configuration annotation (a copy of them) too. Values that are not strings
// (invalid in a Secret, but rendered all the same) are marked by their JSON.
func redactSecret(obj map[string]interface{}, r *Redactor) {
	for _, field := range []string{"data", "stringData"} {
		values, ok := obj[field].(map[string]interface{})
		if !ok {
			if obj[field] != nil {
				obj[field] = r.Marker(jsonText(obj[field]))
			}
			continue
		}
		for k, v := range values {
			s, ok := v.(string)
			if !ok {
				s = jsonText(v)
			}
			values[k] = r.Marker(s)
		}
	}
	meta, _ := obj["metadata"].(map[string]interface{})
	if ann, ok := meta["annotations"].(map[string]interface{}); ok {
		if v, ok := ann[lastApplied]; ok {
			s, _ := v.(string)
			ann[lastApplied] = r.Marker(s)
		}
	}
}

func jsonText(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}
