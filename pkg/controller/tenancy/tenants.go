// Package tenancy is the agent's side of the fleet: which tenant namespaces the agent's Argo
// CD instance serves (Tenants), the hand-over of a tenant between instances (handover.go),
// and the instance's report of its health and load (report.go). Where each tenant is placed is
// decided elsewhere, once for the fleet (pkg/controller/placement).
package tenancy

import (
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Tenants tells the Argo CD controllers of an agent which tenant namespaces are theirs. A nil
// *Tenants serves every namespace: an agent that is not part of a fleet.
type Tenants struct {
	instance   string
	placements listers.TenantPlacementLister
	informer   cache.SharedIndexInformer
}

// NewTenants serves the tenants that instance holds.
func NewTenants(instance string, placements managedinformers.TenantPlacementInformer) *Tenants {
	return &Tenants{instance: instance, placements: placements.Lister(), informer: placements.Informer()}
}

// Instance is the ArgoCDInstance served; empty for a nil Tenants.
func (t *Tenants) Instance() string {
	if t == nil {
		return ""
	}
	return t.instance
}

// Holds tells whether the controllers act on namespace's objects. A tenant moving away is no
// longer theirs even before it is released: its Argo CD objects are to be removed, not kept.
func (t *Tenants) Holds(namespace string) bool {
	if t == nil {
		return true
	}
	p, err := t.placements.Get(namespace)
	return err == nil && Held(p, t.instance)
}

// Held tells whether instance holds the tenant of p and is to keep it.
func Held(p *managedv1alpha1.TenantPlacement, instance string) bool {
	return p != nil && p.Status.Instance == instance && p.Spec.Instance == instance
}

// Watch has ctl learn of every namespace whose Holds changes, through requeue, which queues
// the namespace's keys: on a tenant gained its objects are made, on one lost removed. Nothing
// changes for a nil Tenants.
func (t *Tenants) Watch(ctl *framework.Controller, requeue func(namespace string)) error {
	if t == nil {
		return nil
	}
	held := func(obj interface{}) bool {
		p, ok := framework.UnwrapTombstone(obj).(*managedv1alpha1.TenantPlacement)
		return ok && Held(p, t.instance)
	}
	name := func(obj interface{}) string {
		key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		return key // cluster-scoped: the key is the name, the tenant's namespace
	}
	return ctl.Watch(t.informer, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if held(obj) {
				requeue(name(obj))
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			if held(old) != held(obj) {
				requeue(name(obj))
			}
		},
		DeleteFunc: func(obj interface{}) {
			if held(obj) {
				requeue(name(obj))
			}
		},
	})
}
