package framework

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// testLease has the shortest lease duration a Lease can hold: whole seconds.
func testLease(identity string) Lease {
	return Lease{Namespace: "ns", Name: "lease", Identity: identity,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
}

// holder is the Lease's holderIdentity, or "" when there is none.
func holder(t *testing.T, kube *fake.Clientset) string {
	t.Helper()
	l, err := kube.CoordinationV1().Leases("ns").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestRunLeadingOneAtATime: of two candidates only the holder runs; when it stops (releasing
// the Lease once its run has returned, not before) the other takes over without waiting for the
// Lease to expire.
func TestRunLeadingOneAtATime(t *testing.T) {
	kube := fake.NewSimpleClientset()
	var running atomic.Int32
	var ran [2]atomic.Bool
	run := func(i int) func(ctx context.Context) {
		return func(ctx context.Context) {
			if running.Add(1) != 1 {
				t.Errorf("candidate %d runs while the other does", i)
			}
			ran[i].Store(true)
			<-ctx.Done()
			// Controllers take a while to stop: the Lease must not be free meanwhile.
			time.Sleep(500 * time.Millisecond)
			running.Add(-1)
		}
	}
	ctxA, stopA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() { errA <- RunLeading(ctxA, kube, testLease("a"), run(0)) }()
	waitFor(t, func() bool { return ran[0].Load() })

	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	errB := make(chan error, 1)
	go func() { errB <- RunLeading(ctxB, kube, testLease("b"), run(1)) }()
	time.Sleep(2 * testLease("").LeaseDuration)
	if ran[1].Load() {
		t.Fatal("b ran while a held the Lease")
	}

	stopA()
	if err := <-errA; err != nil {
		t.Fatalf("a stopped: %v, want nil", err)
	}
	released := time.Now()
	waitFor(t, func() bool { return ran[1].Load() })
	// A released Lease is taken at the next retry, not after the lease duration.
	if took := time.Since(released); took >= testLease("").LeaseDuration {
		t.Errorf("b took over %v after a released the Lease, want less than the lease duration", took)
	}
	if h := holder(t, kube); h != "b" {
		t.Errorf("holder %q, want b", h)
	}
	stopB()
	if err := <-errB; err != nil {
		t.Fatalf("b stopped: %v, want nil", err)
	}
}

// TestRunLeadingLost: when another process holds the Lease (here written over the holder's), the
// holder's run ends and RunLeading returns ErrLeaseLost rather than going on.
func TestRunLeadingLost(t *testing.T) {
	kube := fake.NewSimpleClientset()
	// The fake does not compare resourceVersions: once b holds the Lease, refuse a's writes
	// as the kube-apiserver would, for the resourceVersion a last read.
	var taken atomic.Bool
	kube.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		l := action.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if taken.Load() && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "a" {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	ended := make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		errA <- RunLeading(context.Background(), kube, testLease("a"), func(ctx context.Context) {
			<-ctx.Done()
			close(ended)
		})
	}()
	waitFor(t, func() bool { return holder(t, kube) == "a" })

	l, err := kube.CoordinationV1().Leases("ns").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	taken.Store(true)
	other := "b"
	l.Spec.HolderIdentity = &other
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
	if _, err := kube.CoordinationV1().Leases("ns").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errA:
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("RunLeading returned %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunLeading went on after the Lease was taken")
	}
	select {
	case <-ended:
	default:
		t.Fatal("RunLeading returned before run ended")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
