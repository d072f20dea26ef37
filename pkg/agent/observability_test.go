package agent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func TestPendingSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var p pendingSince
	if _, ok := p.oldest(); ok {
		t.Fatal("nothing pending, yet an oldest change")
	}
	p.add("a", at(0))
	p.add("a", at(2)) // a second change of a waits as long as the first
	p.add("b", at(1))
	if got, _ := p.oldest(); !got.Equal(at(0)) {
		t.Errorf("oldest = %v, want the first change of a", got)
	}
	p.done("a", at(3))
	if got, _ := p.oldest(); !got.Equal(at(1)) {
		t.Errorf("after a is reconciled, oldest = %v, want b's change", got)
	}
	// A change that arrives while b is being reconciled still waits afterwards.
	p.add("b", at(5))
	p.done("b", at(4))
	if got, ok := p.oldest(); !ok || !got.Equal(at(5)) {
		t.Errorf("oldest = %v, %v; want the change that came during the reconcile", got, ok)
	}
	p.done("b", at(6))
	if _, ok := p.oldest(); ok {
		t.Error("everything is reconciled, yet a change is pending")
	}
}

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
