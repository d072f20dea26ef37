// Package agentbench measures how fast the agent carries changes between the GitOps API and a
// real Argo CD, in both directions:
//
//   - apply: from the response to a GitOpsDeployment's create to its Application appearing in a
//     watch of the Argo CD namespace;
//   - status: from the moment a watch of the Argo CD namespace shows an Application Synced and
//     Healthy with a finished sync (Argo CD's own write, nothing simulated) to the moment a watch
//     of the GitOps API shows the same on its GitOpsDeployment.
//
// Both ends of every sample are seen by this process, through watches opened before the first
// create, so the figures include the watch delivery of both API servers but no clock skew.
package agentbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/bench/pkg/bench"
	"github.com/gitops-service/gitops-service/pkg/agent"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// Config is one run.
type Config struct {
	agent.Clients
	ArgoNamespace string
	// Deployments are spread evenly over Namespaces tenant namespaces, each of which costs
	// Argo CD a cluster cache of its own (its deployer).
	Deployments int
	Namespaces  int
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Log receives progress lines.
	Log func(format string, args ...interface{})
}

// Result holds the samples of both directions.
type Result struct {
	Apply, Status []time.Duration
	// Missing counts deployments for which a direction was not observed before the timeout.
	MissingApply, MissingStatus int
	Wall                        time.Duration
	// SlowestApply are the slowest apply samples, slowest first, to tell whether the tail is
	// the first deployments of each namespace (which wait for its deployer) or a queue.
	SlowestApply []Sample
}

// Sample is one deployment's apply latency; Order is its place among its namespace's creates
// (0 is the namespace's first deployment).
type Sample struct {
	Namespace, Name string
	Order           int
	Latency         time.Duration
}

// slowest is how many samples SlowestApply keeps.
const slowest = 5

// Summary is p50/p90/p99/max of one direction.
func Summary(samples []time.Duration) (p50, p90, p99, max time.Duration) {
	s := append([]time.Duration(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return
	}
	return bench.Percentile(s, 50), bench.Percentile(s, 90), bench.Percentile(s, 99), s[len(s)-1]
}

// timeline is what the watches saw of one deployment, keyed by its UID.
type timeline struct {
	created   time.Time // the create's response
	appSeen   time.Time // first watch event of its Application
	appDone   time.Time // first event of its Application Synced, Healthy, sync Succeeded
	deplDone  time.Time // first event of the GitOpsDeployment showing the same
	namespace string
	name      string
	order     int // place among its namespace's creates
}

type recorder struct {
	mu    sync.Mutex
	byUID map[string]*timeline
}

func (r *recorder) get(uid string) *timeline {
	t, ok := r.byUID[uid]
	if !ok {
		t = &timeline{}
		r.byUID[uid] = t
	}
	return t
}

func (r *recorder) application(obj interface{}, now time.Time) {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return
	}
	uid := app.Labels[argocd.LabelDeploymentUID]
	if uid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.get(uid)
	if t.appSeen.IsZero() {
		t.appSeen = now
	}
	st := app.Status
	if t.appDone.IsZero() && st.Sync.Status == argov1alpha1.SyncStatusCodeSynced && st.Health.Status == "Healthy" &&
		st.OperationState != nil && st.OperationState.Phase == "Succeeded" {
		t.appDone = now
	}
}

func (r *recorder) deployment(obj interface{}, now time.Time) {
	d, ok := obj.(*managedv1alpha1.GitOpsDeployment)
	if !ok {
		return
	}
	st := d.Status
	if st.Sync.Status != managedv1alpha1.SyncStatusCodeSynced || st.Health.Status != managedv1alpha1.HealthStatusCodeHealthy ||
		st.OperationState == nil || st.OperationState.Phase != managedv1alpha1.OperationPhaseSucceeded {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.get(string(d.UID)); t.deplDone.IsZero() {
		t.deplDone = now
	}
}

func handler(record func(obj interface{}, now time.Time)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { record(obj, time.Now()) },
		UpdateFunc: func(_, obj interface{}) { record(obj, time.Now()) },
	}
}

// Tracker watches Applications in the Argo CD namespace and GitOpsDeployments everywhere, and
// times both directions for the deployments registered with Created. It is what Run and the
// scale benchmark (RunScale) measure with.
type Tracker struct {
	rec       *recorder
	argoInf   argoinformers.SharedInformerFactory
	gitopsInf externalversions.SharedInformerFactory
	stop      func()
}

// StartTracker opens the watches and waits for their caches; Stop closes them.
func StartTracker(ctx context.Context, clients agent.Clients, argoNamespace string) (*Tracker, error) {
	rec := &recorder{byUID: map[string]*timeline{}}
	argoInf := argoinformers.NewSharedInformerFactoryWithOptions(clients.Argo, 0, argoinformers.WithNamespace(argoNamespace))
	if _, err := argoInf.Argoproj().V1alpha1().Applications().Informer().AddEventHandler(handler(rec.application)); err != nil {
		return nil, err
	}
	gitopsInf := externalversions.NewSharedInformerFactory(clients.GitOps, 0)
	if _, err := gitopsInf.ManagedGitops().V1alpha1().GitOpsDeployments().Informer().AddEventHandler(handler(rec.deployment)); err != nil {
		return nil, err
	}
	// Shutdown waits for the informers to stop, so their context must end first.
	informersCtx, stopInformers := context.WithCancel(ctx)
	argoInf.Start(informersCtx.Done())
	gitopsInf.Start(informersCtx.Done())
	t := &Tracker{rec: rec, argoInf: argoInf, gitopsInf: gitopsInf, stop: func() {
		stopInformers()
		argoInf.Shutdown()
		gitopsInf.Shutdown()
	}}
	for typ, ok := range argoInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			t.Stop()
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}
	for typ, ok := range gitopsInf.WaitForCacheSync(informersCtx.Done()) {
		if !ok {
			t.Stop()
			return nil, fmt.Errorf("the watch of %v did not sync", typ)
		}
	}
	return t, nil
}

// Stop closes the watches.
func (t *Tracker) Stop() { t.stop() }

// Created registers a deployment at the response to its create; order is its place among its
// namespace's creates.
func (t *Tracker) Created(d *managedv1alpha1.GitOpsDeployment, order int) {
	now := time.Now()
	t.rec.mu.Lock()
	defer t.rec.mu.Unlock()
	tl := t.rec.get(string(d.UID))
	tl.created, tl.namespace, tl.name, tl.order = now, d.Namespace, d.Name, order
}

// Progress counts, among uids, the deployments whose Application was seen and those whose
// Synced/Healthy was seen on both sides.
func (t *Tracker) Progress(uids []string) (applied, reported int) {
	t.rec.mu.Lock()
	defer t.rec.mu.Unlock()
	for _, uid := range uids {
		tl, ok := t.rec.byUID[uid]
		if !ok || tl.created.IsZero() {
			continue
		}
		if !tl.appSeen.IsZero() {
			applied++
		}
		if !tl.appDone.IsZero() && !tl.deplDone.IsZero() {
			reported++
		}
	}
	return applied, reported
}

// Deployments lists the GitOpsDeployments of the watch's cache.
func (t *Tracker) Deployments() ([]*managedv1alpha1.GitOpsDeployment, error) {
	return t.gitopsInf.ManagedGitops().V1alpha1().GitOpsDeployments().Lister().List(labels.Everything())
}

// Applications lists the Applications of the watch's cache (the Argo CD namespace).
func (t *Tracker) Applications() ([]*argov1alpha1.Application, error) {
	return t.argoInf.Argoproj().V1alpha1().Applications().Lister().List(labels.Everything())
}

// Result gathers the samples of the deployments uids (all registered ones if uids is nil).
func (t *Tracker) Result(uids []string) *Result {
	t.rec.mu.Lock()
	defer t.rec.mu.Unlock()
	if uids == nil {
		for uid := range t.rec.byUID {
			uids = append(uids, uid)
		}
	}
	res := &Result{}
	for _, uid := range uids {
		tl, ok := t.rec.byUID[uid]
		if !ok || tl.created.IsZero() {
			continue
		}
		if tl.appSeen.IsZero() {
			res.MissingApply++
		} else {
			d := nonNegative(tl.appSeen.Sub(tl.created))
			res.Apply = append(res.Apply, d)
			res.SlowestApply = append(res.SlowestApply, Sample{Namespace: tl.namespace, Name: tl.name, Order: tl.order, Latency: d})
		}
		if tl.appDone.IsZero() || tl.deplDone.IsZero() {
			res.MissingStatus++
		} else {
			res.Status = append(res.Status, nonNegative(tl.deplDone.Sub(tl.appDone)))
		}
	}
	sort.Slice(res.SlowestApply, func(i, j int) bool { return res.SlowestApply[i].Latency > res.SlowestApply[j].Latency })
	if len(res.SlowestApply) > slowest {
		res.SlowestApply = res.SlowestApply[:slowest]
	}
	return res
}

// Run creates the deployments, waits until both directions are observed for all of them (or
// the timeout), then deletes everything it made.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}

	repoDir, err := os.MkdirTemp("", "agentbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(repoDir)
	repoURL, err := fixtureRepository(repoDir, cfg.Deployments)
	if err != nil {
		return nil, err
	}

	run := fmt.Sprintf("%d", time.Now().Unix()%100000)
	namespaces := make([]string, cfg.Namespaces)
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("agentbench-%s-%d", run, i)
		if _, err := cfg.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]},
		}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	defer cleanup(cfg.Clients, cfg.ArgoNamespace, namespaces, logf)

	tr, err := StartTracker(ctx, cfg.Clients, cfg.ArgoNamespace)
	if err != nil {
		return nil, err
	}
	defer tr.Stop()

	logf("creating %d GitOpsDeployments in %d namespaces, from %s", cfg.Deployments, cfg.Namespaces, repoURL)
	start := time.Now()
	uids := make([]string, 0, cfg.Deployments)
	for i := 0; i < cfg.Deployments; i++ {
		ns := namespaces[i%len(namespaces)]
		created, err := cfg.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx,
			automatedDeployment(fmt.Sprintf("d%04d", i), repoURL, appPath(i)), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating %s/d%04d: %w", ns, i, err)
		}
		tr.Created(created, i/len(namespaces))
		uids = append(uids, string(created.UID))
	}

	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		applied, reported := tr.Progress(uids)
		logf("%3.0fs: %d/%d Applications made, %d/%d Synced+Healthy reported back", time.Since(start).Seconds(),
			applied, cfg.Deployments, reported, cfg.Deployments)
		return applied == cfg.Deployments && reported == cfg.Deployments, nil
	})

	res := tr.Result(uids)
	res.Wall = time.Since(start)
	return res, nil
}

// automatedDeployment is an automated GitOpsDeployment of path into its own namespace.
func automatedDeployment(name, repoURL, path string) *managedv1alpha1.GitOpsDeployment {
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{RepoURL: repoURL, Path: path},
			Type:   managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
}

// nonNegative clamps a sample whose two events were handled out of order by the two informers'
// goroutines (the GitOps watch can be delivered first when the Application's event is queued
// behind others); such a change took no measurable time.
func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// cleanup deletes the namespaces; the agent deletes the Applications of the deployments in
// them, and Argo CD what those deployed.
func cleanup(clients agent.Clients, argoNamespace string, namespaces []string, logf func(string, ...interface{})) {
	bound := 5 * time.Minute
	if b := time.Duration(len(namespaces)) * time.Second; b > bound {
		bound = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	logf("deleting the benchmark's GitOpsDeployments and namespaces")
	start := time.Now()
	ours := map[string]bool{}
	for _, ns := range namespaces {
		ours[ns] = true
	}
	for _, ns := range namespaces {
		if err := clients.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			logf("deleting the GitOpsDeployments of %s: %v", ns, err)
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		apps, err := clients.Argo.ArgoprojV1alpha1().Applications(argoNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, a := range apps.Items {
			if ours[a.Labels[argocd.LabelDeploymentNamespace]] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		logf("the agent had not deleted all their Applications after %s; deleting the namespaces anyway", time.Since(start).Round(time.Second))
	} else {
		logf("the agent deleted their Applications in %s; deleting the namespaces", time.Since(start).Round(time.Second))
	}
	for _, ns := range namespaces {
		if err := clients.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			logf("deleting namespace %s: %v", ns, err)
		}
	}
}

func appPath(i int) string { return fmt.Sprintf("app%04d", i) }

// fixtureRepository makes a bare Git repository with one ConfigMap of its own for each
// deployment (in app<i>/), which Argo CD's repo-server on this machine clones through file://.
func fixtureRepository(dir string, deployments int) (string, error) {
	bare, work := filepath.Join(dir, "repo.git"), filepath.Join(dir, "work")
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
		return nil
	}
	if err := git("init", "-q", "--bare", "-b", "main", bare); err != nil {
		return "", err
	}
	if err := git("init", "-q", "-b", "main", work); err != nil {
		return "", err
	}
	for i := 0; i < deployments; i++ {
		if err := os.MkdirAll(filepath.Join(work, appPath(i)), 0o755); err != nil {
			return "", err
		}
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-%04d\ndata:\n  value: x\n", i)
		if err := os.WriteFile(filepath.Join(work, appPath(i), "cm.yaml"), []byte(cm), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"-C", work, "add", "."}, {"-C", work, "commit", "-q", "-m", "fixture"}, {"-C", work, "push", "-q", bare, "main"}} {
		if err := git(args...); err != nil {
			return "", err
		}
	}
	return "file://" + bare, nil
}
