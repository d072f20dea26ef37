package agentbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/gitops-service/gitops-service/bench/pkg/bench"
)

const apiserverMetrics = `# HELP apiserver_longrunning_requests [STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"} 12
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",verb="GET",version="v1"} 3
apiserver_longrunning_requests{component="apiserver",group="argoproj.io",resource="applications",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 2
apiserver_longrunning_requests{component="apiserver",group="apps",resource="deployments",scope="cluster",subresource="",verb="WATCH",version="v1"} 7
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1"} 1
apiserver_longrunning_requests_total{verb="WATCH"} 1000
apiserver_longrunning_request{verb="WATCH"} 1000
apiserver_request_total{code="200",verb="WATCH"} 55
`

func TestParseMetricSamplesAndWatches(t *testing.T) {
	samples, err := ParseMetricSamples(apiserverMetrics, WatchMetric)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 5 {
		t.Fatalf("got %d samples, want the 5 of %s only: %+v", len(samples), WatchMetric, samples)
	}
	if s := samples[1]; s.Labels["subresource"] != "log" || s.Labels["verb"] != "GET" || s.Value != 3 {
		t.Errorf("second sample: %+v", s)
	}
	total, by := Watches(samples)
	if total != 22 {
		t.Errorf("total WATCH = %v, want 22 (12+2+7+1, not the GET)", total)
	}
	want := map[string]float64{"configmaps": 13, "argoproj.io/applications": 2, "apps/deployments": 7}
	if fmt.Sprint(by) != fmt.Sprint(want) {
		t.Errorf("by resource = %v, want %v", by, want)
	}
}

func TestParseMetricSamplesLabelValues(t *testing.T) {
	text := "m{a=\"x,y}\",b=\"say \\\"hi\\\"\\n\", c=\"\"} 1.5e+00 1700000000000\nm 4\nm{} 2\n"
	samples, err := ParseMetricSamples(text, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 3 {
		t.Fatalf("got %+v", samples)
	}
	if l := samples[0].Labels; l["a"] != "x,y}" || l["b"] != "say \"hi\"\n" || l["c"] != "" || samples[0].Value != 1.5 {
		t.Errorf("first sample: %+v", samples[0])
	}
	if samples[1].Value != 4 || len(samples[1].Labels) != 0 || samples[2].Value != 2 {
		t.Errorf("unlabelled samples: %+v", samples[1:])
	}
	for _, bad := range []string{"m{a=\"x\" 1\n", "m{a=x} 1\n", "m{a=\"x\"}\n", "m{a=\"x\"} one\n"} {
		if _, err := ParseMetricSamples(bad, "m"); err == nil {
			t.Errorf("%q: expected an error", bad)
		}
	}
}

// The RSS comes from the PID files of the stack through bench/pkg/bench, whose parsing of
// /proc/<pid>/status is tested there; this reads this very process's.
func TestStackSamplerRSS(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids", "agent.pid"), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	rss, err := StackSampler{LocalDir: dir}.rss("agent")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := bench.ParseProcStatus("VmHWM:\t 2 kB\nVmRSS:\t 1 kB\n")
	if rss < 1<<20 || m.RSS != 1024 {
		t.Errorf("rss %d of this process, parsed %d", rss, m.RSS)
	}
	if _, err := (StackSampler{LocalDir: dir}).rss("argocd-application-controller"); err == nil {
		t.Error("expected an error without a PID file")
	}
}

func TestParseSteps(t *testing.T) {
	got, err := ParseSteps("10, 100,1000")
	if err != nil || fmt.Sprint(got) != "[10 100 1000]" {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "10,10", "100,10", "0", "-5", "1e3", "ten"} {
		if _, err := ParseSteps(bad); err == nil {
			t.Errorf("%q: expected an error", bad)
		}
	}
}

func TestTenantNamespace(t *testing.T) {
	if got := TenantNamespace(7); got != "tenant-scale-0007" {
		t.Errorf("got %s", got)
	}
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func durations(vs ...float64) []time.Duration {
	var out []time.Duration
	for _, v := range vs {
		out = append(out, ms(v))
	}
	return out
}

func TestSummary(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s = append(s, ms(float64(i)))
	}
	p50, p90, p99, max := Summary(s)
	if p50 != ms(50.5) || p90 != ms(90.1) || p99 != ms(99.01) || max != ms(100) {
		t.Errorf("got %v %v %v %v", p50, p90, p99, max)
	}
	if s[0] != ms(100) {
		t.Error("Summary sorted its argument")
	}
	if a, b, c, d := Summary(nil); a+b+c+d != 0 {
		t.Error("empty samples should give zeros")
	}
}

const MiB = 1 << 20

func scaleResult() *ScaleResult {
	watches := func(extra float64) map[string]float64 {
		return map[string]float64{"configmaps": 10 + extra, "argoproj.io/applications": 1, "secrets": 5}
	}
	return &ScaleResult{
		Baseline: Resources{Watches: 16, WatchesByResource: watches(0), ControllerRSS: 100 * MiB, AgentRSS: 50 * MiB},
		Steps: []ScaleStep{
			{Tenants: 10, New: 10, Created: 1200 * time.Millisecond, Synced: 9 * time.Second,
				Resources: Resources{Watches: 18, WatchesByResource: watches(2), ControllerRSS: 110 * MiB, AgentRSS: 51 * MiB, Applications: 10},
				Ramp:      &Result{Apply: durations(100, 200, 300), Status: durations(10, 20, 30)},
				Probe:     &Result{Apply: durations(50, 60), Status: durations(5, 6)}},
			{Tenants: 100, New: 90, Created: 9 * time.Second, Synced: 70 * time.Second,
				Resources: Resources{Watches: 30, WatchesByResource: watches(14), ControllerRSS: 155 * MiB, AgentRSS: 60 * MiB, Applications: 100},
				Ramp:      &Result{Apply: durations(100, 1500), Status: durations(10, 20), MissingStatus: 1},
				Probe:     &Result{Apply: durations(50, 60), Status: durations(5, 6)}},
		},
	}
}

func TestRenderScale(t *testing.T) {
	md := RenderScale(scaleResult(), ScaleReportInfo{
		InvokedAs: "make bench-agent-scale", Started: time.Date(2026, 11, 25, 16, 30, 0, 0, time.UTC),
		Wall: 3 * time.Minute, Machine: "2 CPUs", GoVersion: "go1.x", Probe: 20, Settle: 15 * time.Second,
		Workers: 8, StepTimeout: 15 * time.Minute,
	})
	for _, want := range []string{
		"| T | new tenants | created in | all Synced after | not Synced | Applications | watches | × T=0 | × T=10 |\n",
		"| 0 | | | | | 0 | 16 | 1.00 | |\n",
		"| 10 | 10 | 1.2s | 9s | 0 | 10 | 18 | 1.12 | 1.00 |\n",
		"| 100 | 90 | 9s | 1m10s | 0 | 100 | 30 | 1.88 | 1.67 |\n",
		"| 0 | 100.0 | 1.00 | | | | 50.0 | 1.00 | | |\n",
		// T=10: 10 MiB more controller RSS over 10 Applications = 1024 KiB each.
		"| 10 | 110.0 | 1.10 | 1.00 | 1024 | 1024 | 51.0 | 1.02 | 102 | 102 |\n",
		// T=100: 55 MiB over 100 Applications since T=0, 45 MiB over 90 since T=10.
		"| 100 | 155.0 | 1.55 | 1.41 | 563 | 512 | 60.0 | 1.20 | 102 | 102 |\n",
		"| 10 | 10 new tenants | 3 | 0 | 200 | 298 | 20 | 30 |\n",
		"| 100 | 90 new tenants | 2 | 1 | 800 | 1486 | 15 | 20 |\n",
		"| 100 | probe | 2 | 0 | 55 | 60 | 6 | 6 |\n",
		"| resource | T=0 | T=10 | T=100 |\n",
		"| configmaps | 10 | 12 | 24 |\n",
		"- Watches flat in T within 20%: 30 at T=100; against 16 at T=0 × 1.88: **missed**; against 18 at T=10 × 1.67: **missed**.",
		"155.0 MiB at T=100; against 100.0 MiB at T=0 × 1.55, 563 KiB per Application added; against 110.0 MiB at T=10 × 1.41, 512 KiB per Application added.",
		"- 1000 tenants all Synced within 10m0s: not measured (largest T: 100).",
		"- Both p99 under 1s at T=100 (new tenants): apply 1486 ms, status 20 ms: **missed**.",
		"- Both p99 under 1s at T=100 (probe): apply 60 ms, status 6 ms: **met**.",
		"| command | `make bench-agent-scale` |",
		"| date | 2026-11-25 16:30 UTC (the whole run took 3m0s) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	// Resources whose watch count changed come first, then the others by size.
	if i, j := strings.Index(md, "| configmaps |"), strings.Index(md, "| secrets |"); i < 0 || j < i {
		t.Errorf("watch table order:\n%s", md)
	}
}

func TestRenderScaleTargetsAt1000(t *testing.T) {
	res := &ScaleResult{
		Baseline: Resources{Watches: 100, ControllerRSS: 100 * MiB, AgentRSS: 50 * MiB},
		Steps: []ScaleStep{{Tenants: 1000, New: 1000, Synced: 9 * time.Minute,
			Resources: Resources{Watches: 110, ControllerRSS: 115 * MiB, AgentRSS: 60 * MiB, Applications: 1000},
			Ramp:      &Result{}}},
	}
	md := RenderScale(res, ScaleReportInfo{})
	for _, want := range []string{
		"against 100 at T=0 × 1.10: **met**.",
		"115.0 MiB at T=1000; against 100.0 MiB at T=0 × 1.15, 15 KiB per Application added. No verdict",
		"the step to T=1000 (1000 new tenants) was Synced after 9m0s (0 not Synced): **met**",
		"not measured (no step at T=100)",
		"no probe was run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	res.Steps[0].NotSynced = 3
	if md := RenderScale(res, ScaleReportInfo{}); !strings.Contains(md, "(3 not Synced): **missed**") {
		t.Errorf("3 not Synced should miss the target:\n%s", md)
	}
}

func TestRenderScaleEnvironments(t *testing.T) {
	res := scaleResult()
	local := func(ctrl, agentRSS float64, apps int) Resources {
		return Resources{Watches: 30, ControllerRSS: int64(ctrl * MiB), AgentRSS: int64(agentRSS * MiB), Applications: apps}
	}
	res.Environments = &EnvironmentsResult{
		N: 5, Tenants: 100,
		Before: EnvironmentSample{Resources: local(150, 60, 100), RemoteWatches: 4},
		Distinct: &EnvironmentPhase{Environments: 5, Synced: 12300 * time.Millisecond,
			Sample:  EnvironmentSample{Resources: local(160, 61, 105), RemoteWatches: 204, ClusterSecrets: 5},
			Latency: &Result{Apply: durations(100, 200), Status: durations(10, 20)}},
		Shared: &EnvironmentPhase{Environments: 5, Synced: 4 * time.Second, NotSynced: 1,
			Sample: EnvironmentSample{Resources: local(162, 61.5, 110), RemoteWatches: 244, ClusterSecrets: 6}},
	}
	md := RenderScale(res, ScaleReportInfo{Settle: 15 * time.Second})
	for _, want := range []string{
		"## Environments to a remote cluster\n",
		"with the 100 tenants in place",
		"tenants 1..5 each get a ServiceAccount of their own",
		"tenants 6..10 each get an environment of their own",
		"| before | 0 |  |  | 0 | 4 | 150.0 | 60.0 | 30 | 100 |\n",
		"| distinct credentials | 5 | 12.3s | 0 | 5 | 204 | 160.0 | 61.0 | 30 | 105 |\n",
		"| shared credentials | 10 | 4s | 1 | 6 | 244 | 162.0 | 61.5 | 30 | 110 |\n",
		// 200 watches, 10 MiB, 1 MiB over 5 environments.
		"| distinct credentials | 5 | 5 | 200 | 40.0 | 10.0 | 2048 | 1.0 | 205 |\n",
		"| shared credentials | 5 | 1 | 40 | 8.0 | 2.0 | 410 | 0.5 | 102 |\n",
		"| distinct credentials | 2 | 0 | 150 | 199 | 15 | 20 |\n",
		"- **Distinct credentials cost per environment**: 1.00 cluster Secret(s), 40.0 watches on the remote kube-apiserver, 2048 KiB of application-controller RSS and 205 KiB of agent RSS",
		"- **Shared credentials**: the 5 environments together added 1 cluster Secret(s), 40 watches on the remote kube-apiserver and 2.0 MiB of application-controller RSS (8.0 watches, 410 KiB per environment); that is 1.00 times the watches of one environment with credentials of its own",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, "## Environments to a remote cluster"), strings.Index(md, "## Targets"); i < 0 || j < i {
		t.Error("the environments section should come before the targets")
	}
	// Without the environments step, no section; with it ended before the first phase, a note.
	if md := RenderScale(scaleResult(), ScaleReportInfo{}); strings.Contains(md, "Environments to a remote cluster") {
		t.Error("a section without the environments step")
	}
	res.Environments.Distinct, res.Environments.Shared = nil, nil
	if md := RenderScale(res, ScaleReportInfo{}); !strings.Contains(md, "The run ended before the first phase was measured.") {
		t.Errorf("no note of the missing phases:\n%s", md)
	}
}

// The environments' kubeconfig must load as the agent loads it (clientcmd.Load), with the
// server, token and CA given.
func TestTokenKubeconfig(t *testing.T) {
	raw, err := tokenKubeconfig("https://127.0.0.1:17043", "tok", []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("no usable current context: %+v", cfg)
	}
	if c, u := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]; c.Server != "https://127.0.0.1:17043" ||
		string(c.CertificateAuthorityData) != "ca" || u.Token != "tok" {
		t.Errorf("cluster %+v, user %+v", c, u)
	}
}
