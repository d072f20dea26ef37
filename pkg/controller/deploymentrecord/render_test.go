package deploymentrecord

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
)

var kept = managedv1alpha1.DeploymentRecordStatus{ManifestsDigest: "sha256:abc", Manifests: []managedv1alpha1.RecordedManifest{
	{Kind: "ConfigMap", Namespace: "jane", Name: "web", Object: runtime.RawExtension{Raw: []byte(`{"kind":"ConfigMap"}`)}}}}

func TestWithManifests(t *testing.T) {
	running := managedv1alpha1.DeploymentRecordStatus{Phase: managedv1alpha1.DeploymentRecordRunning}
	succeeded := managedv1alpha1.DeploymentRecordStatus{Phase: managedv1alpha1.DeploymentRecordSucceeded, Message: "synced"}
	truncated := managedv1alpha1.DeploymentRecordStatus{ManifestsDigest: "sha256:big", ManifestsTruncated: true}
	tests := []struct {
		name             string
		planned, current managedv1alpha1.DeploymentRecordStatus
		want             managedv1alpha1.DeploymentRecordStatus
	}{
		{"no manifests kept: the plan's status", succeeded, running, succeeded},
		{"the plan's status keeps the manifests", succeeded, kept, managedv1alpha1.DeploymentRecordStatus{Phase: succeeded.Phase, Message: succeeded.Message,
			ManifestsDigest: kept.ManifestsDigest, Manifests: kept.Manifests}},
		{"and a digest over the cap", succeeded, truncated, managedv1alpha1.DeploymentRecordStatus{Phase: succeeded.Phase, Message: succeeded.Message,
			ManifestsDigest: "sha256:big", ManifestsTruncated: true}},
		{"a status with manifests of its own is written as it is", kept, truncated, kept},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, withManifests(tt.planned, tt.current)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

func TestNeedsManifests(t *testing.T) {
	withKept := record(t0, 1, shaA, managedv1alpha1.DeploymentRecordSucceeded)
	withKept.Status = kept
	for _, tt := range []struct {
		name string
		r    *managedv1alpha1.DeploymentRecord
		want bool
	}{
		{"a commit and no manifests", record(t0, 1, shaA, managedv1alpha1.DeploymentRecordRunning), true},
		{"no commit yet", record(t0, 1, "", managedv1alpha1.DeploymentRecordRunning), false},
		{"manifests kept", withKept, false},
	} {
		if got := needsManifests(tt.r); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The status the controller writes as the operation goes on keeps the manifests the record
// holds: the operation knows nothing of them.
func TestStatusUpdatesKeepTheManifests(t *testing.T) {
	d := deployment(1, operation(t0, managedv1alpha1.OperationPhaseRunning, shaA, automated))
	r := record(t0, 1, shaA, managedv1alpha1.DeploymentRecordRunning)
	r.Spec.Source = d.Spec.Source
	r.Status.ManifestsDigest, r.Status.Manifests = kept.ManifestsDigest, kept.Manifests
	f := start(t, d, r)

	d = d.DeepCopy()
	d.Status.OperationState.Phase = managedv1alpha1.OperationPhaseSucceeded
	d.Status.OperationState.FinishedAt = &t1
	f.setOperation(t, d)
	controllertest.Eventually(t, f.ctx, "the record's outcome", func() bool {
		got := f.record(r.Name)
		return got != nil && got.Status.Phase == managedv1alpha1.DeploymentRecordSucceeded
	})
	if got := f.record(r.Name); got.Status.ManifestsDigest != kept.ManifestsDigest || !cmp.Equal(got.Status.Manifests, kept.Manifests) {
		t.Errorf("the manifests were not kept: %+v", got.Status)
	}
}
