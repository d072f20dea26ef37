package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/clientconfig"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// Step names, in the order the workload runs them.
const (
	StepCreate       = "create"
	StepGet          = "get"
	StepUpdateStatus = "update status"
	StepList         = "list (full)"
	StepListPaged    = "list (limit=500, per page)"
	StepListLabel    = "list (label selector, 1%)"
	StepWatch        = "watch delivery"
	StepDelete       = "delete"
)

// BucketLabel is the label every benchmark object carries, with 100 values: selecting one
// value matches 1% of the objects.
const BucketLabel = "bench.gitops-service.io/bucket"

// Target is one way of serving GitOpsDeployments that the workload runs against.
type Target struct {
	Name        string // A, B, C
	Description string
	GVR         schema.GroupVersionResource
	Kind        string
	Namespace   string
	// ContentType is what its single-object requests speak (ContentTypeJSON or
	// ContentTypeProtobuf); lists and watches read JSON for every target.
	ContentType string

	dynamic dynamic.Interface
	objects objectClient
	rest    rest.Interface
	// restConfig is rest's configuration; the watch step builds one client per watcher from it.
	restConfig *rest.Config
}

// NewTarget builds the clients of a target from a rest.Config. The client of single objects
// (creates, gets, status updates, deletes: the dynamic client in JSON, or our typed clientset
// in protobuf, which only our GitOpsDeployments serve), the dynamic client (cleaning up) and
// the REST client (lists, whose bodies are read but not decoded into objects, so that the
// client's decoding does not hide the server's time) share one HTTP client and so one
// connection.
func NewTarget(name, description string, cfg *rest.Config, gvr schema.GroupVersionResource, kind, namespace, contentType string) (*Target, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // no client-side rate limiting
	cfg.Burst = 0
	cfg.Timeout = 5 * time.Minute
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	rcfg := rest.CopyConfig(cfg)
	rcfg.GroupVersion = &schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}
	rcfg.APIPath = "/apis"
	rcfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientForConfigAndClient(rcfg, httpClient)
	if err != nil {
		return nil, err
	}
	t := &Target{Name: name, Description: description, GVR: gvr, Kind: kind, Namespace: namespace, ContentType: contentType, dynamic: dyn, rest: rc, restConfig: rcfg}
	switch contentType {
	case ContentTypeJSON:
		t.objects = dynamicObjects{r: t.resource()}
	case ContentTypeProtobuf:
		if gvr != gitopsv1alpha1.SchemeGroupVersion.WithResource("gitopsdeployments") || kind != "GitOpsDeployment" {
			return nil, fmt.Errorf("target %s: protobuf needs our GitOpsDeployments (%s), not %s", name, gitopsv1alpha1.SchemeGroupVersion, gvr)
		}
		typed, err := versioned.NewForConfigAndClient(clientconfig.Protobuf(cfg), httpClient)
		if err != nil {
			return nil, err
		}
		t.objects = typedObjects{c: typed.ManagedGitopsV1alpha1().GitOpsDeployments(namespace)}
	default:
		return nil, fmt.Errorf("target %s: content type %q is neither %s nor %s", name, contentType, ContentTypeJSON, ContentTypeProtobuf)
	}
	return t, nil
}

func (t *Target) resource() dynamic.ResourceInterface {
	return t.dynamic.Resource(t.GVR).Namespace(t.Namespace)
}

// Workload is one run of every step at one size and concurrency.
type Workload struct {
	N           int   // objects
	C           int   // concurrent clients for create, get, update status and delete
	Reads       bool  // run the list and watch steps too (they do not depend on C)
	Watchers    []int // W values for the watch step
	ListReps    int   // repetitions of each list step; 0 picks by N
	WatchWrites int   // writes observed by the watch step; 0 means min(N, 200)
	// GetMin is the least number of gets the get step makes: whole passes over the N objects,
	// as many as it takes (one pass when N ≥ GetMin). One pass over 1,000 objects with 32
	// clients lasts under half a second, too short a sample for its rate and tail.
	GetMin int
	// Skip names steps (StepGet, StepUpdateStatus, StepList, StepListPaged, StepListLabel,
	// StepWatch) left out; create and delete always run, they fill and empty the target.
	Skip map[string]bool
	// Stored is called once all N objects are stored and have a status, before the reads.
	Stored func(ctx context.Context) error
	Log    func(format string, args ...interface{})
}

// Result holds the samples of each step, keyed by step name (the watch step as
// "watch delivery W=<w>").
type Result map[string]*Samples

func (r Result) add(step string, s Samples) {
	if r[step] == nil {
		r[step] = &Samples{}
	}
	r[step].Merge(s)
}

// WatchStep is the key of the watch step with w watchers.
func WatchStep(w int) string { return fmt.Sprintf("%s W=%d", StepWatch, w) }

func (w *Workload) logf(format string, args ...interface{}) {
	if w.Log != nil {
		w.Log(format, args...)
	}
}

func (w *Workload) listReps() int {
	if w.ListReps > 0 {
		return w.ListReps
	}
	switch {
	case w.N <= 1000:
		return 20
	case w.N <= 10000:
		return 5
	default:
		return 3
	}
}

// ObjectName is the name of the i-th benchmark object.
func ObjectName(i int) string { return fmt.Sprintf("bench-%06d", i) }

func (t *Target) newObject(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": t.GVR.GroupVersion().String(),
		"kind":       t.Kind,
		"metadata": map[string]interface{}{
			"name":      ObjectName(i),
			"namespace": t.Namespace,
			"labels": map[string]interface{}{
				BucketLabel:                  strconv.Itoa(i % 100),
				"app.kubernetes.io/name":     "bench",
				"app.kubernetes.io/instance": fmt.Sprintf("tenant-%d", i%10),
			},
		},
		"spec": map[string]interface{}{
			"source": map[string]interface{}{
				"repoURL":        fmt.Sprintf("https://github.com/example/gitops-%d", i%50),
				"path":           fmt.Sprintf("environments/overlays/app-%d", i),
				"targetRevision": "main",
			},
			"destination": map[string]interface{}{"namespace": t.Namespace},
			"type":        "automated",
		},
	}}
}

func setStatus(obj *unstructured.Unstructured, revision string) {
	spec, _ := obj.Object["spec"].(map[string]interface{})
	source, _ := spec["source"].(map[string]interface{})
	dest, _ := spec["destination"].(map[string]interface{})
	obj.Object["status"] = map[string]interface{}{
		"sync":   map[string]interface{}{"status": "Synced", "revision": revision},
		"health": map[string]interface{}{"status": "Healthy"},
		"reconciledState": map[string]interface{}{
			"source": map[string]interface{}{
				"path": source["path"], "repoURL": source["repoURL"], "branch": source["targetRevision"],
			},
			"destination": map[string]interface{}{"name": "", "namespace": dest["namespace"]},
		},
		"resources": []interface{}{
			map[string]interface{}{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": dest["namespace"],
				"name": "web", "status": "Synced", "health": map[string]interface{}{"status": "Healthy"}},
			map[string]interface{}{"version": "v1", "kind": "Service", "namespace": dest["namespace"],
				"name": "web", "status": "Synced", "health": map[string]interface{}{"status": "Healthy"}},
		},
	}
}

// parallel runs op(i) for i in [0, n) on c workers and times each call.
func parallel(ctx context.Context, n, c int, op func(ctx context.Context, i int) error) (Samples, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		s        Samples
		firstErr error
		wg       sync.WaitGroup
	)
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := op(ctx, i)
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					s.Errors++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				ok[i] = true
			}
		}()
	}
	wg.Wait()
	s.Wall = time.Since(start)
	for i := range lat {
		if ok[i] {
			s.Latencies = append(s.Latencies, lat[i])
		}
	}
	return s, firstErr
}

// tolerate fails the step when more than 1% of its operations failed; fewer are reported.
func tolerate(step string, s Samples, err error, ops int) error {
	if err == nil {
		return nil
	}
	if s.Errors*100 > ops {
		return fmt.Errorf("%s: %d of %d failed, first: %w", step, s.Errors, ops, err)
	}
	return nil
}

// Clean deletes every object of the target's namespace and waits until none is left.
func (t *Target) Clean(ctx context.Context) error {
	list, err := t.resource().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return nil
	}
	if err := t.resource().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := t.resource().List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("%s: objects left in %s after deleting the collection", t.Name, t.Namespace)
}

// storedObjects holds the objects as the server last returned them, each encoded (JSON or
// protobuf, as the target's objectClient speaks), for the writes that send them back. Decoded, 100,000 of them were about 2 GB of maps that the
// client's collector marked again and again while the lists ran: that work competed for the
// machine's CPUs with the server being timed, and doubled the p50 of a label-selected list of
// a thousand objects that takes about 20 ms (measured with a separate client holding 100,000
// decoded objects: 34 against 21-25 ms). Encoded they are 200 MB of bytes it does not scan.
type storedObjects [][]byte

// getOps is the number of gets of the get step: whole passes over the N objects, at least GetMin.
func (w *Workload) getOps() int {
	if w.N <= 0 || w.N >= w.GetMin {
		return w.N
	}
	return (w.GetMin + w.N - 1) / w.N * w.N
}

// Run runs the workload against t and returns the samples of each step.
func (w *Workload) Run(ctx context.Context, t *Target) (Result, error) {
	res := Result{}
	objs := make(storedObjects, w.N)

	s, err := parallel(ctx, w.N, w.C, func(ctx context.Context, i int) error {
		b, err := t.objects.create(ctx, t.newObject(i))
		objs[i] = b
		return err
	})
	if err := tolerate(StepCreate, s, err, w.N); err != nil {
		return nil, err
	}
	res.add(StepCreate, s)
	w.logf("%s N=%d C=%d: %s %.0f/s", t.Name, w.N, w.C, StepCreate, s.Summarize().Throughput)

	if !w.Skip[StepGet] {
		gets := w.getOps()
		s, err = parallel(ctx, gets, w.C, func(ctx context.Context, i int) error {
			return t.objects.get(ctx, ObjectName(i%w.N))
		})
		if err := tolerate(StepGet, s, err, gets); err != nil {
			return nil, err
		}
		res.add(StepGet, s)
	}

	if !w.Skip[StepUpdateStatus] {
		if err := w.updateStatus(ctx, t, objs, res); err != nil {
			return nil, err
		}
	}

	if w.Reads {
		if w.Stored != nil {
			if err := w.Stored(ctx); err != nil {
				return nil, err
			}
		}
		if err := w.reads(ctx, t, objs, res); err != nil {
			return nil, err
		}
	}

	s, err = parallel(ctx, w.N, w.C, func(ctx context.Context, i int) error {
		return t.objects.delete(ctx, ObjectName(i))
	})
	if err := tolerate(StepDelete, s, err, w.N); err != nil {
		return nil, err
	}
	res.add(StepDelete, s)
	return res, nil
}

func (w *Workload) updateStatus(ctx context.Context, t *Target, objs storedObjects, res Result) error {
	s, err := parallel(ctx, w.N, w.C, func(ctx context.Context, i int) error {
		_, err := t.storedUpdateStatus(ctx, objs, i, fmt.Sprintf("%040x", i))
		return err
	})
	if err := tolerate(StepUpdateStatus, s, err, w.N); err != nil {
		return err
	}
	res.add(StepUpdateStatus, s)
	w.logf("%s N=%d C=%d: %s %.0f/s", t.Name, w.N, w.C, StepUpdateStatus, s.Summarize().Throughput)
	return nil
}

// listBody is a list response read without decoding its items.
type listBody struct {
	Metadata metav1.ListMeta   `json:"metadata"`
	Items    []json.RawMessage `json:"items"`
}

// rawList lists with params and returns the body and the time from the request to the last
// byte of the response. The items are split (to count them) only after that: scanning tens of
// megabytes of JSON is the client's work, the same for every target, and timing it would
// dilute the difference between the servers.
func (t *Target) rawList(ctx context.Context, params map[string]string) (*listBody, time.Duration, error) {
	req := t.rest.Get().Namespace(t.Namespace).Resource(t.GVR.Resource).SetHeader("Accept", "application/json")
	for k, v := range params {
		req = req.Param(k, v)
	}
	t0 := time.Now()
	raw, err := req.Do(ctx).Raw()
	took := time.Since(t0)
	if err != nil {
		return nil, took, err
	}
	var body listBody
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, took, err
	}
	return &body, took, nil
}

// serialLists runs reps lists one after another; each sample is rawList's time, and the wall
// time is their sum.
func serialLists(reps int, list func(i int) (time.Duration, error)) (Samples, error) {
	var s Samples
	for i := range reps {
		took, err := list(i)
		if err != nil {
			return s, err
		}
		s.Latencies = append(s.Latencies, took)
		s.Wall += took
	}
	return s, nil
}

func (w *Workload) reads(ctx context.Context, t *Target, objs storedObjects, res Result) error {
	reps := w.listReps()

	if !w.Skip[StepList] {
		if err := w.fullList(ctx, t, reps, res); err != nil {
			return err
		}
	}
	if !w.Skip[StepListPaged] {
		if err := w.pagedList(ctx, t, reps, res); err != nil {
			return err
		}
	}
	if !w.Skip[StepListLabel] {
		if err := w.labelList(ctx, t, reps, res); err != nil {
			return err
		}
	}
	if w.Skip[StepWatch] {
		return nil
	}
	for _, watchers := range w.Watchers {
		s, err := w.watchDelivery(ctx, t, objs, watchers)
		if err != nil {
			return fmt.Errorf("%s: %w", WatchStep(watchers), err)
		}
		res.add(WatchStep(watchers), s)
		w.logf("%s N=%d: %s p99 %v", t.Name, w.N, WatchStep(watchers), s.Summarize().P99)
	}
	return nil
}

// fullList lists without a resourceVersion, as a client asks for a consistent read.
func (w *Workload) fullList(ctx context.Context, t *Target, reps int, res Result) error {
	s, err := serialLists(reps, func(int) (time.Duration, error) {
		body, took, err := t.rawList(ctx, nil)
		if err == nil && len(body.Items) != w.N {
			err = fmt.Errorf("full list returned %d items, want %d", len(body.Items), w.N)
		}
		return took, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", StepList, err)
	}
	res.add(StepList, s)
	w.logf("%s N=%d: %s p50 %v", t.Name, w.N, StepList, s.Summarize().P50)
	return nil
}

// pagedList walks the list in pages of 500; every page of a complete walk is one operation.
func (w *Workload) pagedList(ctx context.Context, t *Target, reps int, res Result) error {
	var paged Samples
	for range reps {
		cont, items := "", 0
		for {
			params := map[string]string{"limit": "500"}
			if cont != "" {
				params["continue"] = cont
			}
			body, took, err := t.rawList(ctx, params)
			if err != nil {
				return fmt.Errorf("%s: %w", StepListPaged, err)
			}
			paged.Latencies = append(paged.Latencies, took)
			paged.Wall += took
			items += len(body.Items)
			if cont = body.Metadata.Continue; cont == "" {
				break
			}
		}
		if items != w.N {
			return fmt.Errorf("%s: walked %d items, want %d", StepListPaged, items, w.N)
		}
	}
	res.add(StepListPaged, paged)
	w.logf("%s N=%d: %s p50 %v", t.Name, w.N, StepListPaged, paged.Summarize().P50)
	return nil
}

// minLabelLists is the fewest label-selected lists the label step makes at any N.
const minLabelLists = 50

// labelList lists with a label selector matching 1%: a different bucket each time.
func (w *Workload) labelList(ctx context.Context, t *Target, reps int, res Result) error {
	want := func(bucket int) int {
		c := w.N / 100
		if bucket < w.N%100 {
			c++
		}
		return c
	}
	// Each list selects a bucket of its own, and its time depends on how many of that
	// bucket's pages the server has read before: at least 50 lists, so that the p50 is not
	// at the mercy of a few buckets.
	labelReps := max(5*reps, minLabelLists)
	s, err := serialLists(labelReps, func(i int) (time.Duration, error) {
		bucket := (i * 37) % 100
		body, took, err := t.rawList(ctx, map[string]string{"labelSelector": fmt.Sprintf("%s=%d", BucketLabel, bucket)})
		if err == nil && len(body.Items) != want(bucket) {
			err = fmt.Errorf("label list returned %d items, want %d", len(body.Items), want(bucket))
		}
		return took, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", StepListLabel, err)
	}
	res.add(StepListLabel, s)
	w.logf("%s N=%d: %s p50 %v", t.Name, w.N, StepListLabel, s.Summarize().P50)
	return nil
}

type seen struct {
	key string
	at  time.Time
}

// watchEvent is the part of a watch event the watch step reads.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	} `json:"object"`
}

// watchClient returns a REST client with a connection of its own. Watchers are meant to stand
// for separate clients (controllers, kubectl): on one shared HTTP/2 connection, one goroutine
// of the client reads the frames of every watch in turn, and the step would measure that.
// client-go shares transports between equal configurations unless a Dial is set.
func (t *Target) watchClient() (rest.Interface, error) {
	cfg := rest.CopyConfig(t.restConfig)
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return rest.RESTClientFor(cfg)
}

// watchDelivery opens `watchers` watches on the namespace, then writes status updates one at a
// time, and measures for every (write, watcher) the time from the write's response to the
// event carrying the written resourceVersion.
//
// Each watcher has its own connection and goroutine and takes the time as soon as an event is
// read off the wire, decoding only its name and resourceVersion: decoding whole objects into
// unstructured maps, a hundred per write in this one process on a shared 2-CPU machine, made
// the client's CPU the bottleneck and added its queueing to every sample, for every target.
func (w *Workload) watchDelivery(ctx context.Context, t *Target, objs storedObjects, watchers int) (Samples, error) {
	writes := w.WatchWrites
	if writes <= 0 {
		writes = 200
	}
	writes = min(writes, w.N)

	start, _, err := t.rawList(ctx, map[string]string{"limit": "1"})
	if err != nil {
		return Samples{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make([][]seen, watchers)
	unexpected := make([]atomic.Value, watchers)
	var wg sync.WaitGroup
	for j := range watchers {
		client, err := t.watchClient()
		if err != nil {
			return Samples{}, err
		}
		stream, err := client.Get().Namespace(t.Namespace).Resource(t.GVR.Resource).
			Param("watch", "true").Param("resourceVersion", start.Metadata.ResourceVersion).
			SetHeader("Accept", "application/json").Stream(ctx)
		if err != nil {
			return Samples{}, fmt.Errorf("watch %d: %w", j, err)
		}
		events[j] = make([]seen, 0, writes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stream.Close()
			dec := json.NewDecoder(stream)
			for remaining := writes; remaining > 0; {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					if ctx.Err() == nil {
						unexpected[j].Store(fmt.Sprintf("reading the watch: %v", err))
					}
					return
				}
				now := time.Now()
				var ev watchEvent
				if err := json.Unmarshal(raw, &ev); err != nil {
					unexpected[j].Store(fmt.Sprintf("decoding an event: %v", err))
					return
				}
				switch ev.Type {
				case watch.Error:
					unexpected[j].Store(fmt.Sprintf("error event: %s", raw))
					return
				case watch.Modified:
					md := ev.Object.Metadata
					events[j] = append(events[j], seen{key: md.Name + "@" + md.ResourceVersion, at: now})
					remaining--
				}
			}
		}()
	}

	written := make(map[string]time.Time, writes)
	begin := time.Now()
	for i := range writes {
		// A new revision, so every write changes the object.
		key, err := t.storedUpdateStatus(ctx, objs, i, fmt.Sprintf("%020x%020x", time.Now().UnixNano(), i))
		if err != nil {
			return Samples{}, err
		}
		written[key] = time.Now()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cancel()
		<-done
	}
	s := Samples{Wall: time.Since(begin)}
	for j := range watchers {
		got := 0
		for _, e := range events[j] {
			at, ok := written[e.key]
			if !ok {
				continue
			}
			got++
			s.Latencies = append(s.Latencies, max(0, e.at.Sub(at)))
		}
		s.Errors += writes - got
	}
	if s.Errors > 0 {
		for j := range unexpected {
			if msg, ok := unexpected[j].Load().(string); ok {
				return s, fmt.Errorf("%d of %d events were not delivered: watcher %d: %s", s.Errors, writes*watchers, j, msg)
			}
		}
		return s, fmt.Errorf("%d of %d events were not delivered within 60s", s.Errors, writes*watchers)
	}
	return s, nil
}

// Reachable checks that the target serves its resource.
func (t *Target) Reachable(ctx context.Context) error {
	_, err := t.resource().List(ctx, metav1.ListOptions{Limit: 1})
	return err
}
