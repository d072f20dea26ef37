package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs, metrics and --controllers.
const Name = "placement"

// HeartbeatTimeout is how long an instance stays Ready for placing after its agent's last
// heartbeat: past it, the instance takes no new tenant (but keeps those it has).
const HeartbeatTimeout = 30 * time.Second

// Event reasons, on the TenantPlacement.
const (
	EventPlaced = "Placed" // a tenant placed for the first time
	EventMoved  = "Moved"  // a tenant moved to another instance
)

const (
	// fleetKey is the controller's only key: the plan is global, one sync decides for all
	// tenants at once.
	fleetKey = "fleet"

	// noRoom starts the message of a stuck tenant, which is how the controller tells its own
	// messages from the agents'.
	noRoom = "no Argo CD instance has room"
)

type placementT = managedv1alpha1.TenantPlacement

// Controller places tenant namespaces on the instances of the Argo CD fleet: it applies the
// plan of Decide to the TenantPlacements. The agents of the instances then hand the tenants
// over through status.instance, which the controller never writes.
type Controller struct {
	*framework.Controller

	gitops   versioned.Interface
	recorder record.EventRecorder
	share    Share

	instances    listers.ArgoCDInstanceLister
	placements   listers.TenantPlacementLister
	deployments  listers.GitOpsDeploymentLister
	environments listers.GitOpsDeploymentManagedEnvironmentLister
	credentials  listers.GitOpsDeploymentRepositoryCredentialLister
	// namespaces give each tenant its owner (OwnerOf), and tell when a former tenant's
	// namespace is gone.
	namespaces corelisters.NamespaceLister

	now func() time.Time
	// writesInFlight bounds the concurrent writes of one sync (maxWritesInFlight).
	writesInFlight int
}

// New wires the controller's handlers into the informers. share is the most of each
// instance's capacity one owner's tenants may take (Share).
func New(instances managedinformers.ArgoCDInstanceInformer, placements managedinformers.TenantPlacementInformer,
	deployments managedinformers.GitOpsDeploymentInformer, environments managedinformers.GitOpsDeploymentManagedEnvironmentInformer,
	credentials managedinformers.GitOpsDeploymentRepositoryCredentialInformer, namespaces coreinformers.NamespaceInformer,
	gitops versioned.Interface, recorder record.EventRecorder, share Share) (*Controller, error) {
	c := &Controller{
		gitops:       gitops,
		recorder:     recorder,
		share:        share,
		instances:    instances.Lister(),
		placements:   placements.Lister(),
		deployments:  deployments.Lister(),
		environments: environments.Lister(),
		credentials:  credentials.Lister(),
		namespaces:   namespaces.Lister(),
		now:          time.Now,

		writesInFlight: maxWritesInFlight,
	}
	c.Controller = framework.NewController(Name, c.sync)
	replan := func(interface{}) { c.Add(fleetKey) }
	// An instance's spec (capacity, draining) and its Ready condition change the plan; its
	// agent's heartbeat every 10 s does not: the sync that saw it Ready looks again when the
	// heartbeat it saw goes stale (staleAt), rather than re-plan every tenant at each report.
	if err := c.Watch(instances.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: replan,
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*managedv1alpha1.ArgoCDInstance), obj.(*managedv1alpha1.ArgoCDInstance)
			if o.Generation != n.Generation || readyCondition(o) != readyCondition(n) || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) {
				replan(obj)
			}
		},
		DeleteFunc: replan,
	}); err != nil {
		return nil, err
	}
	// Any change of a placement may: an admin's pin or move, a hand-over, a deletion.
	if err := c.Watch(placements.Informer(), framework.OnChange(replan)); err != nil {
		return nil, err
	}
	// A namespace becomes a tenant with its first GitOps object and stops being one with its
	// last: updates (status writes above all) change neither.
	for _, inf := range []cache.SharedInformer{deployments.Informer(), environments.Informer(), credentials.Informer()} {
		if err := c.Watch(inf, cache.ResourceEventHandlerFuncs{AddFunc: replan, DeleteFunc: replan}); err != nil {
			return nil, err
		}
	}
	// A namespace's labels name its owner; a new one may be a tenant that waited for its
	// namespace to reach the cache; a gone one's placement is deleted.
	if err := c.Watch(namespaces.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: replan,
		UpdateFunc: func(old, obj interface{}) {
			if !maps.Equal(old.(*corev1.Namespace).Labels, obj.(*corev1.Namespace).Labels) {
				replan(obj)
			}
		},
		DeleteFunc: replan,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run places tenants until ctx is done. There is one key, so a second worker would only wait.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.Add(fleetKey) // a fleet with no object to queue it still gets its orphans collected
	c.Controller.Run(ctx, workers)
}

// sync observes the fleet and its tenants, plans and acts. The plan is decided once, for every
// tenant, before anything is written (Decide counts each move on its target as it plans it), so
// the writes that carry it out are independent of one another: each touches only its own
// TenantPlacement (or ArgoCDInstance). They go out concurrently (writes), at most
// writesInFlight at once, in the plan's order. Every write is tried, so that one conflict or
// failure does not hold up the other tenants; all their errors are returned, which requeues.
func (c *Controller) sync(ctx context.Context, _ string) error {
	now := c.now()
	instances, staleAt, lost, err := c.fleet(now)
	if err != nil {
		return err
	}
	if len(instances) == 0 {
		return nil // not a fleet: the only agent serves every namespace, unplaced
	}
	tenantNamespaces, err := c.tenantNamespaces()
	if err != nil {
		return err
	}
	all, err := c.placements.List(labels.Everything())
	if err != nil {
		return err
	}

	// First the writes the plan depends on: the placements of gone namespaces are deleted (a
	// deleted one is no tenant to plan for), and lost instances marked.
	w := c.newWrites()
	for _, in := range lost {
		w.Go(func() error { return c.markLost(ctx, in) })
	}
	collected := make([]bool, len(all)) // each task sets only its own
	for i, p := range all {
		if !tenantNamespaces[p.Name] {
			w.Go(func() (err error) {
				collected[i], err = c.collect(ctx, p)
				return err
			})
		}
	}
	errs := w.Wait()

	placements := map[string]*placementT{}
	var tenants []Tenant
	for i, p := range all {
		if collected[i] {
			continue
		}
		placements[p.Name] = p
		tenants = append(tenants, Tenant{Namespace: p.Name, Instance: p.Spec.Instance, Pinned: p.Spec.Pinned, Owner: c.owner(p.Name)})
	}
	for ns := range tenantNamespaces {
		if placements[ns] != nil {
			continue
		}
		// A new tenant whose namespace the cache has not seen yet would count as its own
		// owner, and once placed it stays: the namespace's arrival plans again.
		if _, err := c.namespaces.Get(ns); err != nil {
			continue
		}
		tenants = append(tenants, Tenant{Namespace: ns, Owner: c.owner(ns)})
	}

	plan := Decide(instances, tenants, c.share)
	// Then the plan. Each tenant is in at most one of Moves and Stuck, and a tenant's writes
	// that depend on one another (a create, then its message) are one task; placements is
	// only read from here on.
	w = c.newWrites()
	handled := map[string]bool{}
	for _, m := range plan.Moves {
		handled[m.Namespace] = true
		w.Go(func() error { return c.move(ctx, placements[m.Namespace], m) })
	}
	for _, s := range plan.Stuck {
		handled[s.Namespace] = true
		w.Go(func() error { return c.stuck(ctx, placements[s.Namespace], s) })
	}
	for _, name := range slices.Sorted(maps.Keys(placements)) {
		if p := placements[name]; !handled[name] && staleMessage(p) {
			w.Go(func() error { return c.setMessage(ctx, p, "") })
		}
	}
	errs = append(errs, w.Wait()...)

	// A heartbeat going stale is no event: look again then, so that the instance stops being
	// a target at that moment rather than at whatever event comes next.
	if !staleAt.IsZero() {
		c.Queue.AddAfter(fleetKey, staleAt.Sub(now))
	}
	return joinWriteErrors(errs)
}

// owner is the owner of namespace (OwnerOf) by the namespace cache.
func (c *Controller) owner(namespace string) string {
	return OwnerOf(namespace, func(name string) map[string]string {
		if ns, err := c.namespaces.Get(name); err == nil {
			return ns.Labels
		}
		return nil
	})
}

// fleet is the instances as Decide sees them, the earliest time a Ready one's heartbeat goes
// stale (zero when none is Ready), and the instances still said Ready whose agent has not
// reported for HeartbeatTimeout.
func (c *Controller) fleet(now time.Time) ([]Instance, time.Time, []*managedv1alpha1.ArgoCDInstance, error) {
	list, err := c.instances.List(labels.Everything())
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	var staleAt time.Time
	var lost []*managedv1alpha1.ArgoCDInstance
	instances := make([]Instance, 0, len(list))
	for _, in := range list {
		ready := readyForPlacing(in, now)
		switch {
		case ready:
			if at := in.Status.LastHeartbeatTime.Add(HeartbeatTimeout); staleAt.IsZero() || at.Before(staleAt) {
				staleAt = at
			}
		case readyCondition(in):
			lost = append(lost, in)
		}
		instances = append(instances, Instance{
			Name: in.Name, Capacity: int(in.Spec.Capacity), Draining: in.Spec.Draining, Ready: ready,
		})
	}
	return instances, staleAt, lost, nil
}

// reasonAgentLost is the Ready condition's reason for an instance whose agent stopped
// reporting; the agent's next report makes it Ready again.
const reasonAgentLost = "AgentLost"

// markLost says on in's status that no agent serves it, so that an admin's kubectl get
// does not show it Ready (the plan has stopped placing tenants on it already). The
// resourceVersion read makes a report arriving meanwhile win.
func (c *Controller) markLost(ctx context.Context, in *managedv1alpha1.ArgoCDInstance) error {
	upd := in.DeepCopy()
	since := "ever"
	if hb := in.Status.LastHeartbeatTime; hb != nil {
		since = hb.UTC().Format(time.RFC3339)
	}
	meta.SetStatusCondition(&upd.Status.Conditions, metav1.Condition{Type: managedv1alpha1.ArgoCDInstanceConditionReady,
		Status: metav1.ConditionFalse, Reason: reasonAgentLost,
		Message: fmt.Sprintf("no agent has reported on the instance since %s; it takes no new tenants", since)})
	_, err := c.gitops.ManagedGitopsV1alpha1().ArgoCDInstances().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking instance %s lost: %w", in.Name, err)
	}
	klog.InfoS("an instance's agent stopped reporting", "instance", in.Name, "lastHeartbeat", since)
	return nil
}

func readyCondition(in *managedv1alpha1.ArgoCDInstance) bool {
	for _, cond := range in.Status.Conditions {
		if cond.Type == managedv1alpha1.ArgoCDInstanceConditionReady {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

// tenantNamespaces is the namespaces that hold a GitOpsDeployment, a ManagedEnvironment or a
// RepositoryCredential.
func (c *Controller) tenantNamespaces() (map[string]bool, error) {
	set := map[string]bool{}
	deployments, err := c.deployments.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range deployments {
		set[o.Namespace] = true
	}
	environments, err := c.environments.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range environments {
		set[o.Namespace] = true
	}
	credentials, err := c.credentials.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, o := range credentials {
		set[o.Namespace] = true
	}
	return set, nil
}

// collect deletes the placement of a namespace that holds no GitOps object any more, but only
// once the namespace itself is gone (its deletion plans again): until then it may get objects
// again, and keeping the placement keeps it on its instance instead of moving it at its next
// object. It tells whether the placement is gone.
func (c *Controller) collect(ctx context.Context, p *placementT) (bool, error) {
	_, err := c.namespaces.Get(p.Name)
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("reading namespace %s: %w", p.Name, err)
	}
	err = c.gitops.ManagedGitopsV1alpha1().TenantPlacements().Delete(ctx, p.Name, framework.PreconditionUID(p.UID))
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting the TenantPlacement of gone namespace %s: %w", p.Name, err)
	}
	klog.InfoS("deleted the placement of a gone namespace", "tenant", p.Name)
	return true, nil
}

// move writes m's spec.instance on the placement p (nil: none yet). Updating the cached
// object, with its resourceVersion, makes an admin's concurrent edit conflict rather than be
// overwritten.
func (c *Controller) move(ctx context.Context, p *placementT, m Move) error {
	client := c.gitops.ManagedGitopsV1alpha1().TenantPlacements()
	var got *placementT
	var err error
	if p == nil {
		got, err = client.Create(ctx, &placementT{
			ObjectMeta: metav1.ObjectMeta{Name: m.Namespace},
			Spec:       managedv1alpha1.TenantPlacementSpec{Instance: m.To},
		}, metav1.CreateOptions{FieldManager: argocd.FieldManager})
	} else {
		upd := p.DeepCopy()
		upd.Spec.Instance = m.To
		got, err = client.Update(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	}
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		return nil // deleted, or made, meanwhile: its event queues a new plan
	}
	if err != nil {
		return fmt.Errorf("placing tenant %s on instance %s: %w", m.Namespace, m.To, err)
	}
	klog.InfoS("tenant placed", "tenant", m.Namespace, "from", m.From, "to", m.To, "reason", m.Reason)
	if m.From == "" {
		c.recorder.Eventf(got, corev1.EventTypeNormal, EventPlaced, "placed on Argo CD instance %s (%s)", m.To, m.Reason)
	} else {
		c.recorder.Eventf(got, corev1.EventTypeNormal, EventMoved, "moved from Argo CD instance %s to %s (%s)", m.From, m.To, m.Reason)
	}
	// A tenant that was stuck is no longer: its message would say so until the hand-over.
	if staleMessage(got) {
		return c.setMessage(ctx, got, "")
	}
	return nil
}

// stuck reports on the placement p (nil: none yet, created unplaced) that no instance has
// room for the tenant, or none under its owner's share.
func (c *Controller) stuck(ctx context.Context, p *placementT, s Stuck) error {
	if p == nil {
		var err error
		p, err = c.gitops.ManagedGitopsV1alpha1().TenantPlacements().Create(ctx,
			&placementT{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}, metav1.CreateOptions{FieldManager: argocd.FieldManager})
		if err != nil {
			return fmt.Errorf("creating the TenantPlacement of tenant %s: %w", s.Namespace, err)
		}
	}
	msg := stuckMessage(s, c.share)
	if p.Status.Message == msg {
		return nil
	}
	return c.setMessage(ctx, p, msg)
}

func stuckMessage(s Stuck, share Share) string {
	prefix := noRoom + ": "
	if s.Owner != "" {
		// Names the owner and the share, so that an admin sees who fills the fleet and which
		// setting holds it back.
		prefix = fmt.Sprintf("%s for owner %q: it holds its share (%s of each instance's capacity, --placement-max-owner-share) "+
			"of every instance with room; ", noRoom, s.Owner, strconv.FormatFloat(float64(share)*100, 'f', -1, 64)+"%")
	}
	switch s.Reason {
	case ReasonDraining:
		return prefix + "the tenant stays on draining instance " + s.Instance + " until one has"
	case ReasonOverCapacity:
		return prefix + "the tenant stays on instance " + s.Instance + ", which is over its capacity, until one has"
	case ReasonInstanceGone:
		return prefix + "instance " + s.Instance + " is gone and the tenant waits for another"
	default:
		return prefix + "the tenant waits to be placed"
	}
}

// staleMessage tells whether p's status.message is out of date for a tenant that is not stuck:
// the tenant is held where it is placed, so there is nothing to explain, or the message is
// the controller's own "no room". While a hand-over is under way the message is the agents'.
func staleMessage(p *placementT) bool {
	return p.Status.Message != "" && (p.Status.Instance == p.Spec.Instance || strings.HasPrefix(p.Status.Message, noRoom))
}

// setMessage writes status.message on p as read: status.instance stays what the agents wrote,
// and should they write it meanwhile, the resourceVersion makes this write conflict.
func (c *Controller) setMessage(ctx context.Context, p *placementT, msg string) error {
	upd := p.DeepCopy()
	upd.Status.Message = msg
	_, err := c.gitops.ManagedGitopsV1alpha1().TenantPlacements().UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the message of tenant %s: %w", p.Name, err)
	}
	return nil
}
