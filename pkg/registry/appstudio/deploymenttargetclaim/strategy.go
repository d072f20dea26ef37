// Package deploymenttargetclaim is the registry of DeploymentTargetClaims.
package deploymenttargetclaim

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.DeploymentTargetClaim

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateDeploymentTargetClaim, validation.ValidateDeploymentTargetClaimUpdate,
		validation.ValidateDeploymentTargetClaimStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	c := obj.(object)
	return fields.Set{
		"spec.deploymentTargetClassName": string(c.Spec.DeploymentTargetClassName),
		"spec.targetName":                c.Spec.TargetName,
		"status.phase":                   string(c.Status.Phase),
	}
}

var columns = []table.Column{
	table.String("Class", "The DeploymentTargetClass.", func(c object) string { return string(c.Spec.DeploymentTargetClassName) }),
	table.String("Target", "The DeploymentTarget bound to.", func(c object) string { return c.Spec.TargetName }),
	table.String("Phase", "Pending, Bound or Lost.", func(c object) string { return string(c.Status.Phase) }),
}
