package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
)

// BaseBackup takes a base backup of the running server with pg_basebackup into a new folder
// beside its data folder and returns the folder. -X stream copies the WAL written while the
// backup runs, so the folder alone restores the server as it was when the backup ended.
func (s *Server) BaseBackup() string {
	s.t.Helper()
	// A fresh name; pg_basebackup creates the folder itself, owned by the user it runs as.
	dir, err := os.MkdirTemp(s.dir, "backup-")
	if err == nil {
		err = os.Remove(dir)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", s.Port)
	if out, err := s.command(filepath.Join(s.bin, "pg_basebackup"), "-d", conninfo, "-D", dir,
		"-X", "stream", "-c", "fast", "--no-sync").CombinedOutput(); err != nil {
		s.t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	return dir
}

// RestoreFrom stops the server, replaces its data folder with a copy of the base backup in
// dir and starts it again on the same port: everything written after the backup is gone, as
// after a restore from a backup or a failover to a standby that had not received it. The
// backup stays, so it can be restored again.
func (s *Server) RestoreFrom(dir string) {
	s.t.Helper()
	s.Stop("fast")
	if out, err := s.command("sh", "-c", `rm -rf "$2" && cp -a "$1" "$2"`, "sh", dir, s.DataDir).CombinedOutput(); err != nil {
		s.t.Fatalf("replacing the data folder with the backup: %v\n%s", err, out)
	}
	s.Start()
}
