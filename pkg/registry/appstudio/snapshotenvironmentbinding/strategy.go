// Package snapshotenvironmentbinding is the registry of SnapshotEnvironmentBindings.
package snapshotenvironmentbinding

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.SnapshotEnvironmentBinding

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateSnapshotEnvironmentBinding, validation.ValidateSnapshotEnvironmentBindingUpdate,
		validation.ValidateSnapshotEnvironmentBindingStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	b := obj.(object)
	return fields.Set{"spec.application": b.Spec.Application, "spec.environment": b.Spec.Environment, "spec.snapshot": b.Spec.Snapshot}
}

var columns = []table.Column{
	table.String("Application", "The Application deployed.", func(b object) string { return b.Spec.Application }),
	table.String("Environment", "The Environment deployed to.", func(b object) string { return b.Spec.Environment }),
	table.String("Snapshot", "The Snapshot deployed.", func(b object) string { return b.Spec.Snapshot }),
	table.String("Deployed", "How many components are deployed and synced.", func(b object) string {
		if c := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, appstudio.ComponentDeploymentConditionAllComponentsDeployed); c != nil {
			return c.Message
		}
		return ""
	}),
}
