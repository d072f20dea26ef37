package gitopsdeployment

import (
	"sync"
	"sync/atomic"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
)

// tenant is what the agent remembers of one tenant namespace between reconciles of its
// GitOpsDeployments. Its lock serialises the writes of the namespace's AppProject and deployer,
// which the workers of several GitOpsDeployments there would otherwise race on.
//
// A burst of new GitOpsDeployments in a namespace queues on that lock. Each would find the
// informer not yet showing the AppProject and deployer the first one wrote, and write them
// again: one round trip after another, so the last deployment of a burst of twenty waited
// for twenty writes. The tenant remembers what it wrote until the informer shows it.
// Entries stay for the agent's life: one small struct per namespace that ever deployed.
type tenant struct {
	mu sync.Mutex
	// written is the AppProject as the agent last wrote it, and over is the resourceVersion
	// the informer showed before that write ("" for none). While the informer still shows
	// over, written is the truth; once it shows anything else, the informer is.
	written *argov1alpha1.AppProject
	over    string
	// remembered says that project last returned written rather than the informer's copy.
	remembered bool
	// deployerApplied says that the deployer was applied and nothing has been seen to change
	// it since (the deployer informer's events clear it, without the lock).
	deployerApplied atomic.Bool
}

func (c *Controller) tenant(namespace string) *tenant {
	t, _ := c.tenants.LoadOrStore(namespace, &tenant{})
	return t.(*tenant)
}

// project is the AppProject as it now is: the informer's copy cur, unless that is still the
// one the agent's last write replaced. t is locked.
func (t *tenant) project(cur *argov1alpha1.AppProject) *argov1alpha1.AppProject {
	t.remembered = false
	if t.written == nil && t.over == "" {
		return cur
	}
	if resourceVersion(cur) == t.over {
		t.remembered = true
		return t.written
	}
	t.written, t.over = nil, ""
	return cur
}

// wrote records that the agent replaced cur, as project returned it, by written (nil: deleted
// it). t is locked.
func (t *tenant) wrote(cur, written *argov1alpha1.AppProject) {
	if !t.remembered {
		t.over = resourceVersion(cur)
	}
	// Otherwise the informer still shows what the agent's earlier write replaced.
	t.written = written
}

func resourceVersion(p *argov1alpha1.AppProject) string {
	if p == nil {
		return ""
	}
	return p.ResourceVersion
}

// deployerChanged makes the next reconcile of namespace look at its deployer again.
func (c *Controller) deployerChanged(namespace string) {
	c.tenant(namespace).deployerApplied.Store(false)
}
