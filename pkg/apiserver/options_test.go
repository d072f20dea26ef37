package apiserver

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitops-service/gitops-service/pkg/storage"
)

func TestStorageFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" for valid; otherwise a substring every error must show
		check   func(t *testing.T, st storage.Options)
	}{
		{name: "defaults are the storage's", check: func(t *testing.T, st storage.Options) {
			if st != storage.DefaultOptions() {
				t.Errorf("got %+v, want the storage defaults %+v", st, storage.DefaultOptions())
			}
		}},
		{
			name: "session limits reach the storage options",
			args: []string{"--postgres-idle-in-transaction-timeout=2s", "--postgres-lock-timeout=4s",
				"--postgres-tcp-keepalive-idle=3s", "--postgres-tcp-keepalive-interval=1s", "--postgres-tcp-keepalive-count=5",
				"--postgres-tcp-user-timeout=6s", "--postgres-compaction-window=10m"},
			check: func(t *testing.T, st storage.Options) {
				want := storage.DefaultOptions()
				want.IdleInTransactionTimeout, want.LockTimeout = 2*time.Second, 4*time.Second
				want.KeepaliveIdle, want.KeepaliveInterval, want.KeepaliveCount = 3*time.Second, time.Second, 5
				want.TCPUserTimeout, want.CompactionWindow = 6*time.Second, 10*time.Minute
				if st != want {
					t.Errorf("got %+v, want %+v", st, want)
				}
			},
		},
		{name: "zero is refused, not read as the default", args: []string{"--postgres-tcp-user-timeout=0"},
			wantErr: "--postgres-tcp-user-timeout must be at least 1ms, got 0s"},
		{name: "keepalive count below one", args: []string{"--postgres-tcp-keepalive-count=0"},
			wantErr: "--postgres-tcp-keepalive-count must be at least 1, got 0"},
		{name: "a lock wait that a frozen replica outlasts", args: []string{"--postgres-lock-timeout=5s"},
			wantErr: "--postgres-lock-timeout, --postgres-idle-in-transaction-timeout: postgresql storage options: LockTimeout (5s) must be longer than IdleInTransactionTimeout (5s)"},
		{name: "a lock wait past the batch timeout", args: []string{"--postgres-lock-timeout=40s"},
			wantErr: "LockTimeout (40s) must be shorter than the 30s write batch timeout"},
		{name: "compaction window", args: []string{"--postgres-compaction-window=30s"},
			wantErr: "--postgres-compaction-window must be at least 1m, got 30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions(io.Discard, io.Discard)
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(append([]string{"--postgres-dsn=postgres://127.0.0.1/x"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, o.Postgres.Storage)
			}
		})
	}
}
