package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/scheme"
)

const (
	linWorkersPerReplica  = 3
	linWatchersPerReplica = 2
	// linOpTimeout ends an operation whose replica is frozen; its outcome is then unknown.
	linOpTimeout = 10 * time.Second
	// linPathPrefix starts spec.source.path; the rest is the token naming the write.
	linPathPrefix = "deploy/"
)

// linNames are few so that operations contend on every key.
var linNames = []string{"a", "b", "c", "d", "e"}

type linKind int

const (
	linCreate linKind = iota
	linGet
	linUpdate     // PUT without resourceVersion: unconditional
	linUpdateIfRV // PUT with resourceVersion: compare-and-swap
	linDelete
	linList
)

var linKindNames = []string{"create", "get", "update", "update-if-rv", "delete", "list"}

func (k linKind) String() string { return linKindNames[k] }

func (k linKind) writes() bool { return k == linCreate || k == linUpdate || k == linUpdateIfRV }

type linOutcome int

const (
	linOK       linOutcome = iota
	linNotFound            // 404
	linConflict            // 409: already exists, or a resourceVersion mismatch
	linUnknown             // timeout, connection error, 5xx: it may or may not have taken effect
	linRefused             // the connection was refused: the request was never sent
)

var linOutcomeNames = []string{"ok", "404", "409", "unknown", "refused"}

func (o linOutcome) String() string { return linOutcomeNames[o] }

// linObject is what a read returns for one object: the token of the write that wrote it and
// its resourceVersion.
type linObject struct {
	Token string
	RV    int64
}

// linOp is one recorded operation. Call and Return are nanoseconds on the test's clock.
type linOp struct {
	Client  int
	Replica int
	Kind    linKind
	Name    string // "" for lists
	Token   string // written by creates and updates
	IfRV    int64  // the precondition of linUpdateIfRV
	Call    int64
	Return  int64
	Outcome linOutcome
	Err     string
	// Result: the RV written or read (a list's snapshot RV), the object read, the list's items.
	RV    int64
	Read  linObject
	Items map[string]linObject
	Pages int
}

func (op linOp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s, %s] client %d via replica-%d: %s", fmtTime(op.Call), fmtTime(op.Return), op.Client, op.Replica, op.Kind)
	if op.Name != "" {
		fmt.Fprintf(&b, " %s", op.Name)
	}
	if op.Token != "" {
		fmt.Fprintf(&b, " token=%s", op.Token)
	}
	if op.Kind == linUpdateIfRV {
		fmt.Fprintf(&b, " if-rv=%d", op.IfRV)
	}
	fmt.Fprintf(&b, " -> %s", op.Outcome)
	switch {
	case op.Outcome != linOK:
		if op.Err != "" {
			fmt.Fprintf(&b, " (%s)", op.Err)
		}
	case op.Kind == linGet:
		fmt.Fprintf(&b, " %s@%d", op.Read.Token, op.Read.RV)
	case op.Kind == linList:
		fmt.Fprintf(&b, " rv=%d %s", op.RV, formatItems(op.Items))
	case op.RV != 0:
		fmt.Fprintf(&b, " rv=%d", op.RV)
	}
	return b.String()
}

// linWorker is one client goroutine bound to one replica.
type linWorker struct {
	id      int
	replica *linReplica
	clock   *linClock
	rng     *rand.Rand
	seq     int
	// lastRV is the newest RV this worker saw per key: the precondition of its CAS updates,
	// often stale on purpose.
	lastRV  map[string]int64
	ops     []linOp
	refused int
	done    chan struct{}
}

func startWorkers(ctx context.Context, c *linCluster) []*linWorker {
	var workers []*linWorker
	for _, r := range c.replicas {
		for i := 0; i < linWorkersPerReplica; i++ {
			id := len(workers)
			workers = append(workers, &linWorker{id: id, replica: r, clock: c.clock,
				rng: rand.New(rand.NewSource(time.Now().UnixNano() + int64(id))), lastRV: map[string]int64{},
				done: make(chan struct{})})
		}
	}
	for _, w := range workers {
		go w.run(ctx)
	}
	return workers
}

func (w *linWorker) run(ctx context.Context) {
	defer close(w.done)
	for ctx.Err() == nil {
		w.step(ctx)
		// A pause between operations keeps the history small enough for porcupine over a long
		// run; the workers still overlap on every key.
		time.Sleep(time.Duration(10+w.rng.Intn(40)) * time.Millisecond)
	}
}

// collectOps waits for the stopped workers and merges their histories.
func collectOps(workers []*linWorker) []linOp {
	var ops []linOp
	for _, w := range workers {
		<-w.done
		ops = append(ops, w.ops...)
	}
	return ops
}

func countRefused(workers []*linWorker) int {
	n := 0
	for _, w := range workers {
		n += w.refused
	}
	return n
}

func (w *linWorker) step(ctx context.Context) {
	ep := w.replica.endpoint()
	if ep == nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	op := linOp{Client: w.id, Replica: w.replica.id, Name: linNames[w.rng.Intn(len(linNames))]}
	switch p := w.rng.Intn(100); {
	case p < 18:
		op.Kind = linCreate
	case p < 43:
		op.Kind = linGet
	case p < 55:
		op.Kind = linUpdate
	case p < 70:
		op.Kind = linUpdateIfRV
		// RV 1 is the counter's initial value, which no object ever has: a sure 409 (or 404),
		// where an empty resourceVersion would make the update unconditional.
		op.IfRV = max(w.lastRV[op.Name], 1)
	case p < 82:
		op.Kind = linDelete
	default:
		op.Kind, op.Name = linList, ""
	}
	if op.Kind.writes() {
		w.seq++
		op.Token = fmt.Sprintf("w%d-%d", w.id, w.seq)
	}
	opCtx, cancel := context.WithTimeout(ctx, linOpTimeout)
	defer cancel()
	op.Call = w.clock.now()
	err := w.perform(opCtx, ep.rest, &op)
	op.Return = w.clock.now()
	op.Outcome, op.Err = classify(err)
	if op.Outcome == linRefused {
		w.refused++
		time.Sleep(50 * time.Millisecond)
		return
	}
	if op.Outcome == linUnknown {
		// Back off as a real client would: every unknown write widens porcupine's search, and
		// during an outage a worker would otherwise fire dozens of them a second.
		defer time.Sleep(time.Second)
	}
	if op.Outcome == linOK && op.Name != "" && (op.Kind.writes() || op.Kind == linGet) {
		w.lastRV[op.Name] = op.RV
	}
	w.ops = append(w.ops, op)
}

func (w *linWorker) perform(ctx context.Context, rc rest.Interface, op *linOp) error {
	switch op.Kind {
	case linCreate:
		return writeObject(ctx, rc.Post().Namespace(linNamespace).Resource("gitopsdeployments"), linDeployment(op.Name, op.Token, 0), op)
	case linUpdate, linUpdateIfRV:
		req := rc.Put().Namespace(linNamespace).Resource("gitopsdeployments").Name(op.Name)
		return writeObject(ctx, req, linDeployment(op.Name, op.Token, op.IfRV), op)
	case linGet:
		var out gitopsv1alpha1.GitOpsDeployment
		err := rc.Get().Namespace(linNamespace).Resource("gitopsdeployments").Name(op.Name).MaxRetries(0).Do(ctx).Into(&out)
		if err == nil {
			op.Read = objectOf(&out)
			op.RV = op.Read.RV
		}
		return err
	case linDelete:
		return rc.Delete().Namespace(linNamespace).Resource("gitopsdeployments").Name(op.Name).MaxRetries(0).Do(ctx).Error()
	case linList:
		return w.list(ctx, rc, op)
	}
	panic("unknown operation")
}

// list reads the namespace in one request or, half of the time, in pages of two, which all
// read the first page's snapshot.
func (w *linWorker) list(ctx context.Context, rc rest.Interface, op *linOp) error {
	limit := int64(0)
	if w.rng.Intn(2) == 0 {
		limit = 2
	}
	op.Items = map[string]linObject{}
	cont := ""
	for {
		page, err := listPage(ctx, rc, cont, limit)
		if err != nil {
			return err
		}
		rv, err := strconv.ParseInt(page.ResourceVersion, 10, 64)
		if err != nil {
			return err
		}
		if op.Pages > 0 && rv != op.RV {
			// Reported by the checker as a list that is not one snapshot.
			op.Items["!page-rv"] = linObject{RV: rv}
		}
		op.RV = rv
		op.Pages++
		for i := range page.Items {
			op.Items[page.Items[i].Name] = objectOf(&page.Items[i])
		}
		if cont = page.Continue; cont == "" {
			return nil
		}
	}
}

func listPage(ctx context.Context, rc rest.Interface, cont string, limit int64) (*gitopsv1alpha1.GitOpsDeploymentList, error) {
	var out gitopsv1alpha1.GitOpsDeploymentList
	err := rc.Get().Namespace(linNamespace).Resource("gitopsdeployments").
		VersionedParams(&metav1.ListOptions{Limit: limit, Continue: cont}, scheme.ParameterCodec).
		MaxRetries(0).Do(ctx).Into(&out)
	return &out, err
}

func writeObject(ctx context.Context, req *rest.Request, obj *gitopsv1alpha1.GitOpsDeployment, op *linOp) error {
	var out gitopsv1alpha1.GitOpsDeployment
	err := req.Body(obj).MaxRetries(0).Do(ctx).Into(&out)
	if err != nil {
		return err
	}
	got := objectOf(&out)
	op.RV = got.RV
	if got.Token != op.Token {
		// A successful write returns what it wrote; the checker flags the mismatch.
		op.Read = got
	}
	return nil
}

// linDeployment is a valid GitOpsDeployment whose path carries the write's token.
func linDeployment(name, token string, rv int64) *gitopsv1alpha1.GitOpsDeployment {
	d := &gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: linNamespace},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: linPathPrefix + token},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	if rv != 0 {
		d.ResourceVersion = strconv.FormatInt(rv, 10)
	}
	return d
}

func objectOf(d *gitopsv1alpha1.GitOpsDeployment) linObject {
	rv, _ := strconv.ParseInt(d.ResourceVersion, 10, 64)
	return linObject{Token: strings.TrimPrefix(d.Spec.Source.Path, linPathPrefix), RV: rv}
}

// classify sorts an error into a definite outcome or an unknown one. A refused connection never
// carried the request; any other error without a 404 or 409 may hide a committed write.
func classify(err error) (linOutcome, string) {
	switch {
	case err == nil:
		return linOK, ""
	case apierrors.IsNotFound(err):
		return linNotFound, ""
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return linConflict, ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return linRefused, err.Error()
	}
	msg := err.Error()
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return linUnknown, msg
}

// linWatcher keeps one watch open on one replica from the start RV to the end of the test,
// reconnecting from the last RV it saw. A 410 ends its segment; it then lists and starts a new
// segment from the list's RV, so that the rest of the run is still checked.
type linWatcher struct {
	id       int
	replica  *linReplica
	segments []*linSegment
	lastRV   atomic.Int64
	done     chan struct{}
}

// linSegment is a stretch of one watcher's events that must have no gap.
type linSegment struct {
	Watcher int
	Replica int
	From    int64 // the RV the segment starts after
	Events  []linEvent
	// Expired is the 410 that ended the segment, if one did.
	Expired string
	// ExpiredAt is the RV the 410 answered.
	ExpiredAt int64
	// Problems are events that cannot be part of any history (a bookmark going backwards).
	Problems []string
	// Last is the watcher's segment still open at the end: it must reach the last change.
	Last bool
}

type linEvent struct {
	Type  watch.EventType
	Name  string
	Token string
	RV    int64
}

func (e linEvent) String() string { return fmt.Sprintf("%d %s %s %s", e.RV, e.Type, e.Name, e.Token) }

func startWatchers(ctx context.Context, c *linCluster, startRV int64) []*linWatcher {
	var watchers []*linWatcher
	for _, r := range c.replicas {
		for i := 0; i < linWatchersPerReplica; i++ {
			w := &linWatcher{id: len(watchers), replica: r, done: make(chan struct{})}
			w.lastRV.Store(startRV)
			w.segments = []*linSegment{{Watcher: w.id, Replica: r.id, From: startRV}}
			watchers = append(watchers, w)
			go w.run(ctx)
		}
	}
	return watchers
}

func (w *linWatcher) run(ctx context.Context) {
	defer close(w.done)
	rng := rand.New(rand.NewSource(time.Now().UnixNano() + int64(w.id)))
	for ctx.Err() == nil {
		ep := w.replica.endpoint()
		if ep == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		// Watches end on their own after a while, so that reconnects happen without faults too.
		timeout := int64(5 + rng.Intn(25))
		wi, err := ep.typed.ManagedGitopsV1alpha1().GitOpsDeployments(linNamespace).Watch(ctx, metav1.ListOptions{
			ResourceVersion: strconv.FormatInt(w.lastRV.Load(), 10), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				w.expired(ctx, err.Error())
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		w.consume(ctx, wi)
		wi.Stop()
	}
}

func (w *linWatcher) consume(ctx context.Context, wi watch.Interface) {
	seg := w.segments[len(w.segments)-1]
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Error:
			if status, ok := ev.Object.(*metav1.Status); ok && status.Code == 410 {
				w.expired(ctx, status.Message)
			}
			return
		case watch.Bookmark:
			d, ok := ev.Object.(*gitopsv1alpha1.GitOpsDeployment)
			if !ok {
				continue
			}
			rv, _ := strconv.ParseInt(d.ResourceVersion, 10, 64)
			if rv < w.lastRV.Load() {
				seg.Problems = append(seg.Problems, fmt.Sprintf("bookmark at RV %d after RV %d", rv, w.lastRV.Load()))
				continue
			}
			w.lastRV.Store(rv)
		default:
			d, ok := ev.Object.(*gitopsv1alpha1.GitOpsDeployment)
			if !ok {
				seg.Problems = append(seg.Problems, fmt.Sprintf("%s event with a %T", ev.Type, ev.Object))
				continue
			}
			o := objectOf(d)
			seg.Events = append(seg.Events, linEvent{Type: ev.Type, Name: d.Name, Token: o.Token, RV: o.RV})
			w.lastRV.Store(o.RV)
		}
	}
}

// expired ends the current segment with a 410 and starts the next one from a fresh list.
func (w *linWatcher) expired(ctx context.Context, msg string) {
	seg := w.segments[len(w.segments)-1]
	seg.Expired, seg.ExpiredAt = msg, w.lastRV.Load()
	for ctx.Err() == nil {
		if ep := w.replica.endpoint(); ep != nil {
			lctx, cancel := context.WithTimeout(ctx, linOpTimeout)
			page, err := listPage(lctx, ep.rest, "", 0)
			cancel()
			if err == nil {
				rv, _ := strconv.ParseInt(page.ResourceVersion, 10, 64)
				w.lastRV.Store(rv)
				w.segments = append(w.segments, &linSegment{Watcher: w.id, Replica: w.replica.id, From: rv})
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitWatchersCaughtUp waits until every watcher has seen rv; it reports whether all did.
func waitWatchersCaughtUp(watchers []*linWatcher, rv int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		behind := 0
		for _, w := range watchers {
			if w.lastRV.Load() < rv {
				behind++
			}
		}
		if behind == 0 {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

func collectSegments(watchers []*linWatcher) []*linSegment {
	var segs []*linSegment
	for _, w := range watchers {
		<-w.done
		w.segments[len(w.segments)-1].Last = true
		segs = append(segs, w.segments...)
	}
	return segs
}
