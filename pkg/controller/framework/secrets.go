package framework

import (
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Secrets is how a controller reads the Secrets it watches: a lister, and events. The tenants'
// Secrets come from one informer per namespace served (pkg/controller/tenantsecrets), since no
// service identity may read Secrets cluster-wide; a single informer is one too (SecretInformer).
type Secrets interface {
	EventSource
	Lister() corelisters.SecretLister
}

// SecretInformer is the Secrets of one informer.
func SecretInformer(inf coreinformers.SecretInformer) Secrets { return secretInformer{inf} }

type secretInformer struct{ coreinformers.SecretInformer }

func (s secretInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return s.Informer().AddEventHandler(h)
}
