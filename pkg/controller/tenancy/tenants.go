// Package tenancy is the agent's side of the fleet: which tenant namespaces the agent's Argo
// CD instance serves (Tenants), the hand-over of a tenant between instances (handover.go),
// and the instance's report of its health and load (report.go). Where each tenant is placed is
// decided elsewhere, once for the fleet (pkg/controller/placement).
package tenancy

import (
	"sync"

	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// HeldFinalizer keeps a TenantPlacement while an instance holds its tenant: deleting the
// placement then releases the tenant, as a move does, before another instance may take it.
const HeldFinalizer = "managed-gitops.redhat.com/tenant-held"

// Tenants tells the Argo CD controllers of an agent which tenant namespaces are theirs. A nil
// *Tenants serves every namespace: an agent that is not part of a fleet.
type Tenants struct {
	instance   string
	placements listers.TenantPlacementLister
	informer   cache.SharedIndexInformer
	// locks hold a *sync.RWMutex per tenant: a controller's writes for a tenant it holds
	// (Serving) and the hand-over's release of it (exclusive) never interleave.
	locks sync.Map
}

// NewTenants serves the tenants that instance holds.
func NewTenants(instance string, placements managedinformers.TenantPlacementInformer) *Tenants {
	return &Tenants{instance: instance, placements: placements.Lister(), informer: placements.Informer()}
}

// Holds tells whether the controllers act on namespace's objects. A tenant moving away is no
// longer theirs even before it is released: its Applications are to be removed, not kept.
func (t *Tenants) Holds(namespace string) bool {
	if t == nil {
		return true
	}
	p, err := t.placements.Get(namespace)
	return err == nil && Held(p, t.instance)
}

// Keeps tells whether the instance still holds namespace, moving away or not: the credentials
// its Applications use (cluster and repository Secrets) stay until it has released the
// tenant, for an Application being retired on the way out needs them to prune.
func (t *Tenants) Keeps(namespace string) bool {
	if t == nil {
		return true
	}
	p, err := t.placements.Get(namespace)
	return err == nil && p.Status.Instance == t.instance
}

// Serving checks Holds under the tenant's lock and, when it holds, keeps the lock until done
// is called: the hand-over cannot release the tenant, having found no Application of it on
// the server, while a reconcile that saw it held is still writing one. done is to be called in
// any case.
func (t *Tenants) Serving(namespace string) (held bool, done func()) {
	if t == nil {
		return true, func() {}
	}
	mu := t.lock(namespace)
	mu.RLock()
	if !t.Holds(namespace) {
		mu.RUnlock()
		return false, func() {}
	}
	return true, mu.RUnlock
}

func (t *Tenants) lock(namespace string) *sync.RWMutex {
	mu, _ := t.locks.LoadOrStore(namespace, &sync.RWMutex{})
	return mu.(*sync.RWMutex)
}

// Held tells whether instance holds the tenant of p and is to keep it: placed there (or
// placed nowhere, until the placement controller chooses), and not deleted.
func Held(p *managedv1alpha1.TenantPlacement, instance string) bool {
	return p != nil && p.DeletionTimestamp == nil && p.Status.Instance == instance &&
		(p.Spec.Instance == instance || p.Spec.Instance == "")
}

// Watch has ctl learn of every namespace whose Holds or Keeps changes, through requeue, which
// queues the namespace's keys: on a tenant gained its objects are made, on one lost removed.
// Nothing changes for a nil Tenants.
func (t *Tenants) Watch(ctl *framework.Controller, requeue func(namespace string)) error {
	if t == nil {
		return nil
	}
	type state struct{ held, kept bool }
	of := func(obj interface{}) state {
		p, ok := framework.UnwrapTombstone(obj).(*managedv1alpha1.TenantPlacement)
		if !ok {
			return state{}
		}
		return state{held: Held(p, t.instance), kept: p.Status.Instance == t.instance}
	}
	name := func(obj interface{}) string {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		return key // cluster-scoped: the key is the name, the tenant's namespace
	}
	return ctl.Watch(t.informer, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if of(obj) != (state{}) {
				requeue(name(obj))
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			if of(old) != of(obj) {
				requeue(name(obj))
			}
		},
		DeleteFunc: func(obj interface{}) {
			if of(obj) != (state{}) {
				requeue(name(obj))
			}
		},
	})
}
