package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Lease is the Lease on which the processes that may run a set of controllers elect the one
// that does, and the timings of the election (client-go's leaderelection).
type Lease struct {
	Namespace, Name string
	// Identity names this process in the Lease's holderIdentity; unique among the candidates.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// ErrLeaseLost is returned by RunLeading when this process stopped holding the Lease while it
// was meant to go on: another process may already be running the controllers, so this one must
// not run them any more, and (as kube-controller-manager does) it exits rather than risk it.
var ErrLeaseLost = errors.New("lost the lease")

// RunLeading waits until this process holds the Lease, then runs run with a context that ends
// when ctx ends or the Lease is lost, renewing the Lease meanwhile. It returns nil once ctx is
// done, and an error wrapping ErrLeaseLost if the Lease was lost first. When ctx ends, the Lease
// is released only after run has returned, so that a standby taking it over at once never runs
// the controllers beside this process's. run must return soon after its context ends.
func RunLeading(ctx context.Context, kube kubernetes.Interface, lease Lease, run func(ctx context.Context)) error {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, lease.Namespace, lease.Name,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: lease.Identity})
	if err != nil {
		return err
	}
	// The elector renews, and releases on cancel, under a context of its own, which ends only
	// once run has returned (or when nothing was ever run).
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	started, done := make(chan struct{}), make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            lease.Name,
		LeaseDuration:   lease.LeaseDuration,
		RenewDeadline:   lease.RenewDeadline,
		RetryPeriod:     lease.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				close(started)
				defer close(done)
				defer stopElector()
				runCtx, cancel := context.WithCancel(leading)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				klog.InfoS("holding the lease: running its controllers", "lease", klog.KRef(lease.Namespace, lease.Name), "identity", lease.Identity)
				run(runCtx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != lease.Identity {
					klog.InfoS("the lease is held by another process", "lease", klog.KRef(lease.Namespace, lease.Name), "holder", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	// Still waiting for the Lease when ctx ends: stop waiting. (Should it be won meanwhile, run
	// starts with ctx already done, returns, and stops the elector itself.)
	defer context.AfterFunc(ctx, func() {
		select {
		case <-started:
		default:
			stopElector()
		}
	})()
	klog.InfoS("waiting for the lease", "lease", klog.KRef(lease.Namespace, lease.Name), "identity", lease.Identity)
	// Run returns once the elector's context ends (after run returned, the Lease released) or
	// renewing the Lease failed; then run's context has ended too, and its end is awaited for a
	// while, as the Lease may be someone else's already.
	elector.Run(electorCtx)
	select {
	case <-started:
		select {
		case <-done:
		case <-time.After(lease.RenewDeadline):
			klog.InfoS("the controllers did not stop within the renew deadline", "lease", klog.KRef(lease.Namespace, lease.Name))
		}
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%w %s/%s as %s", ErrLeaseLost, lease.Namespace, lease.Name, lease.Identity)
}
