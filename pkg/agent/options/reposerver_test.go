package options

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRepoServerValidate(t *testing.T) {
	tests := []struct {
		name string
		rs   RepoServer
		want []string
	}{
		{"none", RepoServer{TimeoutSeconds: 60}, nil},
		{"plaintext", RepoServer{Address: "127.0.0.1:8081", Plaintext: true, TimeoutSeconds: 60}, nil},
		{"strict TLS with a CA", RepoServer{Address: "argocd-repo-server:8081", StrictTLS: true, CAFile: "/ca.pem", TimeoutSeconds: 60}, nil},
		{"no port", RepoServer{Address: "argocd-repo-server", TimeoutSeconds: 60}, []string{"--repo-server"}},
		{"both plaintext and strict", RepoServer{Address: "a:1", Plaintext: true, StrictTLS: true, CAFile: "x", TimeoutSeconds: 60},
			[]string{"choose one"}},
		{"strict without a CA", RepoServer{Address: "a:1", StrictTLS: true, TimeoutSeconds: 60}, []string{"--repo-server-ca-file"}},
		{"no timeout", RepoServer{Address: "a:1"}, []string{"--repo-server-timeout-seconds"}},
		{"hold check under a second", RepoServer{Address: "a:1", TimeoutSeconds: 60, HoldCheckInterval: time.Millisecond}, []string{"--hold-new-commit-interval"}},
	}
	for _, tt := range tests {
		errs := tt.rs.validate()
		if len(errs) != len(tt.want) {
			t.Errorf("%s: %v, want %d errors", tt.name, errs, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: %v, want one with %q", tt.name, errs[i], w)
			}
		}
	}
}

func TestRedactionKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, short := write("good", "  c2VjcmV0LWtleS1vZi0zMi1ieXRlcy0hISEhISE=\n"), write("short", "abc\n")
	if key, err := redactionKey(good); err != nil || string(key) != "c2VjcmV0LWtleS1vZi0zMi1ieXRlcy0hISEhISE=" {
		t.Errorf("key %q, %v: want the file's, space trimmed", key, err)
	}
	if _, err := redactionKey(short); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a short key: %v", err)
	}
	if _, err := redactionKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was taken")
	}
	a, err1 := redactionKey("")
	b, err2 := redactionKey("")
	if err1 != nil || err2 != nil || len(a) != 32 || string(a) == string(b) {
		t.Errorf("random keys %x and %x (%v, %v): want two different 32-byte keys", a, b, err1, err2)
	}
}
