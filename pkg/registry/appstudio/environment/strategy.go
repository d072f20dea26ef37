// Package environment is the registry of Environments.
package environment

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

type object = *appstudio.Environment

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateEnvironment, validation.ValidateEnvironmentUpdate, validation.ValidateEnvironmentStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	e := obj.(object)
	return fields.Set{"spec.deploymentStrategy": string(e.Spec.DeploymentStrategy), "spec.parentEnvironment": e.Spec.ParentEnvironment}
}

var columns = []table.Column{
	table.String("Display Name", "The name users see.", func(e object) string { return e.Spec.DisplayName }),
	table.String("Strategy", "How changes are promoted into the Environment.", func(e object) string { return string(e.Spec.DeploymentStrategy) }),
	table.String("Parent", "The Environment promoted from.", func(e object) string { return e.Spec.ParentEnvironment }),
	table.String("Target", "The DeploymentTargetClaim or cluster deployed to; empty for this namespace.", target),
	table.Wide(table.String("Reconciled", "Whether the Environment could be reconciled.", func(e object) string {
		if c := meta.FindStatusCondition(e.Status.Conditions, appstudio.EnvironmentConditionReconciled); c != nil {
			return string(c.Status)
		}
		return ""
	})),
}

func target(e object) string {
	if claim := e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName; claim != "" {
		return "claim/" + claim
	}
	if u := e.Spec.UnstableConfigurationFields; u != nil {
		return u.KubernetesClusterCredentials.APIURL
	}
	return ""
}
