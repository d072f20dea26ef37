package agent

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// controller is the agent's name for a framework.Controller (a work queue of keys drained by
// workers that reconcile them); the agent's controllers predate the framework package and call
// it by these names.
type controller struct {
	*framework.Controller
}

func newController(name string, reconcile func(ctx context.Context, key string) error) *controller {
	return &controller{Controller: framework.NewController(name, reconcile)}
}

// add queues key for a change that happened now.
func (c *controller) add(key string) { c.Add(key) }

// enqueue adds the key of an informer object (or of its tombstone).
func (c *controller) enqueue(obj interface{}) { c.Enqueue(obj) }

// handler enqueues the object of every add, update and delete event.
func (c *controller) handler() cache.ResourceEventHandler { return c.Handler() }

// unwrapTombstone is the last known object of a delete event whose final state the informer
// missed, or obj itself.
func unwrapTombstone(obj interface{}) interface{} { return framework.UnwrapTombstone(obj) }
