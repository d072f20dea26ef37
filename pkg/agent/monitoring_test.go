package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/test/monitoring"
)

// TestMonitoringMetricsAreExported holds artifacts/monitoring to the agent: every metric that an
// agent rule or a dashboard panel selects from the agent's job is on the agent's /metrics (the
// legacy registry, which cmd/agent serves), once an agent of a fleet's instance runs every
// controller under leader election, over fake clients holding a tenant, its deployment and
// its Application.
func TestMonitoringMetricsAreExported(t *testing.T) {
	uses, err := monitoring.Uses(monitoring.Dir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const tenant, argoNS = "jane", "argocd"
	uid := "uid-app"
	inst := &managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"},
		Spec: managedv1alpha1.ArgoCDInstanceSpec{Namespace: argoNS, Capacity: 10}}
	placement := &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: tenant},
		Spec: managedv1alpha1.TenantPlacementSpec{Instance: "main"}, Status: managedv1alpha1.TenantPlacementStatus{Instance: "main"}}
	depl := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "app", UID: "uid-app"},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{Type: managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://example.com/repo.git", Path: "deploy"}}}
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: argoNS, Name: argocd.ApplicationName(depl.UID),
			Labels:      map[string]string{argocd.LabelDeploymentNamespace: tenant, argocd.LabelDeploymentUID: uid},
			Annotations: map[string]string{argocd.AnnotationDeploymentName: depl.Name}},
		Spec: argov1alpha1.ApplicationSpec{SyncPolicy: &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{}}},
		Status: argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeOutOfSync},
			ReconciledAt: &metav1.Time{Time: time.Now()}},
	}
	kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}})
	cfg := Config{
		Clients: Clients{GitOps: gitopsfake.NewSimpleClientset(inst, placement, depl), Argo: argofake.NewSimpleClientset(app), Kube: kube,
			Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())},
		ArgoNamespace: argoNS,
		Instance:      "main",
		LeaderElection: &LeaderElection{Client: kube, Namespace: "gitops-service", Identity: "test-agent",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond},
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}()

	// The agent's clients are fakes; client-go's request metrics need one request of a real
	// client, which any client of the process makes.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, _ = kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}).Discovery().ServerVersion()

	var missing []string
	for deadline := time.Now().Add(time.Minute); ; {
		exposition, err := scrapeLegacyRegistry()
		if err != nil {
			t.Fatal(err)
		}
		if missing = monitoring.Missing(uses, monitoring.Agent, exposition); len(missing) == 0 {
			t.Logf("the agent exports the %d metrics the rules and the dashboard use", countMetrics(uses, monitoring.Agent))
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("the agent's /metrics lacks metrics that artifacts/monitoring uses:\n%s", strings.Join(missing, "\n"))
}

// scrapeLegacyRegistry reads the legacy registry through the handler cmd/agent serves on /metrics.
func scrapeLegacyRegistry() (monitoring.Exposition, error) {
	srv := httptest.NewServer(legacyregistry.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return monitoring.ParseExposition(resp.Body)
}

func countMetrics(uses []monitoring.Use, binary string) int {
	names := map[string]bool{}
	for _, u := range uses {
		if u.Binary == binary {
			names[u.Metric] = true
		}
	}
	return len(names)
}
