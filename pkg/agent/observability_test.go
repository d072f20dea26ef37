package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func TestOperationExpiry(t *testing.T) {
	cutoff := time.Unix(10000, 0)
	old, recent := metav1.NewTime(cutoff.Add(-time.Second)), metav1.NewTime(cutoff.Add(time.Second))
	for _, tc := range []struct {
		name    string
		created metav1.Time
		updated *metav1.Time
		want    bool
	}{
		{"finished before the cutoff", old, &old, true},
		{"finished after the cutoff", old, &recent, false},
		{"never updated, created before", old, nil, true},
		{"never updated, created after", recent, nil, false},
	} {
		op := &managedv1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: tc.created}}
		op.Status.LastStateUpdate = tc.updated
		if got := expired(op, cutoff); got != tc.want {
			t.Errorf("%s: expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
