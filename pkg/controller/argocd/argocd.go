// Package argocd is the Argo CD naming contract the controllers share: the labels and
// annotations that tie an Argo CD object back to the tenant's objects, the names of the
// Applications and AppProjects the agent makes, the index of Applications by their
// GitOpsDeployment, the guarded (and recorded) patch of an Application's operation, the
// repository and cluster Secrets' keys, and a tenant's AppProject (project.go).
package argocd

import (
	"context"
	"encoding/json"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
)

// Labels and annotations that tie an Argo CD object back to the tenant's objects. Labels carry
// what the agent selects by (namespaces and UIDs fit in 63 characters); the GitOpsDeployment's
// name can be up to 253 characters, so it travels in an annotation.
const (
	LabelDeploymentNamespace = "managed-gitops.redhat.com/gitopsdeployment-namespace"
	LabelDeploymentUID       = "managed-gitops.redhat.com/gitopsdeployment-uid"
	AnnotationDeploymentName = "managed-gitops.redhat.com/gitopsdeployment-name"
	LabelTenantNamespace     = "managed-gitops.redhat.com/tenant-namespace"
)

// Argo CD constants the mapping depends on.
const (
	// InClusterServer is how Argo CD names the cluster it runs in.
	InClusterServer = "https://kubernetes.default.svc"
	// PrunePropagationBackground is the sync option of every sync the agent asks for.
	PrunePropagationBackground = "PrunePropagationPolicy=background"
	// FieldManager is the field manager of the agent's writes.
	FieldManager = "gitops-service-agent"
)

// ApplicationName is the name of the Argo CD Application of a GitOpsDeployment. It derives from
// the UID, so a GitOpsDeployment deleted and created again under the same name gets a new one.
func ApplicationName(uid types.UID) string { return "gitopsdepl-" + string(uid) }

// ProjectName is the AppProject holding the Applications of one tenant namespace.
func ProjectName(namespace string) string { return "gitops-tenant-" + namespace }

// ByDeployment indexes Applications by the "namespace/name" of their GitOpsDeployment, so the
// controllers find the Applications of a GitOpsDeployment that no longer exists, or of an
// earlier object of the same name.
const ByDeployment = "gitopsdeployment"

// AddDeploymentIndex adds the ByDeployment index to an Application informer, unless it has it:
// the controllers that share the informer each ask for it.
func AddDeploymentIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ByDeployment]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{ByDeployment: DeploymentKeyOfApplication})
}

// DeploymentKeyOfApplication is the "namespace/name" of the GitOpsDeployment an Application
// was made for; Applications the agent did not make have none.
func DeploymentKeyOfApplication(obj interface{}) ([]string, error) {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return nil, nil
	}
	ns, name := app.Labels[LabelDeploymentNamespace], app.Annotations[AnnotationDeploymentName]
	if ns == "" || name == "" {
		return nil, nil
	}
	return []string{ns + "/" + name}, nil
}

// ApplicationOwner is the key of the GitOpsDeployment an Application (or its tombstone) was
// made for.
func ApplicationOwner(obj interface{}) (string, bool) {
	obj = framework.UnwrapTombstone(obj)
	if keys, _ := DeploymentKeyOfApplication(obj); len(keys) == 1 {
		return keys[0], true
	}
	return "", false
}

// The operation phases the controllers read (gitops-engine's OperationPhase values).
const (
	PhaseRunning     = "Running"
	PhaseTerminating = "Terminating"
	PhaseSucceeded   = "Succeeded"
)

// TerminatePatch does what argocd-server's TerminateOperation does: the phase becomes
// Terminating, and Argo CD stops the sync and ends it as Failed.
func TerminatePatch() map[string]interface{} {
	return map[string]interface{}{"status": map[string]interface{}{"operationState": map[string]interface{}{"phase": PhaseTerminating}}}
}

// ApplicationChange is a write to app's operation, as its Operation records it.
func ApplicationChange(app *argov1alpha1.Application, source managedv1alpha1.OperationSource, action string) operations.Change {
	return operations.Change{
		ResourceType: managedv1alpha1.OperationResourceTypeSyncOperation,
		Target:       managedv1alpha1.OperationTarget{Kind: "Application", Namespace: app.Namespace, Name: app.Name},
		Source:       source, Action: action,
	}
}

// PatchApplication merge-patches an Application, guarded by the resourceVersion the decision
// was made on: a concurrent change (Argo CD's or another writer's) fails the patch with a
// conflict, and the caller decides again from fresher state. An Application that is gone is
// no error (its delete event brings the caller back). The write is recorded in ops as rec (a
// conflict changed nothing, so it is not).
func PatchApplication(ctx context.Context, client argoclient.Interface, ops *operations.Recorder, app *argov1alpha1.Application,
	patch map[string]interface{}, rec operations.Change,
) error {
	meta, _ := patch["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		patch["metadata"] = meta
	}
	meta["resourceVersion"] = app.ResourceVersion
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = client.ArgoprojV1alpha1().Applications(app.Namespace).Patch(ctx, app.Name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if !apierrors.IsConflict(err) {
		rec.Err = err
		ops.Record(rec)
	}
	if err != nil {
		return fmt.Errorf("%s Application %s: %w", rec.Action, app.Name, err)
	}
	return nil
}
