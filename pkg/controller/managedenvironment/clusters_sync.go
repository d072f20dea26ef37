package managedenvironment

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// keyedMutex is a lock per name; an entry lives while someone holds or waits for it.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int
}

// lock locks name and returns its unlock.
func (k *keyedMutex) lock(name string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*refMutex{}
	}
	m := k.locks[name]
	if m == nil {
		m = &refMutex{}
		k.locks[name] = m
	}
	m.refs++
	k.mu.Unlock()
	m.Lock()
	return func() {
		m.Unlock()
		k.mu.Lock()
		if m.refs--; m.refs == 0 {
			delete(k.locks, name)
		}
		k.mu.Unlock()
	}
}

func environmentSource(u clusterUser) managedv1alpha1.OperationSource {
	return managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentManagedEnvironment", Namespace: u.Namespace, Name: u.Name, UID: string(u.UID)}
}

// syncClusterMembership lists env on the shared cluster Secret cs, and takes it off every
// other. An unchanged world costs no request.
func (e *Controller) syncClusterMembership(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment, cs clusterSecret) error {
	u := userOf(env)
	listing := e.listingClusters(u.key())
	cur, err := e.argoSecrets.Secrets(e.argoNamespace).Get(cs.Name)
	if err != nil {
		cur = nil
	}
	if clusterUpToDate(cur, cs, u) && len(listing) == 1 && listing[0].Name == cs.Name {
		return nil
	}
	// Join first: the deployments of env keep a cluster throughout a move.
	err = e.changeClusterSecret(ctx, cs.Name, environmentSource(u), func(live *corev1.Secret) (*corev1.Secret, secretAction, error) {
		return joinCluster(live, cs, e.argoNamespace, u)
	})
	if err != nil {
		return err
	}
	for _, s := range listing {
		if s.Name == cs.Name {
			continue
		}
		if err := e.leaveClusterSecret(ctx, s.Name, u); err != nil {
			return err
		}
	}
	e.awaitClusterCache(ctx, u, cs.Name)
	return nil
}

// releaseClusters takes the environment key "namespace/name" off every shared cluster Secret
// that lists it, deleting those it leaves empty.
func (e *Controller) releaseClusters(ctx context.Context, u clusterUser) error {
	for _, s := range e.listingClusters(u.key()) {
		if err := e.leaveClusterSecret(ctx, s.Name, u); err != nil {
			return err
		}
	}
	return nil
}

func (e *Controller) leaveClusterSecret(ctx context.Context, name string, u clusterUser) error {
	return e.changeClusterSecret(ctx, name, environmentSource(u), func(live *corev1.Secret) (*corev1.Secret, secretAction, error) {
		next, action := leaveCluster(live, u.key())
		return next, action, nil
	})
}

// changeClusterSecret carries out change on the cluster Secret name as the API server has it,
// under the lock of name (the agent's workers) and with its resourceVersion as precondition
// (anyone else), again if someone wrote in between.
func (e *Controller) changeClusterSecret(ctx context.Context, name string, source managedv1alpha1.OperationSource,
	change func(live *corev1.Secret) (*corev1.Secret, secretAction, error),
) error {
	unlock := e.clusterLocks.lock(name)
	defer unlock()
	secrets := e.argoClient().CoreV1().Secrets(e.argoNamespace)
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		live, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			live = nil
		} else if err != nil {
			return err
		}
		next, action, err := change(live)
		if err != nil || action == secretUnchanged {
			return err
		}
		switch action {
		case secretCreate:
			_, err = secrets.Create(ctx, next, metav1.CreateOptions{FieldManager: fieldManager})
		case secretUpdate:
			_, err = secrets.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
		case secretDelete:
			err = secrets.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
				UID: &live.UID, ResourceVersion: &live.ResourceVersion,
			}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return err // retried, not recorded
		}
		e.recordChange(managedv1alpha1.OperationResourceTypeManagedEnvironment, "Secret", name, source, action.String(), err)
		if err != nil {
			return fmt.Errorf("writing cluster Secret %s (%s): %w", name, action, err)
		}
		klog.V(2).InfoS("shared cluster Secret", "secret", name, "action", action.String(), "environment", source.Namespace+"/"+source.Name)
		return nil
	})
}

// awaitClusterCache waits, briefly, until the cache shows u on name alone, so that the status
// written next sends the environment's deployments to a cluster they can find. The Secret's
// own events bring them back if it takes longer.
func (e *Controller) awaitClusterCache(ctx context.Context, u clusterUser, name string) {
	if e.cacheWait <= 0 {
		return
	}
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, e.cacheWait, true, func(context.Context) (bool, error) {
		listing := e.listingClusters(u.key())
		return len(listing) == 1 && listing[0].Name == name && listsUser(listing[0], u), nil
	})
}

// onClusterSecretEvent queues what a change to a Secret of the Argo CD namespace concerns.
// Shared cluster Secrets: the environments whose entries came or went (or all of its
// environments when its content changed, or it was deleted: someone else did that, and they
// put it back), as ClusterSecretEnvironments tells; the GitOpsDeployment controller queues
// their deployments, whose cluster it may now be or no longer be, from the same function.
// Secrets of the per-environment scheme: their environment, or, when it is gone, their
// namespace's collection.
func (e *Controller) onClusterSecretEvent(old, obj interface{}, deleted bool) {
	obj = framework.UnwrapTombstone(obj)
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if uid := s.Labels[LabelEnvironmentUID]; uid != "" {
		envs, _ := e.envIndex.ByIndex(byUID, uid)
		if len(envs) == 0 || deleted {
			e.Add(namespaceKey(s.Labels[LabelEnvironmentNamespace]))
		}
		for _, env := range envs {
			e.Enqueue(env)
		}
		return
	}
	for _, key := range ClusterSecretEnvironments(old, obj, deleted) {
		e.Add(key)
	}
}

// ClusterSecretEnvironments are the "namespace/name" keys of the environments that an event of
// a Secret of the Argo CD namespace (old is the previous object of an update, else nil;
// deleted for a delete, whose obj may be a tombstone) concerns, when it is a shared cluster
// Secret: those whose entries came or went, or all of its environments when its content
// changed or it was deleted. None for any other Secret (the per-environment scheme's
// included).
func ClusterSecretEnvironments(old, obj interface{}, deleted bool) []string {
	s, ok := framework.UnwrapTombstone(obj).(*corev1.Secret)
	if !ok || s.Labels[LabelEnvironmentUID] != "" || s.Labels[LabelManagedCluster] == "" {
		return nil
	}
	users := parseClusterUsers(s)
	if prev, ok := old.(*corev1.Secret); ok && !deleted && sameClusterContent(prev, s) {
		users = changedUsers(parseClusterUsers(prev), users)
	}
	keys := make([]string, 0, len(users))
	for _, u := range users {
		keys = append(keys, u.key())
	}
	return keys
}

// sameClusterContent tells whether two versions of a shared cluster Secret differ at most in
// their list of environments.
func sameClusterContent(a, b *corev1.Secret) bool {
	if len(a.Data) != len(b.Data) || len(a.Labels) != len(b.Labels) {
		return false
	}
	for k, v := range a.Data {
		if string(b.Data[k]) != string(v) {
			return false
		}
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return false
		}
	}
	for _, k := range []string{argocd.AnnotationImpersonate, annotationClusterKey} {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}

// environmentApplications counts the Applications of env's namespace that deploy through
// env's clusters (shared or not).
func (e *Controller) environmentApplications(env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) int {
	shared, legacy := e.environmentClusters(env)
	if legacy != "" {
		shared = append(shared, legacy)
	}
	if len(shared) == 0 {
		return 0
	}
	apps, err := e.applications.Applications(e.argoNamespace).List(labels.SelectorFromSet(labels.Set{argocd.LabelDeploymentNamespace: env.Namespace}))
	if err != nil {
		return 0
	}
	n := 0
	for _, app := range apps {
		if slices.Contains(shared, app.Spec.Destination.Name) {
			n++
		}
	}
	return n
}
