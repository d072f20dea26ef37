package gitopsdeployment

import (
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

func TestApplicationMetrics(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	app := func(uid string, automated bool, sync argov1alpha1.SyncStatusCode, h health.HealthStatusCode, reconciled time.Time) *argov1alpha1.Application {
		a := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app-" + uid, UID: types.UID(uid),
			Labels: map[string]string{argocd.LabelDeploymentNamespace: "jane"}}}
		if automated {
			a.Spec.SyncPolicy = &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{}}
		}
		a.Status.Sync.Status, a.Status.Health.Status = sync, h
		if !reconciled.IsZero() {
			a.Status.ReconciledAt = &metav1.Time{Time: reconciled}
		}
		return a
	}
	apps := []*argov1alpha1.Application{
		app("a", true, argov1alpha1.SyncStatusCodeSynced, health.HealthStatusHealthy, t0.Add(-time.Minute)),
		app("b", true, argov1alpha1.SyncStatusCodeOutOfSync, health.HealthStatusHealthy, t0.Add(-30*time.Second)),
		app("c", false, argov1alpha1.SyncStatusCodeOutOfSync, health.HealthStatusMissing, time.Time{}),
		app("d", true, "", "", time.Time{}), // not compared yet
	}
	// Not the agent's: no deployment label.
	apps = append(apps, &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "x"}})
	running := true
	now := t0
	tracked := &outOfSyncSince{}
	collect := func(want string, names ...string) {
		t.Helper()
		m := &applicationMetrics{source: func() ([]*argov1alpha1.Application, bool) { return apps, running },
			now: func() time.Time { return now }, outOfSync: tracked}
		if err := testutil.CustomCollectAndCompare(m, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}
	}

	collect(`# HELP gitops_agent_applications [ALPHA] Argo CD Applications the agent keeps for GitOpsDeployments, by whether they sync automatically and by Argo CD's sync and health status (reported while the agent runs the Argo CD controllers).
# TYPE gitops_agent_applications gauge
gitops_agent_applications{automated="false",health_status="Missing",sync_status="OutOfSync"} 1
gitops_agent_applications{automated="true",health_status="Healthy",sync_status="OutOfSync"} 1
gitops_agent_applications{automated="true",health_status="Healthy",sync_status="Synced"} 1
gitops_agent_applications{automated="true",health_status="Unknown",sync_status="Unknown"} 1
# HELP gitops_agent_argocd_last_reconcile_timestamp_seconds [ALPHA] When Argo CD's application-controller last reconciled one of the agent's Applications (the newest status.reconciledAt), in seconds since the epoch; absent while none has been (reported while the agent runs the Argo CD controllers).
# TYPE gitops_agent_argocd_last_reconcile_timestamp_seconds gauge
gitops_agent_argocd_last_reconcile_timestamp_seconds 1.69999997e+09
# HELP gitops_agent_applications_stuck_out_of_sync [ALPHA] Applications of automated GitOpsDeployments that have been OutOfSync, continuously as far as this process has seen, for 10 minutes or more (reported while the agent runs the Argo CD controllers).
# TYPE gitops_agent_applications_stuck_out_of_sync gauge
gitops_agent_applications_stuck_out_of_sync 0
`, "gitops_agent_applications", "gitops_agent_argocd_last_reconcile_timestamp_seconds", "gitops_agent_applications_stuck_out_of_sync")

	stuck := func(n string) string {
		return `# HELP gitops_agent_applications_stuck_out_of_sync [ALPHA] Applications of automated GitOpsDeployments that have been OutOfSync, continuously as far as this process has seen, for 10 minutes or more (reported while the agent runs the Argo CD controllers).
# TYPE gitops_agent_applications_stuck_out_of_sync gauge
gitops_agent_applications_stuck_out_of_sync ` + n + "\n"
	}
	// b has been OutOfSync since the first scrape; the manual c never counts.
	now = t0.Add(StuckOutOfSyncAfter)
	collect(stuck("1"), "gitops_agent_applications_stuck_out_of_sync")
	// Synced once: its clock starts again when it is OutOfSync next.
	apps[1].Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
	now = now.Add(time.Minute)
	collect(stuck("0"), "gitops_agent_applications_stuck_out_of_sync")
	apps[1].Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync
	now = now.Add(time.Minute)
	collect(stuck("0"), "gitops_agent_applications_stuck_out_of_sync")
	now = now.Add(StuckOutOfSyncAfter)
	collect(stuck("1"), "gitops_agent_applications_stuck_out_of_sync")

	// A standby reports nothing.
	running = false
	collect("", "gitops_agent_applications", "gitops_agent_applications_stuck_out_of_sync",
		"gitops_agent_argocd_last_reconcile_timestamp_seconds")
}
