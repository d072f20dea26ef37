package gitopsdeployment

import (
	"k8s.io/apimachinery/pkg/types"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
)

// The agent records every change it makes in Argo CD as an Operation (pkg/controller/operations).

// recordChange records a write the agent made (err nil) or failed to make in Argo CD.
func (c *Controller) recordChange(rt managedv1alpha1.OperationResourceType, kind, name string,
	source managedv1alpha1.OperationSource, action string, err error,
) {
	c.ops.Record(operations.Change{
		ResourceType: rt,
		Target:       managedv1alpha1.OperationTarget{Kind: kind, Namespace: c.argoNamespace, Name: name},
		Source:       source, Action: action, Err: err,
	})
}

func deploymentSource(namespace, name string, uid types.UID) managedv1alpha1.OperationSource {
	return managedv1alpha1.OperationSource{Kind: "GitOpsDeployment", Namespace: namespace, Name: name, UID: string(uid)}
}

// namespaceSource is the source of what the agent makes for a tenant namespace as a whole
// (its AppProject and deployer).
func namespaceSource(namespace string) managedv1alpha1.OperationSource {
	return managedv1alpha1.OperationSource{Kind: "Namespace", Name: namespace}
}
