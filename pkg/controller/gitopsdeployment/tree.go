package gitopsdeployment

import (
	"errors"
	"sync/atomic"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/klog/v2"

	"github.com/gitops-service/gitops-service/pkg/argocdcache"
)

// treeReader reads Applications' resource trees from Argo CD's Redis (argocdcache.Reader).
type treeReader interface {
	ResourceTree(appName string) (*argov1alpha1.ApplicationTree, error)
}

// ReadResourceTrees has the controller read each resource's health from the resource tree
// Argo CD keeps in its Redis, for the Applications whose status does not hold it (Argo CD
// 3.x's default). Without it, their resources' health is reported unknown. Call before Run.
func (c *Controller) ReadResourceTrees(r *argocdcache.Reader) { c.trees = r }

// treeState remembers whether the last read of a tree failed, so that the log tells when
// Redis becomes unreachable and when it is back, not once per reconcile.
type treeState struct{ failing atomic.Bool }

// readTree reads the resource tree of an Application that keeps its resources' health there;
// for any other it reads nothing. An unreachable Redis is logged (with its address, which the
// tenant's condition does not show) and reported as unknown health.
func (c *Controller) readTree(app *argov1alpha1.Application) treeRead {
	if app == nil || app.Status.ResourceHealthSource != argov1alpha1.ResourceHealthLocationAppTree || len(app.Status.Resources) == 0 {
		return treeRead{}
	}
	if c.trees == nil {
		return treeRead{unknown: treeNotConfigured}
	}
	tree, err := c.trees.ResourceTree(app.InstanceName(c.argoNamespace))
	switch {
	case errors.Is(err, argocdcache.ErrNoTree):
		c.treeRecovered()
		return treeRead{unknown: treeNotWritten}
	case err != nil:
		if !c.treeState.failing.Swap(true) {
			klog.ErrorS(err, "Argo CD's resource trees cannot be read: the resources' health of Applications that keep it there "+
				"(resourceHealthSource appTree) is reported unknown until they can", "application", app.Name)
		} else {
			klog.V(2).InfoS("reading a resource tree", "application", app.Name, "err", err)
		}
		return treeRead{unknown: treeUnreachable}
	}
	c.treeRecovered()
	return treeRead{tree: tree}
}

func (c *Controller) treeRecovered() {
	if c.treeState.failing.Swap(false) {
		klog.InfoS("Argo CD's resource trees can be read again")
	}
}
