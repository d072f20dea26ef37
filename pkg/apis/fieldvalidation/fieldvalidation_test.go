package fieldvalidation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
)

var p = field.NewPath("spec", "url")

func TestHTTPSURL(t *testing.T) {
	cases := []struct {
		name    string
		value   string
		noQuery bool
		want    []apitesting.Want
	}{
		{"https with port", "https://api.my-cluster.dev.rhcloud.com:6443", true, nil},
		{"https with path", "https://example.com/k8s/clusters/c-1", true, nil},
		{"query allowed when not refused", "https://example.com/?a=b", false, nil},
		{"empty", "", true, []apitesting.Want{apitesting.Required("spec.url")}},
		{"not absolute", "api.example.com", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		// Without "https://" the host parses as a scheme, so both scheme and host are wrong.
		{"host and port only", "api.example.com:6443", true, []apitesting.Want{apitesting.Invalid("spec.url"), apitesting.Invalid("spec.url")}},
		{"http", "http://api.example.com", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"other scheme", "ftp://api.example.com", false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"no host", "https:///api", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"http and no host are two errors", "http:///api", true, []apitesting.Want{apitesting.Invalid("spec.url"), apitesting.Invalid("spec.url")}},
		{"query", "https://api.example.com:6443?x=1", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"ampersand", "https://api.example.com/a&b", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		// The service appends its own query, so a fragment would swallow it just as well.
		{"fragment", "https://api.example.com/#frag", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"fragment allowed when not refused", "https://api.example.com/#frag", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, HTTPSURL(p, tc.value, tc.noQuery), tc.want...)
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
		want     []apitesting.Want
	}{
		{"https", "https://github.com/redhat-appstudio/managed-gitops", web, false, nil},
		{"http", "http://gitea.local/org/repo.git", web, false, nil},
		{"scp-like allowed", "git@github.com:org/repo.git", web, true, nil},
		{"scp-like refused", "git@github.com:org/repo.git", web, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		// An absolute path after the colon is not scp syntax, and not a URL either.
		{"scp-like with absolute path", "git@github.com:/org/repo.git", web, true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"empty", "", web, true, []apitesting.Want{apitesting.Required("spec.url")}},
		{"scheme not listed", "ftp://example.com/repo", web, true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"ssh not listed", "ssh://git@github.com/org/repo", web, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"relative", "github.com/org/repo", web, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"no host", "https:///org/repo", web, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"file with path", "file:///tmp/repo", withFile, false, nil},
		{"file without path", "file://", withFile, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"file not listed", "file:///tmp/repo", web, false, []apitesting.Want{apitesting.Invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, GitRepositoryURL(p, tc.value, tc.schemes, tc.allowSCP), tc.want...)
		})
	}
}

func TestObjectName(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		required bool
		want     []apitesting.Want
	}{
		{"subdomain", "my-managed-environment.v2", true, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []apitesting.Want{apitesting.Required("spec.url")}},
		{"upper case", "My-Env", false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"underscore", "my_env", true, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"too long", strings.Repeat("a", 254), true, []apitesting.Want{apitesting.Invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, ObjectName(p, tc.value, tc.required), tc.want...)
		})
	}
}

func TestNamespaceName(t *testing.T) {
	cases := []struct {
		name     string
		value    string
		required bool
		want     []apitesting.Want
	}{
		{"label", "bank-loan-app", true, nil},
		{"63 characters", strings.Repeat("a", 63), true, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []apitesting.Want{apitesting.Required("spec.url")}},
		{"dot", "a.b", false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"upper case", "Jane", false, []apitesting.Want{apitesting.Invalid("spec.url")}},
		{"64 characters", strings.Repeat("a", 64), true, []apitesting.Want{apitesting.Invalid("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, NamespaceName(p, tc.value, tc.required), tc.want...)
		})
	}
}

func TestNamespaceList(t *testing.T) {
	ns := field.NewPath("spec", "namespaces")
	cases := []struct {
		name   string
		values []string
		want   []apitesting.Want
	}{
		{"nil", nil, nil},
		{"valid", []string{"bank-loan-app", "bank-account-app"}, nil},
		{"invalid entry", []string{"ok", "Not_OK"}, []apitesting.Want{apitesting.Invalid("spec.namespaces[1]")}},
		{"empty entry", []string{"", "ok"}, []apitesting.Want{apitesting.Required("spec.namespaces[0]")}},
		{"repeated", []string{"a", "b", "a"}, []apitesting.Want{apitesting.Duplicate("spec.namespaces[2]")}},
		{"repeated invalid", []string{"A", "A"}, []apitesting.Want{apitesting.Invalid("spec.namespaces[0]"), apitesting.Invalid("spec.namespaces[1]"), apitesting.Duplicate("spec.namespaces[1]")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, NamespaceList(ns, tc.values), tc.want...)
		})
	}
}

type color string

func TestEnum(t *testing.T) {
	cases := []struct {
		name     string
		value    color
		required bool
		want     []apitesting.Want
	}{
		{"allowed", "red", true, nil},
		{"other allowed", "blue", false, nil},
		{"empty optional", "", false, nil},
		{"empty required", "", true, []apitesting.Want{apitesting.Required("spec.url")}},
		{"not allowed", "green", false, []apitesting.Want{apitesting.NotSupported("spec.url")}},
		{"case matters", "Red", true, []apitesting.Want{apitesting.NotSupported("spec.url")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apitesting.ExpectErrors(t, Enum(p, tc.value, tc.required, "red", "blue"), tc.want...)
		})
	}
}

func TestConditionStatus(t *testing.T) {
	for _, ok := range []string{"True", "False", "Unknown"} {
		apitesting.ExpectErrors(t, ConditionStatus(p, ok))
	}
	apitesting.ExpectErrors(t, ConditionStatus(p, ""), apitesting.Required("spec.url"))
	apitesting.ExpectErrors(t, ConditionStatus(p, "true"), apitesting.NotSupported("spec.url"))
}
