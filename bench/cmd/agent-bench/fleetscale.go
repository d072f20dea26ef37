package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gitops-service/gitops-service/bench/pkg/agentbench"
	"github.com/gitops-service/gitops-service/bench/pkg/bench"
)

// fleetScaleArgs is what fleetMain hands to the scale mode.
type fleetScaleArgs struct {
	fleet                agentbench.FleetConfig
	cfg, rcfg            *rest.Config // admin configs of the stack's cluster and the remote one
	localDir, gitopsURL  string
	steps                []int
	perTenant, extra     int
	settle               time.Duration
	out, invokedAs, note string
	results              string
	started              time.Time
}

// instancesSupported says why the local stack's fleet has the instances it has.
const instancesSupported = "The local stack runs at most two Argo CD instances (`hack/local-up.sh` with `GITOPS_LOCAL_REMOTE_CLUSTER=1 " +
	"GITOPS_LOCAL_INSTANCES=2`: `main` on the stack's cluster, `engine` on its remote cluster as an engine cluster); a third would " +
	"need a namespace or cluster of its own with its own Redis, argocd-repo-server, argocd-application-controller and agent, whose " +
	"cost is an instance's fixed part in the model below: the model extrapolates the fleet's instances from the two measured."

// fleetScaleMain runs "agent-bench fleet -scale" (agentbench.RunFleetScale) and writes the
// fleet-scale section of a.out.
func fleetScaleMain(ctx context.Context, a fleetScaleArgs) error {
	remoteKube, err := kubernetes.NewForConfig(a.rcfg)
	if err != nil {
		return err
	}
	// gitops-apiserver authorizes the admin through kube-apiserver; its serving certificate is
	// signed by the stack's CA.
	gcfg := rest.CopyConfig(a.cfg)
	gcfg.Host = a.gitopsURL
	gcfg.TLSClientConfig = rest.TLSClientConfig{CAFile: filepath.Join(a.localDir, "certs", "ca.crt"),
		CertFile: a.cfg.TLSClientConfig.CertFile, KeyFile: a.cfg.TLSClientConfig.KeyFile,
		CertData: a.cfg.TLSClientConfig.CertData, KeyData: a.cfg.TLSClientConfig.KeyData}
	gitopsHTTP, err := rest.HTTPClientFor(gcfg)
	if err != nil {
		return err
	}
	sampler := agentbench.FleetSampler{
		LocalDir: a.localDir, Kube: a.fleet.Kube, Remote: remoteKube,
		GitOpsMetrics: func(ctx context.Context) (string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.gitopsURL+"/metrics", nil)
			if err != nil {
				return "", err
			}
			resp, err := gitopsHTTP.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return "", err
			}
			if resp.StatusCode != http.StatusOK {
				return "", fmt.Errorf("%s: %s", resp.Status, body)
			}
			return string(body), nil
		},
	}
	loadBefore := "load average " + bench.LoadAverage()
	res, runErr := agentbench.RunFleetScale(ctx, agentbench.FleetScaleConfig{
		FleetConfig: a.fleet, Steps: a.steps, PerTenant: a.perTenant, ExtraPerTenant: a.extra,
		Settle: a.settle, Sample: sampler.Sample,
	})
	if res == nil {
		return runErr
	}
	info := agentbench.FleetScaleReportInfo{
		InvokedAs: a.invokedAs, Note: a.note, Started: a.started, Wall: time.Since(a.started), Machine: machine(),
		LoadBefore: loadBefore, MemTotal: memTotal(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Workers: a.fleet.Workers, Settle: a.settle, Timeout: a.fleet.Timeout, Kept: a.fleet.Keep,
		InstancesSupported: instancesSupported,
	}
	// The measurements of a run of hours outlive a fault of the report: -render-from renders them again.
	if a.results != "" {
		raw, err := json.MarshalIndent(fleetScaleRecord{Result: res, Info: info}, "", "  ")
		if err == nil {
			err = os.WriteFile(a.results, raw, 0o644)
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", a.results, err)
		}
		fmt.Fprintf(os.Stderr, "agent-bench fleet: the measurements are in %s\n", a.results)
	}
	section := agentbench.RenderFleetScale(res, info)
	fmt.Print(section)
	if a.out != "" {
		if err := agentbench.WriteFleetScaleSection(a.out, section); err != nil {
			return err
		}
	}
	return runErr
}

// fleetScaleRecord is what -results writes and -render-from reads.
type fleetScaleRecord struct {
	Result *agentbench.FleetScaleResult
	Info   agentbench.FleetScaleReportInfo
}

// renderFleetScale renders the report of the measurements in the JSON file from into the
// fleet-scale section of out (stdout only without it).
func renderFleetScale(from, out string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var rec fleetScaleRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if rec.Result == nil {
		return fmt.Errorf("%s: no result", from)
	}
	section := agentbench.RenderFleetScale(rec.Result, rec.Info)
	fmt.Print(section)
	if out != "" {
		return agentbench.WriteFleetScaleSection(out, section)
	}
	return nil
}

// memTotal is this machine's memory in bytes (0 when unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}
