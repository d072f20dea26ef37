package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ProcMemory is the resident memory of a process, from /proc/<pid>/status.
type ProcMemory struct {
	RSS int64 `json:"rss"` // VmRSS, bytes
	HWM int64 `json:"hwm"` // VmHWM (peak RSS), bytes
}

// ParseProcStatus reads VmRSS and VmHWM from the text of /proc/<pid>/status.
func ParseProcStatus(text string) (ProcMemory, error) {
	var m ProcMemory
	found := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *int64
		switch fields[0] {
		case "VmRSS:":
			dst = &m.RSS
		case "VmHWM:":
			dst = &m.HWM
		default:
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", fields[0], err)
		}
		*dst = kb * 1024
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("no VmRSS/VmHWM in process status")
	}
	return m, nil
}

// ReadProcMemory reads the memory of the process whose PID is in pidFile.
func ReadProcMemory(pidFile string) (ProcMemory, error) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return ProcMemory{}, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return ProcMemory{}, fmt.Errorf("%s: %w", pidFile, err)
	}
	return ReadPIDMemory(pid)
}

// ReadPIDMemory reads the memory of process pid.
func ReadPIDMemory(pid int) (ProcMemory, error) {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return ProcMemory{}, err
	}
	return ParseProcStatus(string(status))
}

// Resources is a sample of what each side costs.
type Resources struct {
	Label            string     `json:"label"`
	GitOpsAPIServer  ProcMemory `json:"gitopsAPIServer"`
	KubeAPIServer    ProcMemory `json:"kubeAPIServer"`
	PostgresDBSize   int64      `json:"postgresDBSize"`
	PostgresObjects  int64      `json:"postgresObjects"` // objects and object_labels with their indexes and TOAST
	PostgresChanges  int64      `json:"postgresChanges"` // changes (the log) with its indexes and TOAST
	EtcdDBSize       int64      `json:"etcdDBSize"`
	EtcdDBSizeInUse  int64      `json:"etcdDBSizeInUse"`
	GitOpsObjects    int        `json:"gitopsObjects"`    // GitOpsDeployments stored in PostgreSQL (A and C)
	CRDObjects       int        `json:"crdObjects"`       // benchmark CRs stored in etcd (B)
	SampledAtSeconds float64    `json:"sampledAtSeconds"` // since the start of the run
}

// ResourceProbe samples the local stack.
type ResourceProbe struct {
	LocalDir    string // .local of hack/local-up.sh
	PostgresDSN string
	EtcdURL     string
	Start       time.Time
}

// Sample reads process memory, the PostgreSQL database size and the etcd database size.
func (p *ResourceProbe) Sample(ctx context.Context, label string) (Resources, error) {
	r := Resources{Label: label, SampledAtSeconds: time.Since(p.Start).Seconds()}
	var err error
	if r.GitOpsAPIServer, err = ReadProcMemory(filepath.Join(p.LocalDir, "pids", "gitops-apiserver.pid")); err != nil {
		return r, fmt.Errorf("gitops-apiserver memory: %w", err)
	}
	if r.KubeAPIServer, err = ReadProcMemory(filepath.Join(p.LocalDir, "pids", "kube-apiserver.pid")); err != nil {
		return r, fmt.Errorf("kube-apiserver memory: %w", err)
	}
	if r.PostgresDBSize, r.PostgresObjects, r.PostgresChanges, err = p.postgresSize(ctx); err != nil {
		return r, fmt.Errorf("PostgreSQL size: %w", err)
	}
	m, err := p.etcdMetrics(ctx, "etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes")
	if err != nil {
		return r, fmt.Errorf("etcd size: %w", err)
	}
	r.EtcdDBSize, r.EtcdDBSizeInUse = int64(m[0]), int64(m[1])
	return r, nil
}

// postgresSize returns the size of the database, of pkg/storage's current state (the objects
// table and its label index, object_labels) and of its changes table (0 for a table that does
// not exist).
func (p *ResourceProbe) postgresSize(ctx context.Context) (db, objects, changes int64, err error) {
	conn, err := pgx.Connect(ctx, p.PostgresDSN)
	if err != nil {
		return 0, 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT pg_database_size(current_database()),
		COALESCE(pg_total_relation_size(to_regclass('objects')), 0) + COALESCE(pg_total_relation_size(to_regclass('object_labels')), 0),
		COALESCE(pg_total_relation_size(to_regclass('changes')), 0)`).Scan(&db, &objects, &changes)
	return db, objects, changes, err
}

// PostgresVersion returns the server's version string with the settings a reader of the
// results needs: durability and the size of the buffer cache.
func (p *ResourceProbe) PostgresVersion(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, p.PostgresDSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var v, fsync, syncCommit, buffers string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit'), current_setting('shared_buffers')").
		Scan(&v, &fsync, &syncCommit, &buffers); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (fsync=%s, synchronous_commit=%s, shared_buffers=%s)", v, fsync, syncCommit, buffers), nil
}

func (p *ResourceProbe) etcdMetrics(ctx context.Context, names ...string) ([]float64, error) {
	body, err := p.etcdGet(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(body), names...)
}

// EtcdVersion returns etcd's /version document.
func (p *ResourceProbe) EtcdVersion(ctx context.Context) (string, error) {
	body, err := p.etcdGet(ctx, "/version")
	if err != nil {
		return "", err
	}
	var v struct {
		Server  string `json:"etcdserver"`
		Cluster string `json:"etcdcluster"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s (cluster version %s)", v.Server, v.Cluster), nil
}

func (p *ResourceProbe) etcdGet(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.EtcdURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, err
}

// ParseMetrics returns the values of unlabelled samples in Prometheus text format, in the
// order of names; a missing name is an error.
func ParseMetrics(text string, names ...string) ([]float64, error) {
	want := map[string]int{}
	for i, n := range names {
		want[n] = i
	}
	out := make([]float64, len(names))
	found := make([]bool, len(names))
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		i, ok := want[fields[0]]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fields[0], err)
		}
		out[i], found[i] = v, true
	}
	for i, f := range found {
		if !f {
			return nil, fmt.Errorf("no metric %s", names[i])
		}
	}
	return out, nil
}
