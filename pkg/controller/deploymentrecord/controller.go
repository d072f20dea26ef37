// Package deploymentrecord is the DeploymentRecord controller: one record per sync attempt of a
// GitOpsDeployment, failed ones included, read from the deployment's status.operationState
// (the GitOpsDeployment controller copies Argo CD's there). A record says what was deployed
// (source, commit, the deployment's generation), what started it and who (from the operation,
// the SyncRun it names and the audit trail: trigger in plan.go), and, in its status, how the
// sync went, per resource. Its spec is written once; its status follows the operation until it
// ends. The decisions are planRecords' (plan.go), a pure function; the reconcile reads the
// caches, asks the audit trail what only it knows (lookup.go), and carries the plan out. It is
// one of the agent's Argo CD controllers, run under the Argo CD Lease.
package deploymentrecord

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	managedinformers "github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions/managedgitops/v1alpha1"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// Name is the controller's name in logs and metrics.
const Name = "deploymentrecords"

// fieldManager is the field manager of the controller's writes.
const fieldManager = argocd.FieldManager

// byRecordDeployment indexes records by the "namespace/name" of their GitOpsDeployment.
const byRecordDeployment = "deploymentrecord-gitopsdeployment"

// DefaultServiceUserPrefix starts the user names of the service's own identities
// (docs/operator-identities.md): its ServiceAccounts in gitops-service. A write of a
// deployment by one of them is the service's (a binding's promotion), not a person's.
const DefaultServiceUserPrefix = "system:serviceaccount:gitops-service:"

// Controller keeps the records of one GitOpsDeployment key.
type Controller struct {
	*framework.Controller

	gitops      versioned.Interface
	deployments listers.GitOpsDeploymentLister
	records     cache.Indexer
	// served are the tenant namespaces served (Serve): every one when nil.
	served *tenancy.Tenants
	// ServiceUser tells whether a user name is one of the service's identities; by default
	// those named DefaultServiceUserPrefix.... Set it before Run.
	ServiceUser func(username string) bool
	// manifests, when set (KeepManifests), renders each record's manifests (render.go).
	manifests *manifests
}

// New wires the controller's handlers and index into the informers. Its key is a
// GitOpsDeployment's; the deployment's operation changes and its records' events queue it. The
// deployment informer is shared with the other Argo CD controllers.
func New(deployments managedinformers.GitOpsDeploymentInformer, records managedinformers.DeploymentRecordInformer,
	gitops versioned.Interface) (*Controller, error) {
	recInformer, deplInformer := records.Informer(), deployments.Informer()
	if err := recInformer.AddIndexers(cache.Indexers{byRecordDeployment: deploymentKeyOfRecord}); err != nil {
		return nil, err
	}
	c := &Controller{
		gitops:      gitops,
		deployments: deployments.Lister(),
		records:     recInformer.GetIndexer(),
		ServiceUser: func(u string) bool { return strings.HasPrefix(u, DefaultServiceUserPrefix) },
	}
	c.Controller = framework.NewController(Name, c.sync)

	if err := c.Watch(deplInformer, cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(old, obj interface{}) {
			o, ok1 := old.(*managedv1alpha1.GitOpsDeployment)
			n, ok2 := obj.(*managedv1alpha1.GitOpsDeployment)
			if !ok1 || !ok2 || o.UID != n.UID || operationChanged(o.Status.OperationState, n.Status.OperationState) {
				c.Enqueue(obj)
			}
		},
		DeleteFunc: c.Enqueue,
	}); err != nil {
		return nil, err
	}
	enqueueRecord := func(obj interface{}) {
		obj = framework.UnwrapTombstone(obj)
		if keys, _ := deploymentKeyOfRecord(obj); len(keys) == 1 {
			c.Add(keys[0])
		}
	}
	if err := c.Watch(recInformer, framework.OnChange(enqueueRecord)); err != nil {
		return nil, err
	}
	return c, nil
}

// Run keeps records with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.Controller.Run(ctx, workers) }

// Serve limits the controller to the tenant namespaces t holds, as an agent of a fleet does
// (pkg/controller/tenancy); without it the controller serves every namespace. The deployments
// of a tenant it gains are looked at again; those of a tenant it loses are left to the
// instance that takes it (a record's name is the same whichever instance writes it). Call it
// before Run.
func (c *Controller) Serve(t *tenancy.Tenants) error {
	c.served = t
	return t.Watch(c.Controller, c.requeueTenant)
}

func (c *Controller) requeueTenant(namespace string) {
	depls, _ := c.deployments.GitOpsDeployments(namespace).List(labels.Everything())
	for _, d := range depls {
		c.Add(d.Namespace + "/" + d.Name)
	}
}

// deploymentKeyOfRecord is the "namespace/name" of a record's GitOpsDeployment.
func deploymentKeyOfRecord(obj interface{}) ([]string, error) {
	r, ok := obj.(*managedv1alpha1.DeploymentRecord)
	if !ok || r.Spec.GitOpsDeploymentName == "" {
		return nil, nil
	}
	return []string{r.Namespace + "/" + r.Spec.GitOpsDeploymentName}, nil
}

// operationChanged tells whether a deployment's operation changed in what its record shows: a
// new operation (startedAt), its phase or end, or the commit it resolved (which a record
// waits for). Argo CD rewrites the message while a sync waits on its waves; the record takes
// it at the next of these.
func operationChanged(a, b *managedv1alpha1.OperationState) bool {
	if a == nil || b == nil {
		return a != b
	}
	ra, _ := revisionOf(a)
	rb, _ := revisionOf(b)
	return !a.StartedAt.Equal(&b.StartedAt) || a.Phase != b.Phase || !a.FinishedAt.Equal(b.FinishedAt) || ra != rb
}

// recordsNewestFirst orders a deployment's records by the start of their sync, newest first;
// those of the same second by their ordinal (recordName), the later first.
func recordsNewestFirst(records []*managedv1alpha1.DeploymentRecord) {
	sort.SliceStable(records, func(i, j int) bool {
		a, b := records[i], records[j]
		if !a.Spec.StartedAt.Equal(&b.Spec.StartedAt) {
			return b.Spec.StartedAt.Before(&a.Spec.StartedAt)
		}
		if len(a.Name) != len(b.Name) {
			return len(a.Name) > len(b.Name)
		}
		return a.Name > b.Name
	})
}

// sync keeps the records of one GitOpsDeployment key.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || !c.served.Holds(namespace) {
		return nil
	}
	d, err := c.deployments.GitOpsDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Its records go with it (their ownerReference).
		return nil
	} else if err != nil {
		return err
	}
	objs, err := c.records.ByIndex(byRecordDeployment, key)
	if err != nil {
		return err
	}
	w := world{deployment: d, serviceUser: c.ServiceUser}
	for _, obj := range objs {
		// Those of an earlier deployment of the name are not this one's.
		if r := obj.(*managedv1alpha1.DeploymentRecord); r.Spec.GitOpsDeploymentUID == "" || r.Spec.GitOpsDeploymentUID == d.UID {
			w.records = append(w.records, r)
		}
	}
	recordsNewestFirst(w.records)

	p := planRecords(w)
	if p.lookup != nil {
		if w.facts, err = c.lookupFacts(ctx, d, p.lookup); err != nil {
			return err
		}
		p = planRecords(w)
	}
	for _, u := range p.updates {
		if err := c.updateStatus(ctx, u.record, u.status); err != nil {
			return err
		}
	}
	if p.create != nil {
		return c.create(ctx, p.create)
	}
	if len(p.updates) > 0 {
		// The records just written come back with their events; their manifests then.
		return nil
	}
	return c.renderManifests(ctx, d, w.records)
}

// create writes a new record, then its status: the server drops the status of a create.
func (c *Controller) create(ctx context.Context, rec *managedv1alpha1.DeploymentRecord) error {
	created, err := c.gitops.ManagedGitopsV1alpha1().DeploymentRecords(rec.Namespace).Create(ctx, rec, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		// Written by a pass (or an agent) whose write the cache has not seen yet; its event
		// brings the key back.
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating DeploymentRecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	klog.V(2).InfoS("recorded a sync", "record", klog.KObj(created), "deployment", rec.Spec.GitOpsDeploymentName,
		"trigger", rec.Spec.Trigger.Type, "user", rec.Spec.Trigger.User, "revision", rec.Spec.Revision)
	return c.updateStatus(ctx, created, rec.Status)
}

// updateStatus writes a record's status, unless it is already that.
func (c *Controller) updateStatus(ctx context.Context, rec *managedv1alpha1.DeploymentRecord, st managedv1alpha1.DeploymentRecordStatus) error {
	st = withManifests(st, rec.Status)
	if apiequality.Semantic.DeepEqual(rec.Status, st) {
		return nil
	}
	upd := rec.DeepCopy()
	upd.Status = st
	_, err := c.gitops.ManagedGitopsV1alpha1().DeploymentRecords(rec.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of DeploymentRecord %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	return nil
}
