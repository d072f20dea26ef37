package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replication is how the primary of a Pair waits for its standby.
type Replication int

const (
	// Synchronous: the primary lists the standby in synchronous_standby_names and, with
	// synchronous_commit = on, a commit returns (and becomes visible) only once the standby has
	// flushed it.
	Synchronous Replication = iota
	// Asynchronous: synchronous_standby_names is empty; the standby trails the primary.
	Asynchronous
)

// standbyName is the standby's application_name, which the primary's synchronous_standby_names
// lists.
const standbyName = "gitops_standby"

// Pair is a primary and one streaming standby of a test's own, for failover tests: kill the
// primary as a lost host would die, promote the standby.
type Pair struct {
	Primary, Standby *Server
	replication      Replication
}

// StartPair starts a primary and a standby that streams from it, made with pg_basebackup -R,
// and waits until the primary reports the standby streaming with the wanted sync_state. Both
// are stopped and removed when the test ends.
func StartPair(t testing.TB, replication Replication) *Pair {
	t.Helper()
	names := "''"
	if replication == Synchronous {
		names = "'FIRST 1 (" + standbyName + ")'"
	}
	// wal_level, max_wal_senders and the replication lines of pg_hba.conf keep initdb's defaults,
	// which allow streaming from 127.0.0.1.
	primary := StartServer(t, "synchronous_commit = on", "synchronous_standby_names = "+names)
	standby := newServer(t)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", primary.Port, standbyName)
	// -R writes standby.signal and a primary_conninfo made of -d's parameters, application_name
	// included; -X stream copies the WAL written meanwhile.
	if out, err := standby.command(filepath.Join(standby.bin, "pg_basebackup"), "-d", conninfo, "-D", standby.DataDir,
		"-R", "-X", "stream", "-c", "fast", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	// The copied configuration names the standby itself as the synchronous standby to wait
	// for: once promoted, with no standby of its own, it would then block every commit. An
	// operator that promotes a standby likewise relaxes the setting or attaches a new standby.
	standby.appendConf("synchronous_standby_names = ''")
	standby.Start()
	p := &Pair{Primary: primary, Standby: standby, replication: replication}
	p.waitStreaming(t)
	return p
}

// DSN lists the primary, then the standby, and connects to whichever accepts writes: what
// every gitops-apiserver replica is given in a primary/standby deployment. connect_timeout
// bounds the attempt on each host, so that a host that drops packets instead of refusing them
// does not hold up the next one.
func (p *Pair) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?target_session_attrs=read-write&connect_timeout=5&sslmode=disable",
		p.Primary.Port, p.Standby.Port)
}

func (p *Pair) waitStreaming(t testing.TB) {
	t.Helper()
	want := "async"
	if p.replication == Synchronous {
		want = "sync"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.Primary.DSN())
	if err != nil {
		t.Fatalf("connecting to the primary: %v", err)
	}
	defer conn.Close(context.Background())
	var state, syncState string
	for {
		err := conn.QueryRow(ctx, `SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1`, standbyName).
			Scan(&state, &syncState)
		if err == nil && state == "streaming" && syncState == want {
			return
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatalf("reading pg_stat_replication: %v", err)
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(p.Standby.dir, "server.log"))
			t.Fatalf("the standby is not streaming as %s (state %q, sync_state %q)\nstandby log:\n%s", want, state, syncState, log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KillPrimary ends the primary as the loss of its host would: every process of it stops at
// once (SIGSTOP), then dies (SIGKILL), so that none of them runs another step, such as a
// backend making a commit visible after it gave up waiting for the standby, which an orphaned
// backend of a killed postmaster does. The processes are found from the postmaster's PID in
// postmaster.pid.
func (p *Pair) KillPrimary() {
	s := p.Primary
	s.t.Helper()
	pidFile := filepath.Join(s.DataDir, "postmaster.pid")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		s.t.Fatalf("reading postmaster.pid: %v", err)
	}
	lines := strings.Split(string(raw), "\n")
	postmaster, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		s.t.Fatalf("postmaster.pid: %v", err)
	}
	// The stopped postmaster forks no more children, so the list is complete.
	if err := syscall.Kill(postmaster, syscall.SIGSTOP); err != nil {
		s.t.Fatalf("stopping the postmaster (PID %d): %v", postmaster, err)
	}
	children := childrenOf(postmaster)
	for _, pid := range children {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range append(children, postmaster) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range append(children, postmaster) {
		waitGone(s.t, pid)
	}
	// A crashed postmaster leaves its System V segment behind (line 7 of postmaster.pid: key,
	// ID), which a restart would reuse; this server never restarts.
	if len(lines) > 6 {
		if f := strings.Fields(lines[6]); len(f) == 2 {
			if out, err := exec.Command("ipcrm", "-m", f[1]).CombinedOutput(); err != nil {
				s.t.Logf("removing the killed primary's shared memory segment %s: %v %s", f[1], err, out)
			}
		}
	}
	// Nothing runs under this PID any more: the cleanup must not signal whatever reuses it.
	if err := os.Remove(pidFile); err != nil {
		s.t.Fatal(err)
	}
}

// Partition stops the standby's streaming from the primary, as a network partition between
// the two would, and waits until the primary no longer lists it: an asynchronous primary goes on
// acknowledging commits that the standby never receives, a synchronous one holds them.
func (p *Pair) Partition() {
	t := p.Standby.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	standby, err := pgx.Connect(ctx, p.Standby.DSN())
	if err != nil {
		t.Fatalf("connecting to the standby: %v", err)
	}
	defer standby.Close(context.Background())
	// A standby rereads primary_conninfo on reload and restarts its WAL receiver with it.
	for _, sql := range []string{`ALTER SYSTEM SET primary_conninfo = ''`, `SELECT pg_reload_conf()`} {
		if _, err := standby.Exec(ctx, sql); err != nil {
			t.Fatalf("%s on the standby: %v", sql, err)
		}
	}
	primary, err := pgx.Connect(ctx, p.Primary.DSN())
	if err != nil {
		t.Fatalf("connecting to the primary: %v", err)
	}
	defer primary.Close(context.Background())
	for {
		var n int
		if err := primary.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE application_name = $1`, standbyName).Scan(&n); err != nil {
			t.Fatalf("reading pg_stat_replication: %v", err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the primary still streams to the standby a minute after its primary_conninfo was cleared")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Promote makes the standby a primary and waits until it accepts writes.
func (p *Pair) Promote() {
	p.Standby.t.Helper()
	if err := p.Standby.pgctl("promote", "-w", "-t", "60"); err != nil {
		p.Standby.t.Fatal(err)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procState(child); ok && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// procState reads a process's state letter and parent from /proc/<pid>/stat.
func procState(pid int) (state byte, ppid int, ok bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces and parentheses itself.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}

// waitGone waits until pid has exited: gone, or a zombie that its new parent has not reaped yet.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if state, _, ok := procState(pid); !ok || state == 'Z' {
			return
		}
	}
	t.Fatalf("process %d did not die of SIGKILL", pid)
}
