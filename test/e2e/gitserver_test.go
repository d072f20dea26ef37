//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// Private Git servers for the e2e tests, served by the test process on 127.0.0.1: the
// argocd-repo-server and the agent of the stack run on this machine and reach them there.
// Both serve the bare repositories under one root folder, addressed by their path below it.

// httpsGitServer is `git http-backend` behind HTTPS and basic auth. HTTPS because the API only
// takes https:// and ssh:// repositories for credentials; its certificate comes from a CA of
// its own, which Argo CD and the agent must be told to trust.
type httpsGitServer struct {
	URL   string // https://127.0.0.1:<port>
	CAPEM string
	srv   *http.Server
}

// startHTTPSGitServer serves the repositories under root to username and password; anyone may
// read those under publicPrefix (none if empty), as on a Git host with public and private ones.
func startHTTPSGitServer(root, username, password, publicPrefix string) *httpsGitServer {
	GinkgoHelper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	Expect(err).NotTo(HaveOccurred())
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	auth := func(w http.ResponseWriter, r *http.Request) {
		if publicPrefix != "" && strings.HasPrefix(path.Clean(r.URL.Path), publicPrefix) {
			backend.ServeHTTP(w, r)
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}
	caPEM, cert := selfSignedTLS()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	s := &httpsGitServer{
		URL:   "https://" + ln.Addr().String(),
		CAPEM: caPEM,
		srv: &http.Server{Handler: http.HandlerFunc(auth), ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}},
	}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s
}

func (s *httpsGitServer) Close() { _ = s.srv.Close() }

// selfSignedTLS is a CA certificate (PEM) and a server certificate for 127.0.0.1 signed by it.
func selfSignedTLS() (string, tls.Certificate) {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e git CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	ca, err = x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}
}

// sshGitServer serves `git-upload-pack` over SSH to the holder of one private key.
type sshGitServer struct {
	URL        string // ssh://git@127.0.0.1:<port>
	KnownHosts string // the known_hosts line of its host key
	ln         net.Listener
	root       string
	config     *ssh.ServerConfig
	wg         sync.WaitGroup
}

// startSSHGitServer accepts only the public key of clientKey.
func startSSHGitServer(root string, clientKey ssh.PublicKey) *sshGitServer {
	GinkgoHelper()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	Expect(err).NotTo(HaveOccurred())
	allowed := clientKey.Marshal()
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if subtle.ConstantTimeCompare(key.Marshal(), allowed) == 1 {
				return nil, nil
			}
			return nil, errors.New("unknown public key")
		},
	}
	config.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	s := &sshGitServer{
		URL: "ssh://git@" + ln.Addr().String(),
		// Port 22 aside, known_hosts names a host as [host]:port.
		KnownHosts: fmt.Sprintf("[127.0.0.1]:%d %s", ln.Addr().(*net.TCPAddr).Port,
			strings.TrimSpace(string(ssh.MarshalAuthorizedKey(hostSigner.PublicKey())))),
		ln: ln, root: root, config: config,
	}
	s.wg.Add(1)
	go s.serve()
	return s
}

func (s *sshGitServer) Close() {
	_ = s.ln.Close()
	s.wg.Wait()
}

func (s *sshGitServer) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handleConn(conn)
	}
}

func (s *sshGitServer) handleConn(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	_, chans, reqs, err := ssh.NewServerConn(conn, s.config)
	if err != nil {
		return // a rejected key ends here
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.handleSession(ch, chReqs)
	}
}

// handleSession runs the one command a Git client asks for: git-upload-pack '<path>'.
func (s *sshGitServer) handleSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			// Git asks for protocol v2 through GIT_PROTOCOL; nothing else gets through.
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL"
			if ok {
				env = append(env, "GIT_PROTOCOL="+kv.Value)
			}
			_ = req.Reply(ok, nil)
		case "exec":
			var cmd struct{ Command string }
			if ssh.Unmarshal(req.Payload, &cmd) != nil {
				_ = req.Reply(false, nil)
				return
			}
			_ = req.Reply(true, nil)
			status := s.uploadPack(ch, cmd.Command, env)
			_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
			return
		default:
			_ = req.Reply(false, nil)
		}
	}
}

func (s *sshGitServer) uploadPack(ch ssh.Channel, command string, env []string) uint32 {
	repo, ok := strings.CutPrefix(command, "git-upload-pack ")
	repo = strings.Trim(repo, "'")
	dir := filepath.Join(s.root, path.Clean("/"+repo))
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); !ok || err != nil {
		// What GitHub says, so that clients see a missing repository as such.
		_, _ = io.WriteString(ch.Stderr(), "ERROR: Repository not found.\n")
		return 1
	}
	cmd := exec.Command("git", "upload-pack", dir)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	// Not cmd.Stdin = ch: Wait would then wait for the client to close its side, and the
	// client waits for the exit status. Wait closes this pipe instead.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	// Protocol v2 serves commands until its input ends: pass the client's EOF on.
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return uint32(exit.ExitCode())
		}
		return 1
	}
	return 0
}

// newSSHKey is an ed25519 key pair: the private key in OpenSSH PEM form, as a Secret holds it.
func newSSHKey() (string, ssh.PublicKey) {
	GinkgoHelper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(priv, "")
	Expect(err).NotTo(HaveOccurred())
	sshPub, err := ssh.NewPublicKey(pub)
	Expect(err).NotTo(HaveOccurred())
	return string(pem.EncodeToMemory(block)), sshPub
}
