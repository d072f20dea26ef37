package agentbench

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/bench/pkg/bench"
)

// MetricSample is one sample line of the Prometheus text exposition format.
type MetricSample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetricSamples returns the samples of the metric name (every label set) in text, which is
// in the Prometheus text exposition format, as kube-apiserver's /metrics serves it.
func ParseMetricSamples(text, name string) ([]MetricSample, error) {
	var out []MetricSample
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ' && rest[0] != '\t') {
			continue // another metric whose name starts with name
		}
		s := MetricSample{Name: name, Labels: map[string]string{}}
		if rest[0] == '{' {
			labels, after, err := parseLabels(rest[1:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			s.Labels, rest = labels, after
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("line %d: no value", n+1)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, nil
}

// parseLabels reads `a="x",b="y"}` (the opening brace already consumed) and returns the labels
// and what follows the closing brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", fmt.Errorf("unterminated label set")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("malformed label near %q", s)
		}
		key := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, "", fmt.Errorf("unterminated value of label %s", key)
		}
		labels[key] = val.String()
		s = strings.TrimLeft(s[i+1:], " \t")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		}
	}
}

// WatchMetric is kube-apiserver's gauge of the requests in flight that run long, by verb.
const WatchMetric = "apiserver_longrunning_requests"

// Watches sums WatchMetric's samples with verb="WATCH" over all their label sets, and gives
// the same sums by resource ("group/resource", "resource" for the core group).
func Watches(samples []MetricSample) (total float64, byResource map[string]float64) {
	byResource = map[string]float64{}
	for _, s := range samples {
		if s.Labels["verb"] != "WATCH" {
			continue
		}
		total += s.Value
		r := s.Labels["resource"]
		if g := s.Labels["group"]; g != "" {
			r = g + "/" + r
		}
		if r == "" {
			r = "(none)"
		}
		byResource[r] += s.Value
	}
	return total, byResource
}

// Resources is one sample of what the stack costs at a number of tenants.
type Resources struct {
	// Watches is the WATCH requests in flight on kube-apiserver; WatchesByResource splits it.
	Watches           float64
	WatchesByResource map[string]float64
	// ControllerRSS and AgentRSS are the VmRSS of argocd-application-controller and the agent, bytes.
	ControllerRSS, AgentRSS int64
	// Applications is the number of Applications in the Argo CD namespace.
	Applications int
}

// StackSampler reads a local stack's (hack/local-up.sh) costs: kube-apiserver's /metrics
// through the admin client, and the processes' memory through the PID files under LocalDir.
type StackSampler struct {
	Kube     kubernetes.Interface
	LocalDir string
}

// Sample reads the watch count and the two processes' RSS (not Applications).
func (s StackSampler) Sample(ctx context.Context) (Resources, error) {
	var r Resources
	var err error
	if r.Watches, r.WatchesByResource, err = APIServerWatches(ctx, s.Kube); err != nil {
		return r, err
	}
	if r.ControllerRSS, err = s.rss("argocd-application-controller"); err != nil {
		return r, err
	}
	if r.AgentRSS, err = s.rss("agent"); err != nil {
		return r, err
	}
	return r, nil
}

// APIServerWatches reads the WATCH requests in flight from the /metrics of the kube-apiserver
// of kube (Watches: the total and by resource).
func APIServerWatches(ctx context.Context, kube kubernetes.Interface) (float64, map[string]float64, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	samples, err := ParseMetricSamples(string(body), WatchMetric)
	if err != nil {
		return 0, nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	if len(samples) == 0 {
		return 0, nil, fmt.Errorf("kube-apiserver /metrics has no %s", WatchMetric)
	}
	total, byResource := Watches(samples)
	return total, byResource, nil
}

func (s StackSampler) rss(name string) (int64, error) {
	m, err := bench.ReadProcMemory(filepath.Join(s.LocalDir, "pids", name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("memory of %s: %w", name, err)
	}
	return m.RSS, nil
}

// sortedKeys returns the keys of m, largest value first, then by name.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
