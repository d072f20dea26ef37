package placement

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// maxWritesInFlight is how many of one sync's writes (creates and updates of TenantPlacements,
// deletions of gone tenants' ones, instances marked lost) are in flight at once. The writes of
// a plan are independent of one another, and gitops-apiserver's storage commits concurrent
// writes together in few transactions, so a plan of a thousand new tenants takes a fraction of
// the time one write after another would. Bounded, so that one sync neither opens a connection
// per tenant nor crowds out the agent's other clients; the client's own rate limit
// (--kube-api-qps, --kube-api-burst) still applies to the sum.
const maxWritesInFlight = 32

// writes runs one phase of a sync's writes, at most limit at once, in the order they are
// given, and keeps every error.
type writes struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error // by the order the writes were given; nil for a write that succeeded
}

func (c *Controller) newWrites() *writes {
	return &writes{sem: make(chan struct{}, max(1, c.writesInFlight))}
}

// Go starts write once fewer than the limit are in flight (it blocks until then), so that the
// writes go out in the order given: the plan's.
func (w *writes) Go(write func() error) {
	w.mu.Lock()
	i := len(w.errs)
	w.errs = append(w.errs, nil)
	w.mu.Unlock()
	w.sem <- struct{}{}
	w.wg.Add(1)
	go func() {
		defer func() {
			<-w.sem
			w.wg.Done()
		}()
		if err := write(); err != nil {
			w.mu.Lock()
			w.errs[i] = err
			w.mu.Unlock()
		}
	}()
}

// Wait waits for every write started and returns their errors, in the order the writes were
// given.
func (w *writes) Wait() []error {
	w.wg.Wait()
	var out []error
	for _, err := range w.errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// maxQuotedErrors is how many of a sync's failed writes its error quotes; it counts the rest.
const maxQuotedErrors = 5

// writeErrors is every failed write of one sync. Other failures come before conflicts: the
// framework reads the first one's reason (apierrors.IsConflict), and logs a conflict, which
// only means the cache had not seen a write yet, at a verbosity of its own.
type writeErrors []error

func joinWriteErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	out := make(writeErrors, 0, len(errs))
	for _, err := range errs {
		if !apierrors.IsConflict(err) {
			out = append(out, err)
		}
	}
	for _, err := range errs {
		if apierrors.IsConflict(err) {
			out = append(out, err)
		}
	}
	return out
}

// Error quotes the first few, so that a sync whose thousand writes failed logs one line.
func (e writeErrors) Error() string {
	messages := make([]string, len(e))
	for i, err := range e {
		messages[i] = err.Error()
	}
	if len(messages) == 1 {
		return messages[0]
	}
	return fmt.Sprintf("%d writes failed: %s", len(e), framework.JoinMessages(messages, maxQuotedErrors))
}

// Unwrap gives errors.Is and errors.As (and so apierrors' Is* functions) every error.
func (e writeErrors) Unwrap() []error { return e }
