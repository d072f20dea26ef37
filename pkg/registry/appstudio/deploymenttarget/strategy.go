// Package deploymenttarget is the registry of DeploymentTargets.
package deploymenttarget

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.DeploymentTarget

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateDeploymentTarget, validation.ValidateDeploymentTargetUpdate, validation.ValidateDeploymentTargetStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	t := obj.(object)
	return fields.Set{
		"spec.deploymentTargetClassName": string(t.Spec.DeploymentTargetClassName),
		"spec.claimRef":                  t.Spec.ClaimRef,
		"status.phase":                   string(t.Status.Phase),
	}
}

var columns = []table.Column{
	table.String("Class", "The DeploymentTargetClass.", func(t object) string { return string(t.Spec.DeploymentTargetClassName) }),
	table.String("Namespace", "The namespace the credentials give access to.", func(t object) string {
		return t.Spec.KubernetesClusterCredentials.DefaultNamespace
	}),
	table.String("Claim", "The DeploymentTargetClaim bound to.", func(t object) string { return t.Spec.ClaimRef }),
	table.String("Phase", "Pending, Available, Bound, Released or Failed.", func(t object) string { return string(t.Status.Phase) }),
	table.Wide(table.String("API URL", "The cluster's API server.", func(t object) string { return t.Spec.KubernetesClusterCredentials.APIURL })),
}
