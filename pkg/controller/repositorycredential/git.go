package repositorycredential

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gitCredentials are what a repository credential Secret holds. An SSH key wins over a
// username and password, as in the original service.
type gitCredentials struct {
	Username, Password string
	SSHPrivateKey      string
}

// none tells whether c holds no credential at all: such a Secret authenticates nothing.
func (c gitCredentials) none() bool {
	return c.Username == "" && c.Password == "" && c.SSHPrivateKey == ""
}

// anonymousURL is repoURL as anyone may ask for it: without a password or token in the URL of
// an https repository (git would send it), and with only the user name of an ssh one (who to
// log in as, no secret). A URL that does not parse comes back as it is: lsRemote fails on it.
func anonymousURL(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil || u.User == nil {
		return repoURL
	}
	if u.Scheme == "ssh" {
		u.User = url.User(u.User.Username())
	} else {
		u.User = nil
	}
	return u.String()
}

// gitTrust is what Argo CD trusts for a repository's host: a CA bundle from argocd-tls-certs-cm
// (it replaces the system roots for that host, as in Argo CD) and the known hosts from
// argocd-ssh-known-hosts-cm. The agent validates against the same material, so a credential it
// calls valid is one Argo CD can use with strict host checking.
type gitTrust struct {
	CAPEM      string
	KnownHosts string
}

// lsRemoteTimeout bounds one validation: a host that does not answer must not hold a worker.
const lsRemoteTimeout = 30 * time.Second

// errGitFailed is a git ls-remote that ran and failed; its message is git's own last words,
// which never carry the credentials (they are neither in argv nor in the URL git prints).
var errGitFailed = errors.New("git ls-remote failed")

// lsRemote runs a real `git ls-remote` against repoURL with creds. The agent needs the git
// binary (and ssh for ssh:// URLs) at run time.
//
// The credentials never appear in argv: basic auth travels as an http.extraHeader set through
// GIT_CONFIG_* environment variables, an SSH key as a 0600 file in a private temporary folder
// removed afterwards. Host keys are checked strictly against trust.KnownHosts: with no entry for
// the host the credential is invalid, exactly as it would be for Argo CD, whose repository
// Secret therefore never needs insecureIgnoreHostKey.
func lsRemote(ctx context.Context, repoURL string, creds gitCredentials, trust gitTrust) error {
	u, err := url.Parse(repoURL)
	if err != nil {
		return fmt.Errorf("%w: %v", errGitFailed, err)
	}
	dir, err := os.MkdirTemp("", "gitops-agent-lsremote-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	env, err := gitEnv(dir, u.Scheme, creds, trust)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, lsRemoteTimeout)
	defer cancel()
	// "--" keeps a URL from ever being read as an option.
	cmd := exec.CommandContext(runCtx, "git", "ls-remote", "--", repoURL, "HEAD")
	cmd.Dir, cmd.Env = dir, env
	// git runs ssh or git-remote-https as children: on timeout the whole group goes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the agent is stopping
		}
		if runCtx.Err() != nil {
			return fmt.Errorf("%w: timed out after %s", errGitFailed, lsRemoteTimeout)
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return err // git could not be started: the agent's problem, not the tenant's
		}
		return fmt.Errorf("%w: %s", errGitFailed, gitMessage(stderr.String()))
	}
	return nil
}

// gitEnv is the whole environment of the git process: nothing of the agent's own
// configuration (HOME, global and system git config, terminal prompts) takes part, only the
// proxy settings.
func gitEnv(dir, scheme string, creds gitCredentials, trust gitTrust) ([]string, error) {
	env := []string{
		"HOME=" + dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		// Only the transports the API accepts for credentials; never file:// or ext::.
		"GIT_ALLOW_PROTOCOL=https:ssh",
		"LC_ALL=C",
	}
	for _, k := range []string{"PATH", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	// Argo CD does not follow redirects either, and a redirect must not carry the header
	// to another host.
	config := [][2]string{{"http.followRedirects", "false"}}
	switch {
	case scheme == "ssh":
		if creds.SSHPrivateKey == "" {
			// Keep ssh from looking for keys elsewhere.
			creds.SSHPrivateKey = "\n"
		}
		key, err := writePrivate(dir, "key", ensureNewline(creds.SSHPrivateKey))
		if err != nil {
			return nil, err
		}
		knownHosts, err := writePrivate(dir, "known_hosts", trust.KnownHosts)
		if err != nil {
			return nil, err
		}
		env = append(env, "GIT_SSH_VARIANT=ssh", "GIT_SSH_COMMAND=ssh -F /dev/null -i "+key+
			" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="+knownHosts+
			" -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10")
	case creds.Username != "" || creds.Password != "":
		token := base64.StdEncoding.EncodeToString([]byte(creds.Username + ":" + creds.Password))
		config = append(config, [2]string{"http.extraHeader", "Authorization: Basic " + token})
	}
	if scheme == "https" && trust.CAPEM != "" {
		ca, err := writePrivate(dir, "ca.pem", trust.CAPEM)
		if err != nil {
			return nil, err
		}
		config = append(config, [2]string{"http.sslCAInfo", ca})
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env, nil
}

func writePrivate(dir, name, content string) (string, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// ensureNewline: ssh rejects a key file whose last line is not terminated, and a key pasted
// into a Secret often lacks the final newline.
func ensureNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// gitMessage is git's stderr on one line, cut to a length that fits a condition message. All
// of it: over SSH the host's own words ("ERROR: Repository not found.") come before git's.
func gitMessage(s string) string {
	msg := strings.Join(strings.Fields(s), " ")
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	return msg
}

// hostOf is the host name of an https URL without its port, which is how Argo CD keys
// argocd-tls-certs-cm; "" for anything else.
func hostOf(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil || u.Scheme != "https" {
		return ""
	}
	return u.Hostname()
}
