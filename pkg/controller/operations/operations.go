// Package operations keeps the record of every change the agent makes in Argo CD: an
// Operation in the Argo CD namespace per change (internal kind: only the service's own accounts
// may read it), written by a Recorder, which also deletes the Operations older than its
// retention.
//
// Unlike the original, the record is not a step of the change: the change is made first, and
// the record is written afterwards by a goroutine of its own, so keeping the audit trail never
// slows reconciling and a lost record never blocks a deployment. The one exception is a
// SyncRun: an agent killed between its refresh or the start of its sync and the record would
// lose the record for good, so the SyncRun controller makes sure of both (Ensure) before it
// writes the SyncRun's outcome.
package operations

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// fieldManager is the field manager of the Recorder's writes.
const fieldManager = "gitops-service-agent"

// Change is one write the agent made, or failed to make, in Argo CD.
type Change struct {
	ResourceType managedv1alpha1.OperationResourceType
	Target       managedv1alpha1.OperationTarget
	Source       managedv1alpha1.OperationSource
	// Action says what was done, e.g. "applied" or "deleted".
	Action string
	Err    error
	At     time.Time
	// Name, when set, is the Operation's name, for a change that happens once: recording it
	// again (a restarted agent does, not knowing whether its predecessor did) finds that
	// Operation rather than making another.
	Name string
}

func (c Change) message() string {
	if c.Err != nil {
		return fmt.Sprintf("%s %s %s failed: %v", c.Action, c.Target.Kind, c.Target.Name, c.Err)
	}
	return fmt.Sprintf("%s %s %s", c.Action, c.Target.Kind, c.Target.Name)
}

var operationsDropped = metrics.NewCounter(&metrics.CounterOpts{
	Subsystem:      "gitops_agent",
	Name:           "operations_dropped_total",
	Help:           "Changes whose Operation record was dropped because the recorder fell behind or failed.",
	StabilityLevel: metrics.ALPHA,
})

func init() { legacyregistry.MustRegister(operationsDropped) }

// Recorder writes Operations for the changes it is handed, with recorderShards
// writers; the changes of one target always go to the same writer, in order.
type Recorder struct {
	client    versioned.Interface
	namespace string
	shards    []*recorderShard

	// queued holds the changes with a Name handed to record and not yet written, by Name:
	// ensure waits for their writer, which counts the attempt they are.
	queuedMu sync.Mutex
	queued   map[string]*queuedRecords
}

// queuedRecords counts the records of one Name waiting for their writer; written is closed
// when the last is written (or dropped).
type queuedRecords struct {
	n       int
	written chan struct{}
}

// recorderShards bounds the Operation writes in flight: each change costs two requests (the
// create, then the status), so a burst of a thousand changes would take a single writer
// minutes to record.
const recorderShards = 8

type recorderShard struct {
	changes chan Change
	// open maps a target whose last change failed to its Operation, so that retries of the same
	// change count as attempts of one Operation rather than as new ones.
	open map[managedv1alpha1.OperationTarget]string
}

// NewRecorder makes the Recorder of the Operations in namespace; Run starts its writers.
func NewRecorder(client versioned.Interface, namespace string) *Recorder {
	r := &Recorder{client: client, namespace: namespace, queued: map[string]*queuedRecords{}}
	for i := 0; i < recorderShards; i++ {
		r.shards = append(r.shards, &recorderShard{
			changes: make(chan Change, 1024),
			open:    map[managedv1alpha1.OperationTarget]string{},
		})
	}
	return r
}

// Record hands c to the recorder without waiting.
func (r *Recorder) Record(c Change) {
	if c.At.IsZero() {
		c.At = time.Now()
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(c.Target.Kind + "/" + c.Target.Name))
	r.queue(c, 1)
	select {
	case r.shards[h.Sum32()%recorderShards].changes <- c:
	default:
		r.queue(c, -1)
		operationsDropped.Inc()
	}
}

// queue adds delta to the count of c's Name in queued, for a change with one.
func (r *Recorder) queue(c Change, delta int) {
	if c.Name == "" {
		return
	}
	r.queuedMu.Lock()
	defer r.queuedMu.Unlock()
	q := r.queued[c.Name]
	if q == nil {
		q = &queuedRecords{written: make(chan struct{})}
		r.queued[c.Name] = q
	}
	if q.n += delta; q.n <= 0 {
		close(q.written)
		delete(r.queued, c.Name)
	}
}

// writtenSignal is closed once no record of name waits for its writer; nil when none does.
func (r *Recorder) writtenSignal(name string) <-chan struct{} {
	r.queuedMu.Lock()
	defer r.queuedMu.Unlock()
	if q := r.queued[name]; q != nil {
		return q.written
	}
	return nil
}

// Run writes records until ctx is done, and every retention/10 deletes finished Operations
// older than retention.
func (r *Recorder) Run(ctx context.Context, retention time.Duration) {
	var wg sync.WaitGroup
	wg.Add(1 + len(r.shards))
	go func() {
		defer wg.Done()
		wait.UntilWithContext(ctx, func(ctx context.Context) { r.collect(ctx, time.Now().Add(-retention)) }, retention/10)
	}()
	for _, shard := range r.shards {
		go func(shard *recorderShard) {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case c := <-shard.changes:
					if err := r.write(ctx, shard, c); err != nil {
						operationsDropped.Inc()
						klog.V(2).InfoS("recording an Operation", "err", err, "target", c.Target.Name)
					}
					r.queue(c, -1)
				}
			}
		}(shard)
	}
	// Returning only once every writer stopped: under leader election the Lease is released
	// when Run returns, and no write of this process may follow.
	wg.Wait()
}

func (c Change) state() managedv1alpha1.OperationStateType {
	if c.Err != nil {
		return managedv1alpha1.OperationStateFailed
	}
	return managedv1alpha1.OperationStateCompleted
}

func (r *Recorder) write(ctx context.Context, shard *recorderShard, c Change) error {
	if c.Name != "" {
		return r.ensure(ctx, c, true)
	}
	ops := r.client.ManagedGitopsV1alpha1().Operations(r.namespace)
	state := c.state()
	at := metav1.NewTime(c.At)
	if name, ok := shard.open[c.Target]; ok {
		delete(shard.open, c.Target)
		op, err := ops.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			op.Status = managedv1alpha1.OperationStatus{State: state, Message: c.message(), Attempts: op.Status.Attempts + 1, LastStateUpdate: &at}
			if _, err := ops.UpdateStatus(ctx, op, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
				return err
			}
			if c.Err != nil {
				shard.open[c.Target] = name
			}
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	op, err := ops.Create(ctx, &managedv1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "operation-"},
		Spec: managedv1alpha1.OperationSpec{
			ResourceType: c.ResourceType, Target: c.Target, Source: c.Source,
		},
	}, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		return err
	}
	op.Status = managedv1alpha1.OperationStatus{State: state, Message: c.message(), Attempts: 1, LastStateUpdate: &at}
	if _, err := ops.UpdateStatus(ctx, op, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return err
	}
	if c.Err != nil {
		shard.open[c.Target] = op.Name
	}
	return nil
}

// Ensure makes sure, now, of the record of a change that has a Name, made earlier and handed
// to Record: it waits for that record if it is still queued, and writes it unless the
// Operation says so already (ensure, not again).
func (r *Recorder) Ensure(ctx context.Context, c Change) error { return r.ensure(ctx, c, false) }

// ensure records a change that has a Name, now: it creates the Operation unless it exists,
// and writes its status. An Operation without a status is one an agent created and died
// before completing. The change happened again if again (a write the agent just made): that
// counts as one more attempt, however the Operation ended before. Otherwise (a record made
// sure of after the fact) an Operation that says so already is left as it is. A record of
// it that this agent queued and has not written yet is waited for: made sure of first, the
// Operation would count that record as a second attempt, and left to it, it would be lost if
// the agent died before its writer ran.
func (r *Recorder) ensure(ctx context.Context, c Change, again bool) error {
	if written := r.writtenSignal(c.Name); !again && written != nil {
		select {
		case <-written:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	ops := r.client.ManagedGitopsV1alpha1().Operations(r.namespace)
	op, err := ops.Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		op, err = ops.Create(ctx, &managedv1alpha1.Operation{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name},
			Spec:       managedv1alpha1.OperationSpec{ResourceType: c.ResourceType, Target: c.Target, Source: c.Source},
		}, metav1.CreateOptions{FieldManager: fieldManager})
		if apierrors.IsAlreadyExists(err) {
			op, err = ops.Get(ctx, c.Name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return err
	}
	if !again && op.Status.State == c.state() && op.Status.Message == c.message() {
		return nil
	}
	at := metav1.NewTime(c.At)
	op.Status = managedv1alpha1.OperationStatus{State: c.state(), Message: c.message(), Attempts: op.Status.Attempts + 1, LastStateUpdate: &at}
	_, err = ops.UpdateStatus(ctx, op, metav1.UpdateOptions{FieldManager: fieldManager})
	return err
}

// collect deletes the Operations that finished before cutoff. A failed Operation the agent is
// still retrying is updated on every attempt, so it never looks finished for long.
func (r *Recorder) collect(ctx context.Context, cutoff time.Time) {
	ops := r.client.ManagedGitopsV1alpha1().Operations(r.namespace)
	list, err := ops.List(ctx, metav1.ListOptions{})
	if err != nil {
		klog.V(2).InfoS("listing Operations to collect", "err", err)
		return
	}
	for i := range list.Items {
		op := &list.Items[i]
		if !expired(op, cutoff) {
			continue
		}
		uid := op.UID
		err := ops.Delete(ctx, op.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			klog.V(2).InfoS("deleting an expired Operation", "err", err, "operation", op.Name)
		}
	}
}

// expired tells whether op finished (or was last touched) before cutoff.
func expired(op *managedv1alpha1.Operation, cutoff time.Time) bool {
	last := op.CreationTimestamp.Time
	if op.Status.LastStateUpdate != nil {
		last = op.Status.LastStateUpdate.Time
	}
	return last.Before(cutoff)
}
