package repositorycredential

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// lsRemote against a port nothing listens on: git runs and fails, the failure carries no
// credential, and the key file is gone afterwards.
func TestLsRemoteKeepsCredentialsOut(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the agent runs git: install it (hack/host-tools.sh does): %v", err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const password, key = "hunter2-secret", "-----BEGIN OPENSSH PRIVATE KEY-----\nS3CR3TKEY\n-----END OPENSSH PRIVATE KEY-----"
	for _, tt := range []struct {
		url   string
		creds gitCredentials
	}{
		{"https://127.0.0.1:1/org/repo.git", gitCredentials{Username: "u", Password: password}},
		{"ssh://git@127.0.0.1:1/org/repo.git", gitCredentials{SSHPrivateKey: key}},
	} {
		err := lsRemote(context.Background(), tt.url, tt.creds, gitTrust{})
		if !errors.Is(err, errGitFailed) {
			t.Fatalf("%s: err = %v, want a git failure", tt.url, err)
		}
		for _, s := range []string{password, "S3CR3TKEY", "aHVudGVy"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q carries a credential", tt.url, err)
			}
		}
		if o, _ := outcomeOfLsRemote(err); o.Reason != "InvalidCredentials" {
			t.Errorf("%s: outcome %+v", tt.url, o)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: left behind in TMPDIR: %v", tt.url, left)
		}
	}
}
