package gitopsdeployment

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Argo CD rewrites reconciledAt at every refresh; those updates alone must not queue the
// GitOpsDeployment, and every other change must.
func TestApplicationChanged(t *testing.T) {
	base := func() *argov1alpha1.Application {
		app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1", Labels: map[string]string{"a": "b"}}}
		app.Spec.Destination = localJane
		app.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		app.Status.ReconciledAt = &metav1.Time{Time: time.Unix(100, 0)}
		return app
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*argov1alpha1.Application)
		want   bool
	}{
		{name: "resync, same resourceVersion", change: func(a *argov1alpha1.Application) { a.ResourceVersion = "1" }, want: false},
		{name: "reconciledAt only", change: func(a *argov1alpha1.Application) { a.Status.ReconciledAt = &metav1.Time{Time: time.Unix(200, 0)} }, want: false},
		{name: "reconciledAt of an Application whose resources' health is in the tree (Argo CD 3.x)", change: func(a *argov1alpha1.Application) {
			a.Status.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
			a.Status.ReconciledAt = &metav1.Time{Time: time.Unix(200, 0)}
		}, want: true},
		{name: "sync status", change: func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync }, want: true},
		{name: "health", change: func(a *argov1alpha1.Application) { a.Status.Health.Status = "Degraded" }, want: true},
		{name: "operation state", change: func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: "Running"}
		}, want: true},
		{name: "operation", change: func(a *argov1alpha1.Application) { a.Operation = &argov1alpha1.Operation{} }, want: true},
		{name: "spec", change: func(a *argov1alpha1.Application) { a.Spec.Destination.Namespace = "other" }, want: true},
		{name: "label", change: func(a *argov1alpha1.Application) { a.Labels["a"] = "c" }, want: true},
		{name: "annotation", change: func(a *argov1alpha1.Application) { a.Annotations = map[string]string{"x": "y"} }, want: true},
		{name: "finalizer", change: func(a *argov1alpha1.Application) { a.Finalizers = []string{argoForegroundFinalizer} }, want: true},
		{name: "deletion", change: func(a *argov1alpha1.Application) { a.DeletionTimestamp = &now }, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, upd := base(), base()
			upd.ResourceVersion = "2"
			tc.change(upd)
			if got := applicationChanged(old, upd); got != tc.want {
				t.Errorf("applicationChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
