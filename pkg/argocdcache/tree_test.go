package argocdcache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	cacheutil "github.com/argoproj/argo-cd/v2/util/cache"
	appstatecache "github.com/argoproj/argo-cd/v2/util/cache/appstate"
	"github.com/argoproj/gitops-engine/pkg/health"
	"github.com/redis/go-redis/v9"
)

// startRedis runs a throwaway redis-server, the binary the local stack runs Argo CD's with
// (hack/local/argocd.sh), on a free port of 127.0.0.1, with the password given (none when
// empty).
func startRedis(t *testing.T, password string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH (hack/host-tools.sh installs it): the resource tree read is tested against a real Redis only")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	args := []string{"--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	if password != "" {
		args = append(args, "--requirepass", password)
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer client.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := client.Ping(context.Background()).Err(); err == nil {
			return addr
		} else if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not answer: %v", addr, err)
		}
	}
}

// argoWriter is Argo CD's application-controller's cache, as it builds it
// (util/cache.AddCacheFlagsToCmd): a Redis cache with the given compression under appstate.
func argoWriter(t *testing.T, addr, password string, compression cacheutil.RedisCompressionType) *appstatecache.Cache {
	client := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	t.Cleanup(func() { client.Close() })
	return appstatecache.NewCache(cacheutil.NewCache(cacheutil.NewRedisCache(client, time.Hour, compression)), time.Hour)
}

func sampleTree() *argov1alpha1.ApplicationTree {
	// In Argo CD's order (ApplicationTree.GetShards sorts the nodes).
	return &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{{
		ResourceRef: argov1alpha1.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "cm", UID: "u2"},
	}, {
		ResourceRef: argov1alpha1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web", UID: "u1"},
		Health:      &argov1alpha1.HealthStatus{Status: health.HealthStatusDegraded, Message: `Deployment "web" exceeded its progress deadline`},
	}}}
}

func TestResourceTreeReadsWhatArgoCDWrote(t *testing.T) {
	for _, tc := range []struct {
		name        string
		compression cacheutil.RedisCompressionType
		password    string
	}{
		{name: "gzip, Argo CD's default", compression: cacheutil.RedisCompressionGZip},
		{name: "uncompressed", compression: cacheutil.RedisCompressionNone},
		{name: "with a password", compression: cacheutil.RedisCompressionGZip, password: "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startRedis(t, tc.password)
			if err := argoWriter(t, addr, tc.password, tc.compression).SetAppResourcesTree("app-1", sampleTree()); err != nil {
				t.Fatal(err)
			}
			o := Options{Address: addr, Compression: string(tc.compression)}
			if tc.password != "" {
				o.PasswordFile = filepath.Join(t.TempDir(), "auth")
				if err := os.WriteFile(o.PasswordFile, []byte(tc.password+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, err := r.ResourceTree("app-1")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Nodes, sampleTree().Nodes) {
				t.Errorf("read back\n%+v\nwant\n%+v", got.Nodes, sampleTree().Nodes)
			}
			if _, err := r.ResourceTree("app-2"); !errors.Is(err, ErrNoTree) {
				t.Errorf("an Application without a tree: got %v, want ErrNoTree", err)
			}
		})
	}
}

// Argo CD splits a large tree into shards (ARGOCD_APPLICATION_TREE_SHARD_SIZE); the read
// joins them as argocd-server does.
func TestResourceTreeJoinsShards(t *testing.T) {
	addr := startRedis(t, "")
	w := argoWriter(t, addr, "", cacheutil.RedisCompressionGZip)
	want := &argov1alpha1.ApplicationTree{}
	for i := 0; i < 5; i++ {
		want.Nodes = append(want.Nodes, argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{
			Version: "v1", Kind: "Pod", Namespace: "jane", Name: fmt.Sprintf("p%d", i)},
			Health: &argov1alpha1.HealthStatus{Status: health.HealthStatusHealthy}})
	}
	// What SetAppResourcesTree writes with a shard size of 2, through the same keys.
	for i, shard := range want.GetShards(2) {
		key := "app|resources-tree|app-1"
		if i > 0 {
			key = fmt.Sprintf("%s|%d", key, i)
		}
		if err := w.SetItem(key, shard, time.Hour, false); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Options{Address: addr, Compression: "gzip"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.ResourceTree("app-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 5 {
		t.Errorf("read %d nodes of the 5 in 3 shards: %+v", len(got.Nodes), got.Nodes)
	}
}

func TestResourceTreeUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, err := New(Options{Address: addr, Compression: "gzip", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	_, err = r.ResourceTree("app-1")
	if err == nil || errors.Is(err, ErrNoTree) {
		t.Fatalf("got %v, want an error naming the address", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("an unreachable Redis held the read for %v", took)
	}
	t.Log(err)
}

func TestNewRejectsUnknownCompression(t *testing.T) {
	if _, err := New(Options{Address: "127.0.0.1:1", Compression: "zstd"}); err == nil {
		t.Error("compression zstd was accepted")
	}
}
