package environment

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// sourceSecrets watches, one by one, the Opaque Secrets that Environments use through a
// DeploymentTarget (a SpaceRequest's Secret is Opaque). The controller copies them, so it must
// see them change; but a watch of every Opaque Secret would cache most Secrets of the cluster.
// Each watch selects one Secret by name and type, as the kubelet watches its pods' Secrets, and
// lasts while an Environment uses the Secret.
type sourceSecrets struct {
	kube kubernetes.Interface
	// changed is told the key of each Environment that uses a Secret that changed.
	changed func(key string)

	mu  sync.Mutex
	ctx context.Context
	// watches by the Secret's "namespace/name"; used: the Secret key of each Environment key.
	watches map[string]*sourceWatch
	used    map[string]string
}

type sourceWatch struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	users    sets.Set[string]
}

func newSourceSecrets(kube kubernetes.Interface, changed func(key string)) *sourceSecrets {
	return &sourceSecrets{kube: kube, changed: changed, watches: map[string]*sourceWatch{}, used: map[string]string{}}
}

// start lets watches run until ctx is done.
func (w *sourceSecrets) start(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctx = ctx
}

// use records that the Environment user uses the Secret namespace/name and returns it as the
// watch has it (nil when it has none); synced is false until the watch has listed it.
func (w *sourceSecrets) use(user, namespace, name string) (secret *corev1.Secret, synced bool) {
	key := namespace + "/" + name
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.used[user]; ok && old != key {
		w.drop(user, old)
	}
	sw := w.watches[key]
	if sw == nil {
		sw = w.watch(namespace, name)
		w.watches[key] = sw
	}
	sw.users.Insert(user)
	w.used[user] = key
	if !sw.informer.HasSynced() {
		return nil, false
	}
	obj, exists, err := sw.informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return nil, true
	}
	return obj.(*corev1.Secret), true
}

// release records that the Environment user uses no Secret through a DeploymentTarget.
func (w *sourceSecrets) release(user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if key, ok := w.used[user]; ok {
		w.drop(user, key)
	}
}

func (w *sourceSecrets) drop(user, key string) {
	delete(w.used, user)
	sw := w.watches[key]
	sw.users.Delete(user)
	if sw.users.Len() == 0 {
		sw.stop()
		delete(w.watches, key)
	}
}

func (w *sourceSecrets) watch(namespace, name string) *sourceWatch {
	ctx, stop := context.WithCancel(w.ctx)
	selector := fields.AndSelectors(
		fields.OneTermEqualSelector("metadata.name", name),
		fields.OneTermEqualSelector("type", string(corev1.SecretTypeOpaque)),
	).String()
	secrets := w.kube.CoreV1().Secrets(namespace)
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return secrets.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return secrets.Watch(ctx, o)
		},
	}, &corev1.Secret{}, 0, cache.Indexers{})
	sw := &sourceWatch{informer: inf, stop: stop, users: sets.New[string]()}
	notify := func(interface{}) {
		w.mu.Lock()
		users := sw.users.UnsortedList()
		w.mu.Unlock()
		for _, u := range users {
			w.changed(u)
		}
	}
	// The informer is new: AddEventHandler fails only on a stopped one.
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj interface{}) { notify(obj) },
		DeleteFunc: notify,
	})
	go inf.Run(ctx.Done())
	return sw
}
