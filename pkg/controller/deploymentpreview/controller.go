// Package deploymentpreview is the DeploymentPreview controller: it renders what a
// GitOpsDeployment would deploy now (its source at the preview's revision, or at the one the
// deployment follows), with Argo CD's repo-server asked exactly as for a DeploymentRecord's
// manifests (deploymentrecord.RepoServer: the deployment's Application and AppProject, the
// project's source check, the repository's credentials), and writes the redacted, capped
// manifests (pkg/recordmanifest) into the preview's status for its diff subresource. Previews
// are short-lived: the controller deletes each one --preview-ttl after its creation. The
// decisions are decide's (plan.go), a pure function; the reconcile carries them out. It is one
// of the agent's Argo CD controllers, run under the Argo CD Lease, for the tenants its instance
// serves.
package deploymentpreview

import (
	"context"
	"fmt"
	"time"

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
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// Name is the controller's name in logs and metrics.
const Name = "deploymentpreviews"

// DefaultTTL is how long a preview lives unless --preview-ttl says otherwise: long enough to
// read and diff it, short enough that forgotten ones do not pile up.
const DefaultTTL = time.Hour

// Renderer resolves and renders a deployment's source as Argo CD would:
// deploymentrecord.RepoServer, the same code that renders the records' manifests, so that a
// preview and a record of the same commit have the same digest.
type Renderer interface {
	// ResolveRef is the commit ref (a branch, tag or commit; HEAD when empty) of d's
	// repository names now.
	ResolveRef(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, ref string) (string, error)
	// Render is what d's Application renders with src at commit.
	Render(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, src managedv1alpha1.ApplicationSource, commit string) ([]string, error)
}

// Controller renders and expires DeploymentPreviews.
type Controller struct {
	*framework.Controller

	gitops      versioned.Interface
	deployments listers.GitOpsDeploymentLister
	previews    listers.DeploymentPreviewLister
	ttl         time.Duration
	// renderer and redactor are nil when the agent has no repo-server (Render).
	renderer Renderer
	redactor *recordmanifest.Redactor
	// served are the tenant namespaces served (Serve): every one when nil.
	served *tenancy.Tenants
	now    func() time.Time
}

// New wires the controller into the informers; ttl is how long a preview lives. The deployment
// informer is shared with the other Argo CD controllers.
func New(deployments managedinformers.GitOpsDeploymentInformer, previews managedinformers.DeploymentPreviewInformer,
	gitops versioned.Interface, ttl time.Duration) (*Controller, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	c := &Controller{gitops: gitops, deployments: deployments.Lister(), previews: previews.Lister(), ttl: ttl, now: time.Now}
	c.Controller = framework.NewController(Name, c.sync)
	if err := c.Watch(previews.Informer(), c.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Render makes the controller render previews with r, Secrets' values redacted by redactor
// (the records' redactor, so that the same value gives the same marker on both sides of a
// diff). Without it every preview fails with NoRepoServer. Call it before Run.
func (c *Controller) Render(r Renderer, redactor *recordmanifest.Redactor) {
	c.renderer, c.redactor = r, redactor
}

// Serve limits the controller to the tenant namespaces t holds (pkg/controller/tenancy); the
// previews of a tenant it gains are looked at again. Call it before Run.
func (c *Controller) Serve(t *tenancy.Tenants) error {
	c.served = t
	return t.Watch(c.Controller, func(namespace string) {
		previews, _ := c.previews.DeploymentPreviews(namespace).List(labels.Everything())
		for _, p := range previews {
			c.Add(p.Namespace + "/" + p.Name)
		}
	})
}

// Run renders previews with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.Controller.Run(ctx, workers) }

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || !c.served.Holds(namespace) {
		return nil
	}
	p, err := c.previews.DeploymentPreviews(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	d, err := framework.OrNil(c.deployments.GitOpsDeployments(namespace).Get(p.Spec.GitOpsDeploymentName))
	if err != nil {
		return err
	}
	w := world{preview: p, deployment: d, canRender: c.renderer != nil, now: c.now(), ttl: c.ttl}
	pl := decide(w)
	switch {
	case pl.delete:
		return c.delete(ctx, p)
	case pl.status != nil:
		err = c.updateStatus(ctx, p, *pl.status)
	case pl.render:
		err = c.updateStatus(ctx, p, c.render(ctx, w, pl.ref))
	}
	if err != nil {
		return err
	}
	c.Queue.AddAfter(key, pl.requeueAfter)
	return nil
}

// render resolves ref and renders the deployment's source at that commit: the status to write,
// a failure included (a preview is asked once; a new one asks again).
func (c *Controller) render(ctx context.Context, w world, ref string) managedv1alpha1.DeploymentPreviewStatus {
	d := w.deployment
	commit, err := c.renderer.ResolveRef(ctx, d, ref)
	if err != nil {
		return renderedStatus(w, ref, "", recordmanifest.Result{}, err)
	}
	src := d.Spec.Source
	src.TargetRevision = ref
	rendered, err := c.renderer.Render(ctx, d, src, commit)
	if err != nil {
		return renderedStatus(w, ref, commit, recordmanifest.Result{}, err)
	}
	res, err := recordmanifest.Build(rendered, c.redactor, recordmanifest.MaxBytes)
	if err != nil {
		err = fmt.Errorf("the manifests of %s at %s: %w", d.Spec.Source.RepoURL, commit, err)
	}
	return renderedStatus(w, ref, commit, res, err)
}

func (c *Controller) updateStatus(ctx context.Context, p *managedv1alpha1.DeploymentPreview, st managedv1alpha1.DeploymentPreviewStatus) error {
	if apiequality.Semantic.DeepEqual(p.Status, st) {
		return nil
	}
	upd := p.DeepCopy()
	upd.Status = st
	_, err := c.gitops.ManagedGitopsV1alpha1().DeploymentPreviews(p.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: argocd.FieldManager})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since the cache saw it: its event brings the key back.
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of DeploymentPreview %s/%s: %w", p.Namespace, p.Name, err)
	}
	klog.V(2).InfoS("previewed a deployment", "preview", klog.KObj(p), "phase", st.Phase, "revision", st.Revision, "digest", st.ManifestsDigest)
	return nil
}

// delete removes an expired preview, the one seen (its UID): a preview made again under the
// same name is a new one.
func (c *Controller) delete(ctx context.Context, p *managedv1alpha1.DeploymentPreview) error {
	err := c.gitops.ManagedGitopsV1alpha1().DeploymentPreviews(p.Namespace).Delete(ctx, p.Name, framework.PreconditionUID(p.UID))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the expired DeploymentPreview %s/%s: %w", p.Namespace, p.Name, err)
	}
	klog.V(2).InfoS("deleted an expired preview", "preview", klog.KObj(p), "ttl", c.ttl)
	return nil
}
