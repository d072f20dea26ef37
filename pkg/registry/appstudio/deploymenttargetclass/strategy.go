// Package deploymenttargetclass is the registry of DeploymentTargetClasses.
package deploymenttargetclass

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.DeploymentTargetClass

func kind(typer runtime.ObjectTyper) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateDeploymentTargetClass, validation.ValidateDeploymentTargetClassUpdate, nil)
	k.ClusterScoped = true
	return k
}

func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.provisioner": string(obj.(object).Spec.Provisioner)}
}

var columns = []table.Column{
	table.String("Provisioner", "What provisions DeploymentTargets of the class.", func(c object) string { return string(c.Spec.Provisioner) }),
	table.String("Reclaim Policy", "What happens to a DeploymentTarget when its claim is deleted.", func(c object) string {
		return string(c.Spec.ReclaimPolicy)
	}),
}
