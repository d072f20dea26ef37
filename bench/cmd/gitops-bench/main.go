// gitops-bench runs one workload through client-go against GitOpsDeployments served three ways
// on the local stack (hack/local-up.sh) and writes docs/performance.md and a PNG chart:
//
//	A  through the kube-apiserver aggregation layer to gitops-apiserver (PostgreSQL)
//	B  the same kind as a CRD (schema generated from our OpenAPI definitions) on kube-apiserver (etcd)
//	C  gitops-apiserver directly, without the aggregation hop
//
// See issue 6 and docs/performance.md. `make bench` runs it.
package main

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/gitops-service/gitops-service/bench/pkg/bench"
)

type options struct {
	kubeconfig   string
	localDir     string
	direct       string
	directCA     string
	crdGroup     string
	targets      string
	sizes        string
	concurrency  string
	largeC       string
	watchers     string
	rounds       int
	serialMaxN   int
	listReps     int
	watchWrites  int
	getMin       int
	etcdURL      string
	pgDSNFile    string
	out          string
	chart        string
	jsonOut      string
	fromJSON     string
	printCRD     bool
	namespaceFmt string
	invokedAs    string
	note         string
	hugeN        int
	hugeTargets  string
	hugeSkip     string
	hugeRounds   int
	heapProfiles string
	profileGets  string
	profileFor   time.Duration
	contentType  string
}

// stepAliases name the skippable steps for -huge-skip.
var stepAliases = map[string]string{
	"get":    bench.StepGet,
	"update": bench.StepUpdateStatus,
	"list":   bench.StepList,
	"paged":  bench.StepListPaged,
	"label":  bench.StepListLabel,
	"watch":  bench.StepWatch,
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", ".local/kubeconfig", "admin kubeconfig of the kube-apiserver (targets A and B; C uses its bearer token)")
	flag.StringVar(&o.localDir, "local-dir", ".local", "state folder of hack/local-up.sh (PIDs for RSS, certificates)")
	flag.StringVar(&o.direct, "direct-server", "https://127.0.0.1:18443", "gitops-apiserver's own address (target C)")
	flag.StringVar(&o.directCA, "direct-ca", "", "CA of gitops-apiserver's serving certificate (default <local-dir>/certs/ca.crt)")
	flag.StringVar(&o.crdGroup, "crd-group", "bench.gitops-service.io", "API group of the benchmark CRD (target B)")
	flag.StringVar(&o.targets, "targets", "A,B,C", "targets to run, comma-separated")
	flag.StringVar(&o.sizes, "n", "1000", "object counts N, comma-separated (10000 and 100000 are available)")
	flag.StringVar(&o.concurrency, "c", "1,8,32", "concurrent clients C for create, get, update status and delete")
	flag.StringVar(&o.watchers, "w", "1,100", "watcher counts W for the watch delivery step")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds; targets take turns in each, in a rotating order")
	flag.IntVar(&o.serialMaxN, "small-n", 1000, "largest N that runs every -c; larger N run -c-large (a serial run at a large N measures the same latencies for much longer)")
	flag.StringVar(&o.largeC, "c-large", "8,32", "concurrent clients C for N larger than -small-n")
	flag.IntVar(&o.listReps, "list-reps", 0, "repetitions of each list step (0: 20 at N≤1000, 5 at N≤10000, 3 above)")
	flag.IntVar(&o.watchWrites, "watch-writes", 200, "writes observed by the watch delivery step")
	flag.IntVar(&o.getMin, "get-min", 10000, "least gets of each get step: whole passes over the N objects (one pass over 1,000 with 32 clients is under half a second, too short a sample)")
	flag.StringVar(&o.etcdURL, "etcd-url", "http://127.0.0.1:12379", "etcd client URL (for its /metrics)")
	flag.StringVar(&o.pgDSNFile, "postgres-dsn-file", "", "file with gitops-apiserver's PostgreSQL DSN (default <local-dir>/postgres.dsn)")
	flag.StringVar(&o.out, "out", "docs/performance.md", "Markdown report to write")
	flag.StringVar(&o.chart, "chart", "docs/performance.png", "PNG chart to write")
	flag.StringVar(&o.jsonOut, "json", "docs/performance.json", "raw results to write (empty: none)")
	flag.StringVar(&o.fromJSON, "from-json", "", "only render the report and chart from results written earlier")
	flag.BoolVar(&o.printCRD, "print-crd", false, "print the benchmark CRD as YAML and exit")
	flag.StringVar(&o.namespaceFmt, "namespace", "gitops-bench-%s", "namespace of each target (%s is its lower-case name)")
	flag.StringVar(&o.invokedAs, "invoked-as", "", "the command that ran this one (make bench records itself), for the report")
	flag.StringVar(&o.note, "note", "", "a remark to print at the top of the report (for example what else ran on the machine)")
	flag.IntVar(&o.hugeN, "huge-n", 100000, "N from which on a reduced plan runs: only -huge-targets, without the -huge-skip steps, for -huge-rounds rounds (a full plan at 100,000 takes hours)")
	flag.StringVar(&o.hugeTargets, "huge-targets", "A,B", "targets that run at N ≥ -huge-n")
	flag.StringVar(&o.hugeSkip, "huge-skip", "get,list,watch", "steps left out at N ≥ -huge-n, comma-separated, of get, update (status), list (full), paged, label, watch")
	flag.IntVar(&o.hugeRounds, "huge-rounds", 1, "rounds at N ≥ -huge-n")
	flag.StringVar(&o.heapProfiles, "heap-profiles", "", "folder to write gitops-apiserver's heap profile to (from -direct-server's /debug/pprof/heap) whenever A or C holds its N objects")
	flag.StringVar(&o.profileGets, "profile-gets", "", "instead of the plan: store the first -n objects in each target, run gets with the largest -c for -profile-for, "+
		"and write each server's CPU profile and every process's CPU time per get to this folder")
	flag.DurationVar(&o.profileFor, "profile-for", 20*time.Second, "how long -profile-gets runs the gets of each target, over -rounds rounds (the CPU profiles cover the first)")
	flag.StringVar(&o.contentType, "content-type", bench.ContentTypeProtobuf, "what targets A and C speak for single objects (create, get, update status, delete): protobuf (our typed clientset) or json (the dynamic client); B, a CRD, always speaks JSON, and lists and watches read JSON everywhere")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "gitops-bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]interface{}{time.Now().Format("15:04:05")}, args...)...)
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func run(ctx context.Context, o options) error {
	if o.printCRD {
		crd, err := bench.GitOpsDeploymentCRD(o.crdGroup)
		if err != nil {
			return err
		}
		out, err := yaml.Marshal(crd)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(out)
		return err
	}
	if o.fromJSON != "" {
		raw, err := os.ReadFile(o.fromJSON)
		if err != nil {
			return err
		}
		var rep bench.Report
		if err := json.Unmarshal(raw, &rep); err != nil {
			return err
		}
		if o.note != "" {
			rep.Meta.Note = o.note
		}
		return write(o, &rep, false)
	}

	sizes, err := ints(o.sizes)
	if err != nil {
		return fmt.Errorf("-n: %w", err)
	}
	cs, err := ints(o.concurrency)
	if err != nil {
		return fmt.Errorf("-c: %w", err)
	}
	largeCs, err := ints(o.largeC)
	if err != nil {
		return fmt.Errorf("-c-large: %w", err)
	}
	ws, err := ints(o.watchers)
	if err != nil {
		return fmt.Errorf("-w: %w", err)
	}
	if o.directCA == "" {
		o.directCA = filepath.Join(o.localDir, "certs", "ca.crt")
	}
	if o.pgDSNFile == "" {
		o.pgDSNFile = filepath.Join(o.localDir, "postgres.dsn")
	}
	start := time.Now()

	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	targets, err := setUp(ctx, o, cfg, kube)
	if err != nil {
		return err
	}
	directCfg, err := directConfig(o, cfg)
	if err != nil {
		return err
	}

	dsn, err := os.ReadFile(o.pgDSNFile)
	if err != nil {
		return err
	}
	probe := &bench.ResourceProbe{LocalDir: o.localDir, PostgresDSN: strings.TrimSpace(string(dsn)), EtcdURL: o.etcdURL, Start: start}
	meta, err := describe(ctx, o, kube, probe, targets)
	if err != nil {
		return err
	}

	for _, t := range targets {
		if err := t.Clean(ctx); err != nil {
			return fmt.Errorf("cleaning %s: %w", t.Name, err)
		}
	}
	if o.profileGets != "" {
		return profileGets(ctx, o, cfg, directCfg, targets, sizes[0], cs[len(cs)-1])
	}
	meta.GetMin = o.getMin
	rep := &bench.Report{Meta: meta}
	sample := func(label string) error {
		r, err := probe.Sample(ctx, label)
		if err != nil {
			return err
		}
		rep.Resources = append(rep.Resources, r)
		logf("resources %s: gitops-apiserver RSS %d MiB, kube-apiserver RSS %d MiB, PostgreSQL %d MiB, etcd %d MiB",
			label, r.GitOpsAPIServer.RSS>>20, r.KubeAPIServer.RSS>>20, r.PostgresDBSize>>20, r.EtcdDBSize>>20)
		return nil
	}
	if err := sample("baseline (nothing stored)"); err != nil {
		return err
	}

	type key struct {
		target string
		n, c   int
	}
	results := map[key]bench.Result{}
	var order []key
	hugeSkip := map[string]bool{}
	for _, a := range strings.Split(o.hugeSkip, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		step, ok := stepAliases[a]
		if !ok {
			return fmt.Errorf("-huge-skip: unknown step %q", a)
		}
		hugeSkip[step] = true
	}
	hugeTargets := map[string]bool{}
	for _, t := range strings.Split(o.hugeTargets, ",") {
		hugeTargets[strings.ToUpper(strings.TrimSpace(t))] = true
	}
	for _, n := range sizes {
		ncs := cs
		if n > o.serialMaxN {
			ncs = largeCs
		}
		readC := ncs[len(ncs)-1]
		rounds, nTargets, skip := o.rounds, targets, map[string]bool(nil)
		if n >= o.hugeN {
			rounds, nTargets, skip = o.hugeRounds, nil, hugeSkip
			for _, t := range targets {
				if hugeTargets[t.Name] {
					nTargets = append(nTargets, t)
				}
			}
			rep.Meta.Reduced = reducedPlan(o, n, nTargets, ncs, hugeSkip)
		}
		for round := range rounds {
			for ci, c := range ncs {
				for k := range nTargets {
					t := nTargets[(k+round+ci)%len(nTargets)]
					reads := c == readC
					w := &bench.Workload{N: n, C: c, Reads: reads, Watchers: ws, ListReps: o.listReps, WatchWrites: o.watchWrites, GetMin: o.getMin, Skip: skip, Log: logf}
					if reads && round == rounds-1 {
						w.Stored = func(ctx context.Context) error {
							if err := sample(fmt.Sprintf("%s: N=%d stored", t.Name, n)); err != nil {
								return err
							}
							if o.heapProfiles == "" || t.Name == "B" {
								return nil
							}
							return heapProfile(ctx, directCfg, o, filepath.Join(o.heapProfiles, fmt.Sprintf("heap-%s-%d.pb.gz", t.Name, n)))
						}
					}
					logf("round %d/%d: %s N=%d C=%d%s", round+1, rounds, t.Name, n, c, map[bool]string{true: " with reads"}[reads])
					res, err := w.Run(ctx, t)
					if err != nil {
						return fmt.Errorf("%s N=%d C=%d: %w", t.Name, n, c, err)
					}
					if err := t.Clean(ctx); err != nil {
						return err
					}
					kk := key{t.Name, n, c}
					if results[kk] == nil {
						results[kk] = bench.Result{}
						order = append(order, kk)
					}
					for step, s := range res {
						if results[kk][step] == nil {
							results[kk][step] = &bench.Samples{}
						}
						results[kk][step].Merge(*s)
					}
				}
			}
		}
	}
	if err := sample("end (all deleted)"); err != nil {
		return err
	}
	for _, k := range order {
		rep.Cells = append(rep.Cells, bench.Summarize(k.target, k.n, k.c, results[k]))
	}
	rep.Meta.Duration = time.Since(start).Round(time.Second).String()
	rep.Meta.LoadAverage += " at the start, " + bench.LoadAverage() + " at the end (other work on the machine competes for its CPUs)"
	return write(o, rep, true)
}

func write(o options, rep *bench.Report, withJSON bool) error {
	if withJSON && o.jsonOut != "" {
		raw, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, append(raw, '\n'), 0o644); err != nil {
			return err
		}
	}
	chartRef, err := filepath.Rel(filepath.Dir(o.out), o.chart)
	if err != nil {
		chartRef = o.chart
	}
	if err := os.WriteFile(o.out, []byte(rep.Markdown(chartRef)), 0o644); err != nil {
		return err
	}
	if err := rep.Chart(o.chart); err != nil {
		return err
	}
	logf("wrote %s and %s", o.out, o.chart)
	return nil
}

// setUp installs the benchmark CRD, creates the namespaces and builds the three targets.
func setUp(ctx context.Context, o options, cfg *rest.Config, kube kubernetes.Interface) ([]*bench.Target, error) {
	want := map[string]bool{}
	for _, t := range strings.Split(o.targets, ",") {
		want[strings.ToUpper(strings.TrimSpace(t))] = true
	}
	gitopsGVR := schema.GroupVersionResource{Group: "managed-gitops.redhat.com", Version: "v1alpha1", Resource: "gitopsdeployments"}
	crdGVR := schema.GroupVersionResource{Group: o.crdGroup, Version: "v1alpha1", Resource: "gitopsdeployments"}
	if want["B"] {
		if err := installCRD(ctx, o, cfg); err != nil {
			return nil, err
		}
	}
	direct, err := directConfig(o, cfg)
	if err != nil {
		return nil, err
	}

	var targets []*bench.Target
	if o.contentType != bench.ContentTypeJSON && o.contentType != bench.ContentTypeProtobuf {
		return nil, fmt.Errorf("-content-type: %q is neither %s nor %s", o.contentType, bench.ContentTypeJSON, bench.ContentTypeProtobuf)
	}
	for _, spec := range []struct {
		name, desc  string
		cfg         *rest.Config
		gvr         schema.GroupVersionResource
		contentType string
	}{
		{"A", "GitOpsDeployments through kube-apiserver's aggregation layer to gitops-apiserver, stored in PostgreSQL", cfg, gitopsGVR, o.contentType},
		// CRDs cannot be served in protobuf.
		{"B", "the same kind as a CRD on the same kube-apiserver, stored in its etcd; schema generated from our OpenAPI definitions, status subresource, printer columns", cfg, crdGVR, bench.ContentTypeJSON},
		{"C", fmt.Sprintf("gitops-apiserver directly at %s (no aggregation hop), stored in PostgreSQL", o.direct), direct, gitopsGVR, o.contentType},
	} {
		if !want[spec.name] {
			continue
		}
		ns := fmt.Sprintf(o.namespaceFmt, strings.ToLower(spec.name))
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		t, err := bench.NewTarget(spec.name, spec.desc, spec.cfg, spec.gvr, "GitOpsDeployment", ns, spec.contentType)
		if err != nil {
			return nil, err
		}
		// The namespace and, for B, the CRD take a moment to be served everywhere.
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			return t.Reachable(ctx) == nil, nil
		}); err != nil {
			return nil, fmt.Errorf("target %s does not serve %s: %v", spec.name, spec.gvr, t.Reachable(ctx))
		}
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no targets in %q", o.targets)
	}
	return targets, nil
}

// directConfig is the admin's client configuration for gitops-apiserver itself (target C).
func directConfig(o options, cfg *rest.Config) (*rest.Config, error) {
	direct := rest.AnonymousClientConfig(cfg)
	direct.Host = o.direct
	direct.TLSClientConfig = rest.TLSClientConfig{CAFile: o.directCA}
	direct.BearerToken = cfg.BearerToken
	direct.BearerTokenFile = cfg.BearerTokenFile
	if direct.BearerToken == "" && direct.BearerTokenFile == "" {
		return nil, fmt.Errorf("target C needs a bearer token in %s (gitops-apiserver delegates its authentication to kube-apiserver)", o.kubeconfig)
	}
	return direct, nil
}

// heapProfile writes gitops-apiserver's heap profile, taken after a garbage collection, to file.
func heapProfile(ctx context.Context, direct *rest.Config, o options, file string) error {
	hc, err := rest.HTTPClientFor(direct)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.direct, "/")+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	logf("heap profile of gitops-apiserver: %s", file)
	return f.Close()
}

// reducedPlan describes for the report what ran at a size of the reduced plan.
func reducedPlan(o options, n int, targets []*bench.Target, cs []int, skip map[string]bool) string {
	var names, skipped []string
	for _, t := range targets {
		names = append(names, t.Name)
	}
	for _, step := range []string{bench.StepGet, bench.StepUpdateStatus, bench.StepList, bench.StepListPaged, bench.StepListLabel, bench.StepWatch} {
		if skip[step] {
			skipped = append(skipped, step)
		}
	}
	ran := "every step"
	if len(skipped) > 0 {
		ran = "every step but " + strings.Join(skipped, "; ")
	}
	return fmt.Sprintf("N=%d (from -huge-n %d on): targets %s only, %s, C=%s, %d round(s)",
		n, o.hugeN, strings.Join(names, ", "), ran, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cs)), ","), "[]"), o.hugeRounds)
}

func installCRD(ctx context.Context, o options, cfg *rest.Config) error {
	crd, err := bench.GitOpsDeploymentCRD(o.crdGroup)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	existing, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the benchmark CRD: %w", err)
		}
	case err != nil:
		return err
	default:
		crd.ResourceVersion = existing.ResourceVersion
		if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the benchmark CRD: %w", err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func describe(ctx context.Context, o options, kube kubernetes.Interface, probe *bench.ResourceProbe, targets []*bench.Target) (bench.Meta, error) {
	m := bench.Meta{
		Command:     strings.Join(append([]string{"bin/gitops-bench"}, os.Args[1:]...), " "),
		Date:        time.Now().UTC().Format("2006-01-02 15:04 MST"),
		CPUs:        runtime.NumCPU(),
		GoVersion:   runtime.Version(),
		Rounds:      o.rounds,
		Note:        o.note,
		LoadAverage: bench.LoadAverage(),
		Targets:     bench.TargetNames(targets),
	}
	if o.invokedAs != "" {
		m.Command = fmt.Sprintf("%s`, which ran `%s", o.invokedAs, m.Command)
	}
	for _, t := range targets {
		m.TargetInfo = append(m.TargetInfo, t.Describe())
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(raw))
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return m, err
	}
	m.KubeAPIServer = v.GitVersion
	m.GitOpsLibraries = serverBuild(filepath.Join(o.localDir, "pids", "gitops-apiserver.pid"))
	if m.Postgres, err = probe.PostgresVersion(ctx); err != nil {
		return m, err
	}
	if m.Etcd, err = probe.EtcdVersion(ctx); err != nil {
		return m, err
	}
	return m, nil
}

// serverBuild describes the running gitops-apiserver from the build information of its
// executable: its Go version and the versions of the libraries that matter most here.
func serverBuild(pidFile string) string {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return "unknown: " + err.Error()
	}
	bi, err := buildinfo.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(raw)), "exe"))
	if err != nil {
		return "unknown: " + err.Error()
	}
	parts := []string{bi.GoVersion}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			parts = append(parts, "commit "+kv.Value)
		case "vcs.modified":
			if kv.Value == "true" {
				parts = append(parts, "with uncommitted changes")
			}
		}
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "k8s.io/apiserver", "github.com/jackc/pgx/v5":
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version
			}
			parts = append(parts, d.Path+" "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// profileGets runs -profile-gets: each target's gets under CPU profiles and CPU accounting.
func profileGets(ctx context.Context, o options, cfg, directCfg *rest.Config, targets []*bench.Target, n, c int) error {
	if err := os.MkdirAll(o.profileGets, 0o755); err != nil {
		return err
	}
	pid := func(name string) (int, error) {
		raw, err := os.ReadFile(filepath.Join(o.localDir, "pids", name+".pid"))
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	var procs []bench.ProfiledProcess
	for _, name := range []string{"kube-apiserver", "gitops-apiserver", "etcd", "postgres"} {
		p, err := pid(name)
		if err != nil {
			return err
		}
		proc := bench.ProfiledProcess{Name: name, PID: p, WithChildren: name == "postgres"}
		switch name {
		case "kube-apiserver":
			if proc.Profile, err = bench.PprofCPU(cfg, cfg.Host); err != nil {
				return err
			}
		case "gitops-apiserver":
			if proc.Profile, err = bench.PprofCPU(directCfg, o.direct); err != nil {
				return err
			}
		}
		procs = append(procs, proc)
	}
	for _, t := range targets {
		logf("storing %d objects in %s", n, t.Name)
		if err := bench.FillForGets(ctx, t, n, c); err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		defer t.Clean(context.WithoutCancel(ctx))
	}
	// Targets take turns, in a rotating order, for o.rounds rounds; the CPU profiles are
	// taken in the first.
	profiles := map[string]*bench.GetProfile{}
	each := o.profileFor / time.Duration(o.rounds)
	for round := range o.rounds {
		for k := range targets {
			t := targets[(k+round)%len(targets)]
			dir := ""
			if round == 0 {
				dir = o.profileGets
			}
			p, err := bench.ProfileGets(ctx, t, n, c, each, procs, dir, profiles[t.Name])
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			profiles[t.Name] = p
			logf("round %d/%d: %s: %.0f gets/s so far", round+1, o.rounds, t.Name, p.Summary.Throughput)
		}
	}
	var out []*bench.GetProfile
	for _, t := range targets {
		out = append(out, profiles[t.Name])
	}
	table := fmt.Sprintf("CPU time per get (N=%d, C=%d, %s per target in %d rounds; load average %s)\n\n%s", n, c, o.profileFor, o.rounds, bench.LoadAverage(), bench.GetProfileTable(out))
	fmt.Print(table)
	return os.WriteFile(filepath.Join(o.profileGets, "cpu-per-get.md"), []byte(table), 0o644)
}
