package placement

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedclient "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/managedgitops/v1alpha1"
)

// gated is the controller's GitOps client with gate called before each write of a
// TenantPlacement, outside the fake clientset, whose reactors run one at a time under its lock:
// a gate can hold writes in flight together, which a reactor cannot. An error of gate fails
// the write.
type gated struct {
	versioned.Interface
	gate func(verb, name string) error
}

func (g gated) ManagedGitopsV1alpha1() managedclient.ManagedGitopsV1alpha1Interface {
	return gatedGroup{g.Interface.ManagedGitopsV1alpha1(), g.gate}
}

type gatedGroup struct {
	managedclient.ManagedGitopsV1alpha1Interface
	gate func(verb, name string) error
}

func (g gatedGroup) TenantPlacements() managedclient.TenantPlacementInterface {
	return gatedPlacements{g.ManagedGitopsV1alpha1Interface.TenantPlacements(), g.gate}
}

type gatedPlacements struct {
	managedclient.TenantPlacementInterface
	gate func(verb, name string) error
}

func (g gatedPlacements) Create(ctx context.Context, p *placementT, opts metav1.CreateOptions) (*placementT, error) {
	if err := g.gate("create", p.Name); err != nil {
		return nil, err
	}
	return g.TenantPlacementInterface.Create(ctx, p, opts)
}

func (g gatedPlacements) Update(ctx context.Context, p *placementT, opts metav1.UpdateOptions) (*placementT, error) {
	if err := g.gate("update", p.Name); err != nil {
		return nil, err
	}
	return g.TenantPlacementInterface.Update(ctx, p, opts)
}

func (g gatedPlacements) UpdateStatus(ctx context.Context, p *placementT, opts metav1.UpdateOptions) (*placementT, error) {
	if err := g.gate("update/status", p.Name); err != nil {
		return nil, err
	}
	return g.TenantPlacementInterface.UpdateStatus(ctx, p, opts)
}

func (g gatedPlacements) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := g.gate("delete", name); err != nil {
		return err
	}
	return g.TenantPlacementInterface.Delete(ctx, name, opts)
}

// inFlight counts the gated writes under way, and the most there were at once.
type inFlight struct {
	mu      sync.Mutex
	now     int
	most    int
	reached chan struct{} // closed once `want` writes were in flight together
	want    int
}

func newInFlight(want int) *inFlight { return &inFlight{reached: make(chan struct{}), want: want} }

func (f *inFlight) start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now++
	if f.now > f.most {
		f.most = f.now
		if f.most == f.want {
			close(f.reached)
		}
	}
}

func (f *inFlight) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now--
}

func (f *inFlight) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most
}

// The writes of one sync are in flight together, as many as writesInFlight and no more: each
// of the first writes waits until that many are under way. One write after another would
// never get there; the wait then gives up, and the test fails rather than hangs.
func TestWritesOfOneSyncAreConcurrent(t *testing.T) {
	const limit, tenants = 4, 9
	objs := []runtime.Object{instance("a", 100), instance("b", 100)}
	for i := range tenants {
		objs = append(objs, deployment(fmt.Sprintf("t%d", i)))
	}
	f := newFixture(t, nil, objs...)
	f.c.writesInFlight = limit
	flight := newInFlight(limit)
	// Once one write has waited in vain, the others do not wait: a sequential sync fails in
	// 5 s, not 5 s a write.
	timeout := time.After(5 * time.Second)
	gaveUp := make(chan struct{})
	var giveUp sync.Once
	f.c.gitops = gated{Interface: f.gitops, gate: func(string, string) error {
		flight.start()
		defer flight.end()
		select {
		case <-flight.reached:
			time.Sleep(time.Millisecond) // long enough for a write past the limit to show
			return nil
		case <-timeout:
			giveUp.Do(func() { close(gaveUp) })
		case <-gaveUp:
		}
		return fmt.Errorf("%d writes in flight at most after 5 s, want %d together", flight.peak(), limit)
	}}

	f.mustSync()
	if got := flight.peak(); got != limit {
		t.Errorf("%d writes in flight at most, want %d (writesInFlight)", got, limit)
	}
	// The plan is the same as one write after another would have carried out: it is decided
	// first, and counts every move on its target.
	f.expectPlaced("t0=a", "t1=b", "t2=a", "t3=b", "t4=a", "t5=b", "t6=a", "t7=b", "t8=a")
	f.expectWrites("create tenantplacements t0", "create tenantplacements t1", "create tenantplacements t2",
		"create tenantplacements t3", "create tenantplacements t4", "create tenantplacements t5",
		"create tenantplacements t6", "create tenantplacements t7", "create tenantplacements t8")
}

// Concurrent writes cannot fill an instance past its capacity: the plan counts them all
// before any goes out, so the tenants past the last place are stuck, not placed.
func TestConcurrentWritesKeepCapacity(t *testing.T) {
	objs := []runtime.Object{instance("a", 3), instance("b", 2)}
	for i := range 8 {
		objs = append(objs, deployment(fmt.Sprintf("t%d", i)))
	}
	f := newFixture(t, nil, objs...)
	f.mustSync()
	f.expectPlaced("t0=a", "t1=b", "t2=a", "t3=b", "t4=a", "t5=", "t6=", "t7=")
	for _, name := range []string{"t5", "t6", "t7"} {
		if msg := f.placements()[name].Status.Message; !strings.HasPrefix(msg, noRoom+": ") {
			t.Errorf("%s's message %q, want no room", name, msg)
		}
	}
}

// Failed writes stop neither the others nor the deletions of gone tenants' placements: every
// write is tried, and the sync returns all their errors (which requeues it), the failures
// that are not conflicts first, so that the framework does not take the sync's error for a
// mere conflict.
func TestFailedWritesDoNotStopTheOthers(t *testing.T) {
	objs := []runtime.Object{instance("a", 100), instance("b", 100), placement("gone1", "a"), placement("gone2", "b")}
	for i := range 6 {
		objs = append(objs, deployment(fmt.Sprintf("t%d", i)))
	}
	f := newFixture(t, nil, objs...)
	f.c.gitops = gated{Interface: f.gitops, gate: func(verb, name string) error {
		switch {
		case verb == "create" && name == "t1":
			return apierrors.NewConflict(managedv1alpha1.Resource("tenantplacements"), name, errors.New("changed"))
		case verb == "create" && name == "t4":
			return apierrors.NewInternalError(errors.New("the database is gone"))
		case verb == "delete" && name == "gone1":
			return apierrors.NewServiceUnavailable("try later")
		}
		return nil
	}}

	err := f.sync()
	if err == nil {
		t.Fatal("sync succeeded, want the failed writes' errors")
	}
	if !apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err) {
		t.Errorf("sync: %v; want a failure first, not the conflict", err)
	}
	for _, want := range []string{"3 writes failed", "deleting the TenantPlacement of gone namespace gone1", "placing tenant t4",
		"placing tenant t1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("sync: %v; want it to say %q", err, want)
		}
	}
	var status apierrors.APIStatus
	var found []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if errors.As(e, &status) {
			found = append(found, string(status.Status().Reason))
		}
	}
	if want := []string{"ServiceUnavailable", "InternalError", "Conflict"}; strings.Join(found, ",") != strings.Join(want, ",") {
		t.Errorf("errors' reasons %v, want %v", found, want)
	}
	// gone1's placement stays and counts on a; t1 and t4 wait for the next sync.
	f.expectPlaced("gone1=a", "t0=b", "t2=b", "t3=a", "t5=a")
}

func TestWriteErrorsMessage(t *testing.T) {
	if err := joinWriteErrors(nil); err != nil {
		t.Errorf("no errors: %v", err)
	}
	one := errors.New("placing tenant t1 on instance a: boom")
	if err := joinWriteErrors([]error{one}); err.Error() != one.Error() || !errors.Is(err, one) {
		t.Errorf("one error: %v", err)
	}
	var many []error
	for i := range 8 {
		many = append(many, fmt.Errorf("e%d", i))
	}
	err := joinWriteErrors(many)
	if want := "8 writes failed: e0; e1; e2; e3; e4; and 3 more"; err.Error() != want {
		t.Errorf("%q, want %q", err.Error(), want)
	}
	if !errors.Is(err, many[7]) {
		t.Errorf("the last error is not among %v", err)
	}
}
