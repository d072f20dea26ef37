package gitopsdeployment

import (
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// An Application whose GitOpsDeployment is gone (or being deleted, or replaced by a new object
// of the same name) is retired: what it deployed is deleted first, then the Application.
//
// Argo CD 2.14 deletes an Application's resources (its resources-finalizer) with the cluster's
// own credentials, not by impersonating the deployer as a sync does; the application-controller
// may only read, so that deletion would be refused. The agent therefore has Argo CD delete them
// in a sync: it points the Application at nothing (the repository's root with every file
// excluded) and lets the automated sync prune everything the Application tracks, as the
// deployer. Once Argo CD reports no resource left, the Application goes, with no finalizer.
//
// Argo CD needs the repository (at the last synced revision) to compute "nothing"; while it is
// unreachable the Application, and a GitOpsDeployment with the resources finalizer, wait, and
// its status shows Argo CD's ComparisonError.

// retireStep is what retiring an Application needs next.
type retireStep int

const (
	// retireEmpty applies the spec that deploys nothing.
	retireEmpty retireStep = iota
	// retireWait waits for Argo CD to prune and report.
	retireWait
	// retireDelete deletes the Application: nothing it deployed is left, or its destination is
	// gone and with it what was deployed there.
	retireDelete
	// retireUnblock takes Argo CD's finalizer off an Application someone else deleted: Argo CD
	// would carry it out with its own identity, which may not delete, and wait for ever.
	retireUnblock
)

// planRetirement decides the next step for app. destinationGone says that its namespace is
// being deleted (which deletes what was deployed in it, and the deployer with it) or that its
// cluster is no longer known to Argo CD.
func planRetirement(app *argov1alpha1.Application, destinationGone bool) retireStep {
	if app.DeletionTimestamp != nil {
		if hasArgoFinalizer(app) {
			return retireUnblock
		}
		return retireWait // already going
	}
	if !isEmptied(app.Spec.Source) || hasArgoFinalizer(app) {
		// Also with the destination gone: the apply takes off the finalizer of an Application
		// made by an earlier agent, which Argo CD could not carry out.
		return retireEmpty
	}
	if destinationGone {
		return retireDelete
	}
	// Synced, not just no resources: Argo CD reports none, and Unknown, when it could not read
	// the cluster.
	if isEmptied(&app.Status.Sync.ComparedTo.Source) && len(app.Status.Resources) == 0 &&
		app.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced &&
		(app.Status.OperationState == nil || app.Status.OperationState.Phase != argocd.PhaseRunning) && app.Operation == nil {
		return retireDelete
	}
	return retireWait
}

// argoForegroundFinalizer is the other form of Argo CD's resources finalizer.
const argoForegroundFinalizer = "resources-finalizer.argocd.argoproj.io"

// emptiedPath and emptiedExclude make Argo CD generate no manifest from any repository: its
// root always exists, and every file is excluded.
const (
	emptiedPath    = "."
	emptiedExclude = "*"
)

func isEmptied(src *argov1alpha1.ApplicationSource) bool {
	return src != nil && src.Path == emptiedPath && src.Directory != nil && src.Directory.Exclude == emptiedExclude
}

func hasArgoFinalizer(app *argov1alpha1.Application) bool {
	for _, f := range app.Finalizers {
		if f == argoBackgroundFinalizer || f == argoForegroundFinalizer {
			return true
		}
	}
	return false
}

// emptiedApplication is the apply body that makes app deploy nothing, at the revision it last
// synced (so that a branch deleted since does not stand in the way), and prune what it
// deployed.
func emptiedApplication(app *argov1alpha1.Application) *applicationApply {
	revision := app.Status.Sync.Revision
	if revision == "" && app.Spec.Source != nil {
		revision = app.Spec.Source.TargetRevision
	}
	repoURL := ""
	if app.Spec.Source != nil {
		repoURL = app.Spec.Source.RepoURL
	}
	var annotations map[string]string
	if name, ok := app.Annotations[argocd.AnnotationDeploymentName]; ok {
		annotations = map[string]string{argocd.AnnotationDeploymentName: name}
	}
	factor := int64(2)
	return &applicationApply{
		TypeMeta: metav1.TypeMeta{APIVersion: argov1alpha1.SchemeGroupVersion.String(), Kind: "Application"},
		Metadata: argocd.ApplyMeta{
			Name:        app.Name,
			Namespace:   app.Namespace,
			Labels:      app.Labels,
			Annotations: annotations,
		},
		Spec: argov1alpha1.ApplicationSpec{
			Source: &argov1alpha1.ApplicationSource{
				RepoURL:        repoURL,
				Path:           emptiedPath,
				TargetRevision: revision,
				Directory:      &argov1alpha1.ApplicationSourceDirectory{Exclude: emptiedExclude},
			},
			Destination: app.Spec.Destination,
			Project:     app.Spec.Project,
			SyncPolicy: &argov1alpha1.SyncPolicy{
				Automated:   &argov1alpha1.SyncPolicyAutomated{Prune: true, AllowEmpty: true},
				SyncOptions: argov1alpha1.SyncOptions{prunePropagationBackground},
				Retry: &argov1alpha1.RetryStrategy{
					Limit:   -1,
					Backoff: &argov1alpha1.Backoff{Duration: "5s", Factor: &factor, MaxDuration: "3m"},
				},
			},
		},
	}
}

// retireApplication takes app one step further towards its deletion; the Application's own
// events bring its GitOpsDeployment's key back for the next.
func (c *Controller) retireApplication(ctx context.Context, app *argov1alpha1.Application) error {
	// Only an emptied Application's next step depends on its destination: asking (a namespace
	// GET) at every event of one still to be emptied would be wasted.
	gone := false
	if app.DeletionTimestamp == nil && isEmptied(app.Spec.Source) && !hasArgoFinalizer(app) {
		var err error
		if gone, err = c.destinationGone(ctx, app.Spec.Destination); err != nil {
			return err
		}
	}
	source := deploymentSource(app.Labels[argocd.LabelDeploymentNamespace], app.Annotations[argocd.AnnotationDeploymentName], types.UID(app.Labels[argocd.LabelDeploymentUID]))
	switch planRetirement(app, gone) {
	case retireEmpty:
		// A sync still running on the old spec would keep its resources coming.
		if st := app.Status.OperationState; st != nil && st.Phase == argocd.PhaseRunning {
			if err := argocd.PatchApplication(ctx, c.argo, c.ops, app, argocd.TerminatePatch(), argocd.ApplicationChange(app, source, "terminated the sync of")); err != nil {
				return err
			}
		}
		body, err := json.Marshal(emptiedApplication(app))
		if err != nil {
			return err
		}
		written, err := c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Patch(ctx, app.Name, types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.recordChange(managedv1alpha1.OperationResourceTypeApplication, "Application", app.Name, source, "emptied", err)
		if err != nil {
			return fmt.Errorf("emptying Application %s: %w", app.Name, err)
		}
		klog.V(2).InfoS("emptied Application", "application", app.Name)
		// The apply takes off the finalizer this agent's earlier applies put there; one that
		// someone else added goes by a patch.
		return c.dropArgoFinalizers(ctx, written)
	case retireDelete:
		return c.deleteApplication(ctx, app)
	case retireUnblock:
		klog.InfoS("an Application deleted by someone else carries Argo CD's finalizer, which it cannot carry out; taking it off",
			"application", app.Name)
		return c.dropArgoFinalizers(ctx, app)
	}
	return nil
}

// dropArgoFinalizers takes Argo CD's resources finalizers off app, if it has any.
func (c *Controller) dropArgoFinalizers(ctx context.Context, app *argov1alpha1.Application) error {
	if !hasArgoFinalizer(app) {
		return nil
	}
	var keep []string
	for _, f := range app.Finalizers {
		if f != argoBackgroundFinalizer && f != argoForegroundFinalizer {
			keep = append(keep, f)
		}
	}
	patch, err := finalizersPatch(app.ResourceVersion, keep)
	if err != nil {
		return err
	}
	_, err = c.argo.ArgoprojV1alpha1().Applications(c.argoNamespace).Patch(ctx, app.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: its event brings it back
	}
	if err != nil {
		return fmt.Errorf("removing Argo CD's finalizer from Application %s: %w", app.Name, err)
	}
	return nil
}

// destinationGone tells whether dest can no longer be deployed to: its namespace in the local
// cluster is being deleted, or its cluster Secret is gone.
func (c *Controller) destinationGone(ctx context.Context, dest argov1alpha1.ApplicationDestination) (bool, error) {
	if dest.Server == c.localServer {
		ns, err := c.kube.CoreV1().Namespaces().Get(ctx, dest.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return ns.DeletionTimestamp != nil, nil
	}
	if dest.Name != "" {
		_, err := c.argoSecrets.Secrets(c.argoNamespace).Get(dest.Name)
		return apierrors.IsNotFound(err), nil
	}
	return false, nil
}
