package apiserver

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
	"github.com/gitops-service/gitops-service/test/monitoring"
)

// TestMonitoringMetricsAreExported holds artifacts/monitoring to gitops-apiserver: every metric
// that a rule or a dashboard panel selects from the apiserver's job is on the /metrics of a
// server on PostgreSQL that has served writes, reads and a watch (open while it is scraped).
func TestMonitoringMetricsAreExported(t *testing.T) {
	uses, err := monitoring.Uses(monitoring.Dir())
	if err != nil {
		t.Fatal(err)
	}
	client := versioned.NewForConfigOrDie(startServer(t, pgtest.NewDatabase(t)))
	snapshots := client.AppStudioV1alpha1().Snapshots("team")
	ctx := context.Background()

	w, err := snapshots.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := snapshots.Create(ctx, &appstudiov1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec: appstudiov1alpha1.SnapshotSpec{Application: "app"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan() // a watch event sent
	created.Spec.DisplayName = "first"
	if _, err := snapshots.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshots.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	raw, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exposition, err := monitoring.ParseExposition(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if missing := monitoring.Missing(uses, monitoring.APIServer, exposition); len(missing) > 0 {
		t.Errorf("gitops-apiserver's /metrics lacks metrics that artifacts/monitoring uses:\n%s", strings.Join(missing, "\n"))
	}
	names := map[string]bool{}
	for _, u := range uses {
		if u.Binary == monitoring.APIServer {
			names[u.Metric] = true
		}
	}
	t.Logf("the rules and the dashboard use %d metrics of gitops-apiserver", len(names))
}
