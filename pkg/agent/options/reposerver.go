package options

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/argoproj/argo-cd/v2/reposerver/apiclient"
	"k8s.io/klog/v2"

	"github.com/gitops-service/gitops-service/pkg/agent"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// minRedactionKey is the shortest redaction key taken: an HMAC key shorter than 128 bits
// could be guessed.
const minRedactionKey = 16

func (rs *RepoServer) validate() []error {
	var errs []error
	if rs.Address != "" {
		if _, _, err := net.SplitHostPort(rs.Address); err != nil {
			errs = append(errs, fmt.Errorf("--repo-server %q: want host:port: %v", rs.Address, err))
		}
	}
	if rs.Plaintext && rs.StrictTLS {
		errs = append(errs, errors.New("--repo-server-plaintext and --repo-server-strict-tls: choose one"))
	}
	if rs.StrictTLS && rs.CAFile == "" {
		errs = append(errs, errors.New("--repo-server-strict-tls needs --repo-server-ca-file"))
	}
	if rs.HoldCheckInterval != 0 && rs.HoldCheckInterval < time.Second {
		errs = append(errs, fmt.Errorf("--hold-new-commit-interval %s: want at least 1s", rs.HoldCheckInterval))
	}
	if rs.TimeoutSeconds < 1 {
		errs = append(errs, fmt.Errorf("--repo-server-timeout-seconds %d: want at least 1", rs.TimeoutSeconds))
	}
	return errs
}

// config is how the agent renders records' manifests; nil without --repo-server.
func (rs *RepoServer) config() (*agent.Manifests, error) {
	if rs.Address == "" {
		return nil, nil
	}
	tls := apiclient.TLSConfiguration{DisableTLS: rs.Plaintext, StrictValidation: rs.StrictTLS}
	if rs.StrictTLS {
		pem, err := os.ReadFile(rs.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--repo-server-ca-file: %w", err)
		}
		tls.Certificates = x509.NewCertPool()
		if !tls.Certificates.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--repo-server-ca-file %s: no PEM certificate", rs.CAFile)
		}
	}
	key, err := redactionKey(rs.RedactionKeyFile)
	if err != nil {
		return nil, err
	}
	redactor, err := recordmanifest.NewRedactor(key)
	if err != nil {
		return nil, err
	}
	return &agent.Manifests{RepoServer: apiclient.NewRepoServerClientset(rs.Address, rs.TimeoutSeconds, tls), Redactor: redactor,
		HoldCheckInterval: rs.HoldCheckInterval}, nil
}

// redactionKey reads the key of file (surrounding white space dropped), or makes a random one
// when file is empty.
func redactionKey(file string) ([]byte, error) {
	if file == "" {
		klog.InfoS("no --redaction-key-file: Secrets' values are redacted with a random key of this process, so that after a restart they look changed in diffs")
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("making a redaction key: %w", err)
		}
		return key, nil
	}
	key, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--redaction-key-file: %w", err)
	}
	key = bytes.TrimSpace(key)
	if len(key) < minRedactionKey {
		return nil, fmt.Errorf("--redaction-key-file %s: the key has %d bytes, want at least %d", file, len(key), minRedactionKey)
	}
	return key, nil
}
