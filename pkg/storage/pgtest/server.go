package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvBin names the variable holding the folder of PostgreSQL's server binaries (initdb, pg_ctl),
// which hack/test-postgres.sh exports.
const EnvBin = "GITOPS_TEST_POSTGRES_BIN"

// Server is a PostgreSQL server of one test's own, for tests that stop, crash or reconfigure it:
// doing that to the shared server of hack/test-postgres.sh would break every other package's
// tests running beside them.
type Server struct {
	t       testing.TB
	bin     string
	dir     string
	DataDir string
	Port    int
	// asPostgres prefixes every server command: PostgreSQL refuses to run as root.
	asPostgres []string
}

// StartServer initialises a server in a temporary folder, listening on 127.0.0.1 on a free
// port, starts it and stops and removes it when the test ends. extraConf lines are appended to
// postgresql.conf.
func StartServer(t testing.TB, extraConf ...string) *Server {
	t.Helper()
	s := newServer(t)
	if out, err := s.command(filepath.Join(s.bin, "initdb"), "--no-sync", "-D", s.DataDir, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.appendConf(extraConf...)
	s.Start()
	return s
}

// newServer prepares the folder, owned by the user the server runs as, and the free port of a
// server whose data folder the caller creates; the server is stopped and the folder removed
// when the test ends.
func newServer(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		t.Fatalf("%s is not set; run the tests as: hack/test-postgres.sh go test ./...", EnvBin)
	}
	dir, err := os.MkdirTemp("", "gitops-pg-own-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir, DataDir: filepath.Join(dir, "data")}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(s.DataDir, "postmaster.pid")); err == nil {
			_ = s.pgctl("stop", "-m", "immediate", "-w")
		}
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.asPostgres = []string{"runuser", "-u", "postgres", "--"}
	}
	s.Port = freePort(t)
	return s
}

// appendConf appends the server's own address, port and socket folder, then lines, to
// postgresql.conf. Later settings win, so this also replaces those that a base backup copied
// from its primary.
func (s *Server) appendConf(lines ...string) {
	s.t.Helper()
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\nmax_connections = 100\nlog_min_messages = warning\n", s.Port, s.dir)
	for _, line := range lines {
		conf += line + "\n"
	}
	// Written by the postgres user, who owns the data folder.
	write := s.command("sh", "-c", `cat >> "$1"`, "sh", filepath.Join(s.DataDir, "postgresql.conf"))
	write.Stdin = strings.NewReader(conf)
	if out, err := write.CombinedOutput(); err != nil {
		s.t.Fatalf("writing postgresql.conf: %v\n%s", err, out)
	}
}

// DSN is the superuser DSN of database "postgres".
func (s *Server) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
}

// Start starts the stopped server and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.pgctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		s.t.Fatalf("starting PostgreSQL: %v\n%s", err, log)
	}
}

// Stop stops the server with pg_ctl's mode: "immediate" is a crash, "fast" a clean shutdown.
func (s *Server) Stop(mode string) {
	s.t.Helper()
	if err := s.pgctl("stop", "-m", mode, "-w"); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) pgctl(args ...string) error {
	cmd := s.command(filepath.Join(s.bin, "pg_ctl"), append([]string{"-D", s.DataDir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl %v: %v\n%s", args, err, out)
	}
	return nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.asPostgres...), name), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
