package dashboard

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// The kinds the dashboard watches in its namespace, by the name the page knows them by.
const (
	kindApplication = "Application"
	kindEnvironment = "Environment"
	kindBinding     = "SnapshotEnvironmentBinding"
	kindSnapshot    = "Snapshot"
	kindRun         = "PromotionRun"
	kindDeployment  = "GitOpsDeployment"
	kindAudit       = "AuditEntry"
	kindRecord      = "DeploymentRecord"
	kindHold        = "GitOpsDeploymentHold"
)

// Kinds are the kinds watched, in the order the page lists errors about them.
var Kinds = []string{kindApplication, kindEnvironment, kindBinding, kindSnapshot, kindRun, kindDeployment, kindRecord, kindHold, kindAudit}

// keepAudit is how many of the newest AuditEntries the dashboard keeps: the history shows
// the latest, and a namespace keeps 30 days of them.
const keepAudit = 500

// source lists and watches one kind in one namespace with the typed client.
type source struct {
	kind  string
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

func sources(c versioned.Interface, ns string) []source {
	studio, managed := c.AppStudioV1alpha1(), c.ManagedGitopsV1alpha1()
	return []source{
		{kindApplication, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return studio.Applications(ns).List(ctx, o)
		}, studio.Applications(ns).Watch},
		{kindEnvironment, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return studio.Environments(ns).List(ctx, o)
		}, studio.Environments(ns).Watch},
		{kindBinding, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return studio.SnapshotEnvironmentBindings(ns).List(ctx, o)
		}, studio.SnapshotEnvironmentBindings(ns).Watch},
		{kindSnapshot, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return studio.Snapshots(ns).List(ctx, o)
		}, studio.Snapshots(ns).Watch},
		{kindRun, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return studio.PromotionRuns(ns).List(ctx, o)
		}, studio.PromotionRuns(ns).Watch},
		{kindDeployment, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return managed.GitOpsDeployments(ns).List(ctx, o)
		}, managed.GitOpsDeployments(ns).Watch},
		{kindRecord, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return managed.DeploymentRecords(ns).List(ctx, o)
		}, managed.DeploymentRecords(ns).Watch},
		{kindHold, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return managed.GitOpsDeploymentHolds(ns).List(ctx, o)
		}, managed.GitOpsDeploymentHolds(ns).Watch},
		{kindAudit, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return managed.AuditEntries(ns).List(ctx, o)
		}, managed.AuditEntries(ns).Watch},
	}
}

// store holds what the watches saw, by kind and name, and the error that keeps a kind from
// being listed (a 403 above all), and tells subscribers which kinds changed.
type store struct {
	mu      sync.Mutex
	objects map[string]map[string]runtime.Object
	errs    map[string]error
	listed  map[string]bool
	subs    map[*subscriber]struct{}
}

// subscriber is one page's event stream: the kinds changed since it last looked.
type subscriber struct {
	pending map[string]bool
	signal  chan struct{}
}

func newStore() *store {
	s := &store{objects: map[string]map[string]runtime.Object{}, errs: map[string]error{},
		listed: map[string]bool{}, subs: map[*subscriber]struct{}{}}
	for _, k := range Kinds {
		s.objects[k] = map[string]runtime.Object{}
	}
	return s
}

func (s *store) subscribe() *subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := &subscriber{pending: map[string]bool{}, signal: make(chan struct{}, 1)}
	s.subs[sub] = struct{}{}
	return sub
}

func (s *store) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, sub)
}

// changed takes the kinds changed since the last call.
func (s *store) changed(sub *subscriber) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kinds []string
	for _, k := range Kinds {
		if sub.pending[k] {
			kinds = append(kinds, k)
		}
	}
	sub.pending = map[string]bool{}
	return kinds
}

// notify tells every subscriber that kind changed; s.mu is held.
func (s *store) notify(kind string) {
	for sub := range s.subs {
		sub.pending[kind] = true
		select {
		case sub.signal <- struct{}{}:
		default:
		}
	}
}

func (s *store) replace(kind string, items []runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]runtime.Object{}
	for _, o := range items {
		if a, err := meta.Accessor(o); err == nil {
			m[a.GetName()] = slim(o)
		}
	}
	s.objects[kind] = m
	s.trim(kind)
	s.errs[kind] = nil
	s.listed[kind] = true
	s.notify(kind)
}

func (s *store) set(kind string, o runtime.Object, deleted bool) {
	a, err := meta.Accessor(o)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleted {
		delete(s.objects[kind], a.GetName())
	} else {
		s.objects[kind][a.GetName()] = slim(o)
		s.trim(kind)
	}
	s.notify(kind)
}

// slim drops what the page never shows from an object before the store keeps it: a record's
// rendered manifests (up to 256 KiB each; the diff view asks the API for the difference).
func slim(o runtime.Object) runtime.Object {
	if r, ok := o.(*managedv1alpha1.DeploymentRecord); ok && r.Status.Manifests != nil {
		r = r.DeepCopy()
		r.Status.Manifests = nil
		return r
	}
	return o
}

// trim drops the oldest AuditEntries beyond keepAudit: their names are their zero-padded
// resourceVersions, so the smallest name is the oldest. s.mu is held.
func (s *store) trim(kind string) {
	m := s.objects[kind]
	if kind != kindAudit || len(m) <= keepAudit {
		return
	}
	names := sortedNames(m)
	for _, n := range names[:len(names)-keepAudit] {
		delete(m, n)
	}
}

func (s *store) setError(kind string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs[kind] = err
	s.listed[kind] = true
	// What may no longer be read is no longer shown.
	s.objects[kind] = map[string]runtime.Object{}
	s.notify(kind)
}

// snapshot is a copy of what the store holds, for building the page's state.
type snapshot struct {
	objects map[string][]runtime.Object
	errs    map[string]error
	listed  bool
}

func (s *store) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := snapshot{objects: map[string][]runtime.Object{}, errs: map[string]error{}, listed: true}
	for _, k := range Kinds {
		for _, n := range sortedNames(s.objects[k]) {
			out.objects[k] = append(out.objects[k], s.objects[k][n])
		}
		if s.errs[k] != nil {
			out.errs[k] = s.errs[k]
		}
		if !s.listed[k] {
			out.listed = false
		}
	}
	return out
}

// run lists and watches src until ctx ends: a refused list is kept as the kind's error and
// tried again later; a watch that ends is opened again from the last resourceVersion seen,
// and one that is too old (410 Gone) lists again.
func (s *store) run(ctx context.Context, src source, retry time.Duration) {
	for ctx.Err() == nil {
		list, err := src.list(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.setError(src.kind, err)
			sleep(ctx, retry)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			s.setError(src.kind, err)
			sleep(ctx, retry)
			continue
		}
		s.replace(src.kind, items)
		rv := ""
		if l, err := meta.ListAccessor(list); err == nil {
			rv = l.GetResourceVersion()
		}
		s.follow(ctx, src, rv, retry)
	}
}

// follow watches from rv until the watch cannot go on; then run lists again.
func (s *store) follow(ctx context.Context, src source, rv string, retry time.Duration) {
	for ctx.Err() == nil {
		w, err := src.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				s.setError(src.kind, err)
				sleep(ctx, retry)
			}
			return
		}
		// A watch ends with ctx; stopping it also ends one that does not (a fake's).
		stop := context.AfterFunc(ctx, w.Stop)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				stop()
				w.Stop()
				if status, ok := ev.Object.(*metav1.Status); ok && status.Code != 410 {
					s.setError(src.kind, apierrors.FromObject(ev.Object))
					sleep(ctx, retry)
				}
				return
			case watch.Added, watch.Modified, watch.Deleted:
				s.set(src.kind, ev.Object, ev.Type == watch.Deleted)
				fallthrough
			case watch.Bookmark:
				if a, err := meta.Accessor(ev.Object); err == nil && a.GetResourceVersion() != "" {
					rv = a.GetResourceVersion()
				}
			}
		}
		stop()
		w.Stop()
		if rv == "" {
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
