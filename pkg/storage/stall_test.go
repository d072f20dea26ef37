package storage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/example"
	apistorage "k8s.io/apiserver/pkg/storage"

	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

const (
	// frozenWriterEnv hands the database's DSN to the re-executed test binary that plays the
	// frozen replica; TestHelperFrozenWriter does nothing without it.
	frozenWriterEnv = "GITOPS_STORAGE_FROZEN_WRITER_DSN"
	// frozenLine is what the helper prints right before it stops itself inside a write batch.
	frozenLine = "frozen inside a write batch, holding the counter lock"
	// stallMargin is what a write may take beyond the frozen session's end on a loaded machine.
	// With the bound it stays below the 30s batch timeout, so a write that merely waits the
	// holder out (the defect) cannot pass.
	stallMargin = 8 * time.Second
)

// stallOptions end the frozen replica's session quickly. The idle timeout still leaves the
// parent time to check that the counter lock is really held before the server ends it.
var stallOptions = func() Options {
	o := testOptions
	o.IdleInTransactionTimeout = 4 * time.Second
	o.LockTimeout = 10 * time.Second
	return o
}()

// newConfiguredBackend builds the pool as gitops-apiserver does, with ConfigurePool.
func newConfiguredBackend(t testing.TB, dsn string, opts Options) *Backend {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	ConfigurePool(cfg, opts)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b, err := NewBackend(context.Background(), pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func stallPod(name string) *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// TestFrozenReplicaDoesNotStopWrites freezes a second replica (another process on the same
// database) with SIGSTOP inside its write batch, after its statements took the counter lock and
// before COMMIT. Nothing on the client side will ever end that transaction and the socket stays
// open. A write through this process must still commit within the idle-in-transaction bound
// plus a margin, with the next RV (the frozen batch's RVs were rolled back), and the frozen
// write must never appear.
func TestFrozenReplicaDoesNotStopWrites(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	b := newConfiguredBackend(t, dsn, stallOptions)
	s := newPodStore(b)
	before, err := s.currentRV(ctx)
	if err != nil {
		t.Fatal(err)
	}

	pid := startFrozenWriter(t, dsn)
	// The fault is in place: another session holds the counter row lock.
	_, err = b.pool.Exec(ctx, `SELECT 1 FROM state FOR UPDATE NOWAIT`)
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("the frozen replica does not hold the counter lock: locking it here gave %v", err)
	}

	bound := stallOptions.IdleInTransactionTimeout + stallMargin
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	started := time.Now()
	out := &example.Pod{}
	if err := s.Create(wctx, "/pods/ns/beside-the-frozen-one", stallPod("beside-the-frozen-one"), out, 0); err != nil {
		t.Fatalf("a write failed after %s while another replica was frozen holding the counter lock (bound %s): %v",
			time.Since(started).Round(time.Millisecond), bound, err)
	}
	t.Logf("write committed %s after the other replica froze", time.Since(started).Round(time.Millisecond))
	if want := fmt.Sprint(before + 1); out.ResourceVersion != want {
		t.Errorf("write got RV %s, want %s: the frozen batch's RVs must have been rolled back", out.ResourceVersion, want)
	}
	// It was the server that ended the frozen transaction: the helper is still stopped.
	if !processStopped(t, pid) {
		t.Fatalf("helper %d is no longer stopped, so its transaction may have ended from its side", pid)
	}
	var logged []string
	rows, err := b.pool.Query(ctx, `SELECT key FROM changes WHERE rv > $1 ORDER BY rv`, before)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, key)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(logged) != 1 || logged[0] != "/pods/ns/beside-the-frozen-one" {
		t.Errorf("change log after RV %d = %q, want only this process's write", before, logged)
	}
	err = s.Get(ctx, "/pods/ns/frozen-0", apistorage.GetOptions{}, &example.Pod{})
	if !apistorage.IsNotFound(err) {
		t.Errorf("the frozen replica's uncommitted write: Get = %v, want not found", err)
	}
}

// TestHelperFrozenWriter is the frozen replica of TestFrozenReplicaDoesNotStopWrites, run in a
// process of its own. Its first write batch prints frozenLine and stops the process once its
// statements have run, before COMMIT.
func TestHelperFrozenWriter(t *testing.T) {
	dsn := os.Getenv(frozenWriterEnv)
	if dsn == "" {
		return // not the helper process
	}
	b := newConfiguredBackend(t, dsn, stallOptions)
	b.afterRV = func() error {
		fmt.Println(frozenLine)
		// Sent to this thread, not to the process: a process-directed SIGSTOP may be taken by
		// another thread, and this one could send the COMMIT before the stop reaches it.
		runtime.LockOSThread()
		return syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
	}
	s := newPodStore(b)
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("frozen-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := s.Create(ctx, "/pods/ns/"+name, stallPod(name), nil, 0)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("wrote without freezing")
}

// startFrozenWriter runs TestHelperFrozenWriter on dsn and returns its PID once it has stopped
// itself inside a write batch. The helper is killed (SIGKILL) when the test ends.
func startFrozenWriter(t *testing.T, dsn string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFrozenWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), frozenWriterEnv+"="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a stopped process never exits by itself
		_ = cmd.Wait()
	})
	frozen := make(chan error, 1)
	go func() {
		var other []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == frozenLine {
				frozen <- nil
				return
			}
			other = append(other, sc.Text())
		}
		frozen <- fmt.Errorf("the helper closed its output without freezing (%v):\n%s", sc.Err(), strings.Join(other, "\n"))
	}()
	select {
	case err := <-frozen:
		if err != nil {
			_ = cmd.Wait() // the output is closed; Wait makes stderr safe to read
			t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the helper did not freeze within 2m")
	}
	return cmd.Process.Pid
}

// processStopped reports whether pid is in state T (stopped by a signal), from /proc.
func processStopped(t *testing.T, pid int) bool {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) > 0 && fields[0] == "T"
}

// TestSessionLimitsReachTheServer reads the limits back from PostgreSQL: on a pool built with
// ConfigurePool, and on the committer's and the feed's connections of a backend whose pool was
// built without it.
func TestSessionLimitsReachTheServer(t *testing.T) {
	opts := Options{IdleInTransactionTimeout: 3 * time.Second, LockTimeout: 7 * time.Second, KeepaliveIdle: 4 * time.Second,
		KeepaliveInterval: 1500 * time.Millisecond, KeepaliveCount: 5, TCPUserTimeout: 9 * time.Second}
	want := "3s 7s 4 2 5 9000" // keepalive seconds round up; tcp_user_timeout shows in ms
	dsn := pgtest.NewDatabase(t)
	configured := newConfiguredBackend(t, dsn, opts)
	plain, err := NewBackend(context.Background(), pgtest.NewPool(t, dsn, 4), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Close)
	for name, pool := range map[string]*pgxpool.Pool{
		"ConfigurePool": configured.pool, "committer": plain.writePool, "feed": plain.feedPool,
	} {
		var got string
		err := pool.QueryRow(context.Background(), `SELECT concat_ws(' ',
			current_setting('idle_in_transaction_session_timeout'), current_setting('lock_timeout'),
			current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'),
			current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout'))`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s session: limits %q, want %q", name, got, want)
		}
	}
}
