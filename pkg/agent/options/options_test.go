package options

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(o *Options)
		want   []string
	}{
		{name: "defaults", change: func(*Options) {}},
		{name: "unknown controller", change: func(o *Options) { o.Controllers = []string{"*", "-bindings"} },
			want: []string{`--controllers: unknown controller "-bindings"`}},
		{name: "renew deadline at the lease duration", change: func(o *Options) { o.LeaderElection.RenewDeadline = 15 * time.Second },
			want: []string{"--leader-elect-lease-duration 15s: want more than --leader-elect-renew-deadline (15s)"}},
		{name: "renew deadline too short for the retry period", change: func(o *Options) { o.LeaderElection.RenewDeadline = 2 * time.Second },
			want: []string{"--leader-elect-renew-deadline 2s: want more than 1.2 times --leader-elect-retry-period (2s)"}},
		{name: "no retry period", change: func(o *Options) { o.LeaderElection.RetryPeriod = 0 },
			want: []string{"--leader-elect-retry-period 0s: want a positive duration"}},
		{name: "bad lease namespace", change: func(o *Options) { o.LeaderElection.Namespace = "Gitops_Service" },
			want: []string{`--leader-elect-resource-namespace "Gitops_Service"`}},
		{name: "an instance", change: func(o *Options) { o.Instance = "engine-1" }},
		{name: "bad instance", change: func(o *Options) { o.Instance = "engine.1" }, want: []string{`--instance "engine.1"`}},
		{name: "no owner share limit", change: func(o *Options) { o.PlacementMaxOwnerShare = 1 }},
		{name: "a small owner share", change: func(o *Options) { o.PlacementMaxOwnerShare = 0.002 }},
		{name: "owner share over 1", change: func(o *Options) { o.PlacementMaxOwnerShare = 50 },
			want: []string{"--placement-max-owner-share 50: want a fraction of each instance's capacity, more than 0 and at most 1"}},
		{name: "owner share 0", change: func(o *Options) { o.PlacementMaxOwnerShare = 0 }, want: []string{"--placement-max-owner-share 0:"}},
		{name: "owner share NaN", change: func(o *Options) { o.PlacementMaxOwnerShare = math.NaN() }, want: []string{"--placement-max-owner-share NaN:"}},
		{name: "Argo CD's Redis", change: func(o *Options) {
			o.ArgoRedis.Address, o.ArgoRedis.PasswordFile, o.ArgoRedis.Compression = "argocd-redis.argocd:6379", "/etc/argocd-redis/auth", "none"
		}},
		{name: "Redis compression unknown", change: func(o *Options) { o.ArgoRedis.Compression = "zstd" },
			want: []string{`--argocd-redis-compress "zstd": want gzip or none`}},
		{name: "Redis password without an address", change: func(o *Options) { o.ArgoRedis.PasswordFile = "/x" },
			want: []string{"need --argocd-redis"}},
		{name: "no Redis timeout", change: func(o *Options) { o.ArgoRedis.Timeout = 0 }, want: []string{"--argocd-redis-timeout 0s"}},
		{name: "preview TTL", change: func(o *Options) { o.PreviewTTL = 15 * time.Minute }},
		{name: "no preview TTL", change: func(o *Options) { o.PreviewTTL = 0 },
			want: []string{"--preview-ttl 0s: want a duration of at least 1s, such as 30m or 1h"}},
		{name: "timings unchecked without leader election", change: func(o *Options) {
			o.LeaderElection = LeaderElection{Enabled: false}
		}},
		{name: "every problem at once", change: func(o *Options) {
			o.Workers, o.OperationRetention, o.LocalServer, o.ArgoNamespace = 0, 0, "http://x", ""
		}, want: []string{"--workers 0", "--operation-retention 0s", `--local-cluster-server "http://x"`, `--argocd-namespace ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := New()
			tc.change(o)
			err := o.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate passed, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
