// Package tenantsecrets reads the tenants' Secrets (the credentials of ManagedEnvironments,
// DeploymentTargets and repository credentials) in the tenant namespaces a process serves, and
// nowhere else: no identity of the service may read Secrets cluster-wide
// (docs/operator-identities.md). Before it watches a namespace, the process binds the
// ClusterRole ReaderRole there to its own ServiceAccount (bind.go); when it stops serving the
// namespace, it stops watching and deletes that binding.
//
// A Set is one process's view of those namespaces. Its components say which namespaces they
// serve (ServeWhile, ServeWhereAny), and read the Secrets of a type through Of: one lister
// across the namespaces, and event handlers that every namespace's informer gets, now and later.
// One informer per namespace and type, with a field selector on the type, so that no other
// Secret is held in memory.
package tenantsecrets

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Name names the Set's work queue (of namespaces) and its log lines.
const Name = "tenantsecrets"

// Set watches the Secrets of its types in the namespaces its components serve.
type Set struct {
	*framework.Controller
	kube kubernetes.Interface
	// serves say whether a component serves a namespace; the Set watches it while any does.
	serves []func(namespace string) bool

	mu  sync.Mutex
	ctx context.Context
	// types are the Secrets of each type, by type.
	types   map[string]*Secrets
	running map[string]*namespaceInformers
	// pending are the namespaces queued and not yet looked at once: the Secrets are not synced
	// before each namespace that a component served at start is watched.
	pending sets.Set[string]
	// self is the subject the Set binds ReaderRole to (bind.go), once known.
	self      *rbacv1.Subject
	selfKnown bool
}

// namespaceInformers are the informers of one namespace, one per type.
type namespaceInformers struct {
	stop   context.CancelFunc
	byType map[string]cache.SharedIndexInformer
	// regs are the registrations of each type's handlers, in the order of Secrets.handlers.
	regs map[string][]cache.ResourceEventHandlerRegistration
	// forbidden is set when a list or watch was refused: the binding is missing or was changed
	// under the Set. Such a namespace does not hold back HasSynced (it may never list), and the
	// Set binds again at the namespace's next event.
	forbidden atomic.Bool
}

// New is a Set reading Secrets through kube (the cluster of the GitOps API).
func New(kube kubernetes.Interface) *Set {
	s := &Set{kube: kube, types: map[string]*Secrets{}, running: map[string]*namespaceInformers{}, pending: sets.New[string]()}
	s.Controller = framework.NewController(Name, s.sync)
	return s
}

// Of is the Secrets of secretType in the namespaces served. Every type is asked for while the
// process is wired, before Run.
func (s *Set) Of(secretType string) *Secrets {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.types[secretType]; ok {
		return v
	}
	v := &Secrets{set: s, secretType: secretType}
	s.types[secretType] = v
	return v
}

// ServeWhile watches the namespaces for which serves says yes, asked again for the namespace
// namespaceOf names at every event of inf.
func (s *Set) ServeWhile(inf framework.EventSource, namespaceOf func(obj interface{}) string, serves func(namespace string) bool) error {
	s.serves = append(s.serves, serves)
	return s.Watch(inf, framework.OnChange(func(obj interface{}) { s.queue(namespaceOf(framework.UnwrapTombstone(obj))) }))
}

// ServeWhereAny watches the namespaces where any of infs (namespaced kinds) has an object.
func (s *Set) ServeWhereAny(infs ...cache.SharedIndexInformer) error {
	s.serves = append(s.serves, func(namespace string) bool {
		for _, inf := range infs {
			found := false
			_ = cache.ListAllByNamespace(inf.GetIndexer(), namespace, labels.Everything(), func(interface{}) { found = true })
			if found {
				return true
			}
		}
		return false
	})
	namespaceOf := func(obj interface{}) {
		if m, err := meta.Accessor(framework.UnwrapTombstone(obj)); err == nil {
			s.queue(m.GetNamespace())
		}
	}
	for _, inf := range infs {
		// Whether a namespace has an object changes only with an add or a delete.
		if err := s.Watch(inf, cache.ResourceEventHandlerFuncs{AddFunc: namespaceOf, DeleteFunc: namespaceOf}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Set) queue(namespace string) {
	if namespace == "" {
		return
	}
	s.mu.Lock()
	s.pending.Insert(namespace)
	s.mu.Unlock()
	s.Add(namespace)
}

// Run watches the namespaces served until ctx is done, when every informer stops.
func (s *Set) Run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.Controller.Run(ctx, 1)
}

// sync makes the Set watch namespace, or not, as its components serve it.
func (s *Set) sync(ctx context.Context, namespace string) error {
	defer func() {
		s.mu.Lock()
		s.pending.Delete(namespace)
		s.mu.Unlock()
	}()
	served := false
	for _, serves := range s.serves {
		if serves(namespace) {
			served = true
			break
		}
	}
	s.mu.Lock()
	ni := s.running[namespace]
	s.mu.Unlock()
	return s.act(ctx, namespace, planFor(served, ni != nil, ni != nil && ni.forbidden.Load()))
}

// act carries p out for namespace: a namespace is watched only once its binding exists, so
// that the first list is not refused, and its binding goes only once it is not watched.
func (s *Set) act(ctx context.Context, namespace string, p plan) error {
	if p.stop {
		s.stopWatching(namespace)
	}
	if p.unbind {
		if err := s.unbind(ctx, namespace); err != nil {
			return err
		}
	}
	created := false
	if p.bind {
		bound, made, err := s.bind(ctx, namespace)
		if err != nil || !bound {
			return err
		}
		created = made
		if created && !p.start {
			// Bound again under watching informers: their next list is to find the binding
			// honoured, or it is refused again, and this made again at the next event.
			s.awaitReadable(ctx, namespace)
		}
		s.mu.Lock()
		if ni := s.running[namespace]; ni != nil {
			ni.forbidden.Store(false)
		}
		s.mu.Unlock()
	}
	if p.start {
		s.startWatching(namespace, created)
	}
	return nil
}

// startWatching starts namespace's informers; with awaitAccess (its binding was just made),
// only once the authorizer lets this process list the namespace's Secrets (awaitReadable).
func (s *Set) startWatching(namespace string, awaitAccess bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[namespace] != nil {
		return
	}
	ctx, stop := context.WithCancel(s.ctx)
	ni := &namespaceInformers{stop: stop, byType: map[string]cache.SharedIndexInformer{}, regs: map[string][]cache.ResourceEventHandlerRegistration{}}
	for t, v := range s.types {
		selector := fields.OneTermEqualSelector("type", t).String()
		inf := coreinformers.NewFilteredSecretInformer(s.kube, namespace, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) { o.FieldSelector = selector })
		// Set before Run: only fails on a started informer.
		_ = inf.SetWatchErrorHandler(func(r *cache.Reflector, err error) {
			if apierrors.IsForbidden(err) {
				ni.forbidden.Store(true)
			}
			cache.DefaultWatchErrorHandler(r, err)
		})
		for _, h := range v.handlers {
			// A new informer: adding a handler fails only on a stopped one.
			reg, _ := inf.AddEventHandler(h)
			ni.regs[t] = append(ni.regs[t], reg)
		}
		ni.byType[t] = inf
	}
	s.running[namespace] = ni
	// In a goroutine of its own: the Set's one worker goes on binding other namespaces.
	go func() {
		if awaitAccess {
			s.awaitReadable(ctx, namespace)
		}
		if ctx.Err() != nil {
			return // no longer served
		}
		for _, inf := range ni.byType {
			go inf.Run(ctx.Done())
		}
	}()
}

// readableBackoff and readableAsks pace awaitReadable: a binding usually reaches
// kube-apiserver's authorizer (an informer of RBAC objects) within tens of milliseconds; under
// load it takes longer. After readableAsks questions (50 ms, then doubling up to a second: 6.55
// s in all) the informers start regardless and their lists retry on their own. (A Backoff's
// Steps drop to 0 at its Cap, after which it stays there, so the questions are counted here.)
var readableBackoff = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: readableAsks}

const readableAsks = 10

// awaitReadable waits until kube-apiserver's authorizer lets this process list namespace's
// Secrets, asking it with SelfSubjectAccessReviews (every user may). A binding just made is
// not honoured at once, and a list refused meanwhile was logged as an error and marked the
// namespace forbidden, which made the Set delete and make the binding again at the
// namespace's next event: hundreds of refusals while a fleet placed its tenants.
func (s *Set) awaitReadable(ctx context.Context, namespace string) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "list", Resource: "secrets"}}}
	b := readableBackoff
	for range readableAsks {
		select {
		case <-ctx.Done():
			return
		case <-time.After(b.Step()):
		}
		r, err := s.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
	}
	klog.InfoS("the authorizer does not yet let this process list the Secrets of a namespace it bound; watching it all the same", "namespace", namespace)
}

// stopWatching stops namespace's informers. Their Secrets leave the listers without delete
// events: the components stopped serving the namespace, so nothing of theirs there is to act on.
func (s *Set) stopWatching(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ni := s.running[namespace]; ni != nil {
		ni.stop()
		delete(s.running, namespace)
	}
}

// synced tells whether every namespace served at start has been looked at.
func (s *Set) synced() bool {
	if !s.HandlersSynced() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending.Len() == 0
}

// Secrets are the Secrets of one type in the namespaces a Set watches (framework.Secrets).
type Secrets struct {
	set        *Set
	secretType string
	// handlers are added to every namespace's informer (under set.mu).
	handlers []cache.ResourceEventHandler
}

// AddEventHandler gives h the events of the Secrets of every namespace watched, now or later.
func (v *Secrets) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	s := v.set
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(v.handlers)
	v.handlers = append(v.handlers, h)
	for _, ni := range s.running {
		reg, err := ni.byType[v.secretType].AddEventHandler(h)
		if err != nil {
			return nil, err
		}
		ni.regs[v.secretType] = append(ni.regs[v.secretType], reg)
	}
	return registration{v, i}, nil
}

// HasSynced tells whether every namespace served is watched and its informer has listed (or
// was refused, see namespaceInformers.forbidden).
func (v *Secrets) HasSynced() bool {
	return v.syncedBy(func(ni *namespaceInformers) bool { return ni.byType[v.secretType].HasSynced() })
}

func (v *Secrets) syncedBy(synced func(*namespaceInformers) bool) bool {
	s := v.set
	if !s.synced() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ni := range s.running {
		if !ni.forbidden.Load() && !synced(ni) {
			return false
		}
	}
	return true
}

// registration is the i-th handler of v, on every namespace's informer.
type registration struct {
	v *Secrets
	i int
}

func (r registration) HasSynced() bool {
	return r.v.syncedBy(func(ni *namespaceInformers) bool { return ni.regs[r.v.secretType][r.i].HasSynced() })
}

// Lister lists the Secrets of every namespace watched; a namespace not watched has none.
func (v *Secrets) Lister() corelisters.SecretLister { return lister{v} }

type lister struct{ v *Secrets }

// unwatched is the store of a namespace not watched: empty.
var unwatched = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})

func (l lister) List(selector labels.Selector) ([]*corev1.Secret, error) {
	s := l.v.set
	s.mu.Lock()
	infs := make([]cache.SharedIndexInformer, 0, len(s.running))
	for _, ni := range s.running {
		infs = append(infs, ni.byType[l.v.secretType])
	}
	s.mu.Unlock()
	var out []*corev1.Secret
	for _, inf := range infs {
		list, err := corelisters.NewSecretLister(inf.GetIndexer()).List(selector)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
	}
	return out, nil
}

func (l lister) Secrets(namespace string) corelisters.SecretNamespaceLister {
	s := l.v.set
	s.mu.Lock()
	defer s.mu.Unlock()
	if ni := s.running[namespace]; ni != nil {
		return corelisters.NewSecretLister(ni.byType[l.v.secretType].GetIndexer()).Secrets(namespace)
	}
	return corelisters.NewSecretLister(unwatched).Secrets(namespace)
}
