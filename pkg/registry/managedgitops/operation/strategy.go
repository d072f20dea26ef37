// Package operation is the registry of Operations, the agent's record of its changes in Argo CD.
package operation

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.Operation

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateOperation,
		validation.ValidateOperationUpdate,
		validation.ValidateOperationStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	o := obj.(object)
	return fields.Set{"spec.resourceType": string(o.Spec.ResourceType), "status.state": string(o.Status.State)}
}

var columns = []table.Column{
	table.String("Type", "The kind of Argo CD object changed.", func(o object) string { return string(o.Spec.ResourceType) }),
	table.String("Target", "The Argo CD object changed.", func(o object) string { return o.Spec.Target.Name }),
	table.String("State", "Waiting, In_Progress, Completed or Failed.", func(o object) string { return string(o.Status.State) }),
	table.Integer("Attempts", "How often the agent tried the change.", func(o object) int64 { return int64(o.Status.Attempts) }),
	table.Wide(table.String("Message", "The outcome, or the last error.", func(o object) string { return o.Status.Message })),
}
