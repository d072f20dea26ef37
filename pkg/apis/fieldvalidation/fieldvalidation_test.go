package fieldvalidation

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want is one expected error: its type and its exact field path.
type want struct {
	typ   field.ErrorType
	field string
}

func required(f string) want     { return want{field.ErrorTypeRequired, f} }
func invalid(f string) want      { return want{field.ErrorTypeInvalid, f} }
func notSupported(f string) want { return want{field.ErrorTypeNotSupported, f} }
func duplicate(f string) want    { return want{field.ErrorTypeDuplicate, f} }

// expectErrors compares the whole list, so an extra error fails as much as a missing one.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, fmt.Sprintf("%s %s", w.typ, w.field))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors:\n  %s\nwant:\n  %s\nfull: %v", strings.Join(got, "\n  "), strings.Join(exp, "\n  "), errs)
	}
}

var p = field.NewPath("spec", "url")

func TestHTTPSURL(t *testing.T) {
	cases := []struct {
		name    string
		value   string
		noQuery bool
		want    []want
	}{
		{"https with port", "https://api.my-cluster.dev.rhcloud.com:6443", true, nil},
		{"https with path", "https://example.com/k8s/clusters/c-1", true, nil},
		{"query allowed when not refused", "https://example.com/?a=b", false, nil},
		{"empty", "", true, []want{required("spec.url")}},
		{"not absolute", "api.example.com", true, []want{invalid("spec.url")}},
		// Without "https://" the host parses as a scheme, so both scheme and host are wrong.
		{"host and port only", "api.example.com:6443", true, []want{invalid("spec.url"), invalid("spec.url")}},
		{"http", "http://api.example.com", true, []want{invalid("spec.url")}},
		{"other scheme", "ftp://api.example.com", false, []want{invalid("spec.url")}},
		{"no host", "https:///api", true, []want{invalid("spec.url")}},
		{"http and no host are two errors", "http:///api", true, []want{invalid("spec.url"), invalid("spec.url")}},
		{"query", "https://api.example.com:6443?x=1", true, []want{invalid("spec.url")}},
		{"ampersand", "https://api.example.com/a&b", true, []want{invalid("spec.url")}},
		// The service appends its own query, so a fragment would swallow it just as well.
		{"fragment", "https://api.example.com/#frag", true, []want{invalid("spec.url")}},
		{"fragment allowed when not refused", "https://api.example.com/#frag", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, HTTPSURL(p, tc.value, tc.noQuery), tc.want...)
		})
	}
}

func TestGitRepositoryURL(t *testing.T) {
	web := []string{"https", "http"}
	withFile := []string{"https", "file"}
	cases := []struct {
		name     string
		value    string
		schemes  []string
		allowSCP bool
		want     []want
	}{
		{"https", "https://github.com/redhat-appstudio/managed-gitops", web, false, nil},
		{"http", "http://gitea.local/org/repo.git", web, false, nil},
		{"scp-like allowed", "git@github.com:org/repo.git", web, true, nil},
		{"scp-like refused", "git@github.com:org/repo.git", web, false, []want{invalid("spec.url")}},
		// An absolute path after the colon is not scp syntax, and not a URL either.
		{"scp-like with absolute path", "git@github.com:/org/repo.git", web, true, []want{invalid("spec.url")}},
		{"empty", "", web, true, []want{required("spec.url")}},
		{"scheme not listed", "ftp://example.com/repo", web, true, []want{invalid("spec.url")}},
		{"ssh not listed", "ssh://git@github.com/org/repo", web, false, []want{invalid("spec.url")}},
		{"relative", "github.com/org/repo", web, false, []want{invalid("spec.url")}},
		{"no host", "https:///org/repo", web, false, []want{invalid("spec.url")}},
		{"file with path", "file:///tmp/repo", withFile, false, nil},
		{"file without path", "file://", withFile, false, []want{invalid("spec.url")}},
		{"file not listed", "file:///tmp/repo", web, false, []want{invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, GitRepositoryURL(p, tc.value, tc.schemes, tc.allowSCP), tc.want...)
		})
	}
}

func TestObjectName(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		required bool
		want     []want
	}{
		{"subdomain", "my-managed-environment.v2", true, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []want{required("spec.url")}},
		{"upper case", "My-Env", false, []want{invalid("spec.url")}},
		{"underscore", "my_env", true, []want{invalid("spec.url")}},
		{"too long", strings.Repeat("a", 254), true, []want{invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ObjectName(p, tc.value, tc.required), tc.want...)
		})
	}
}

func TestNamespaceName(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		required bool
		want     []want
	}{
		{"label", "bank-loan-app", true, nil},
		{"63 characters", strings.Repeat("a", 63), true, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []want{required("spec.url")}},
		{"dot", "a.b", false, []want{invalid("spec.url")}},
		{"upper case", "Jane", false, []want{invalid("spec.url")}},
		{"64 characters", strings.Repeat("a", 64), true, []want{invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, NamespaceName(p, tc.value, tc.required), tc.want...)
		})
	}
}

func TestNamespaceList(t *testing.T) {
	ns := field.NewPath("spec", "namespaces")
	cases := []struct {
		name   string
		values []string
		want   []want
	}{
		{"nil", nil, nil},
		{"valid", []string{"bank-loan-app", "bank-account-app"}, nil},
		{"invalid entry", []string{"ok", "Not_OK"}, []want{invalid("spec.namespaces[1]")}},
		{"empty entry", []string{"", "ok"}, []want{required("spec.namespaces[0]")}},
		{"repeated", []string{"a", "b", "a"}, []want{duplicate("spec.namespaces[2]")}},
		{"repeated invalid", []string{"A", "A"}, []want{invalid("spec.namespaces[0]"), invalid("spec.namespaces[1]"), duplicate("spec.namespaces[1]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, NamespaceList(ns, tc.values), tc.want...)
		})
	}
}

type color string

func TestEnum(t *testing.T) {
	cases := []struct {
		name     string
		value    color
		required bool
		want     []want
	}{
		{"allowed", "red", true, nil},
		{"other allowed", "blue", false, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []want{required("spec.url")}},
		{"not allowed", "green", false, []want{notSupported("spec.url")}},
		{"case matters", "Red", true, []want{notSupported("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, Enum(p, tc.value, tc.required, "red", "blue"), tc.want...)
		})
	}
}

func TestConditionStatus(t *testing.T) {
	for _, ok := range []string{"True", "False", "Unknown"} {
		expectErrors(t, ConditionStatus(p, ok))
	}
	expectErrors(t, ConditionStatus(p, ""), required("spec.url"))
	expectErrors(t, ConditionStatus(p, "true"), notSupported("spec.url"))
}
