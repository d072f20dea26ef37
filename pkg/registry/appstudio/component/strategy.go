// Package component is the registry of Components, stored for application-service.
package component

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.Component

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateComponent, validation.ValidateComponentUpdate, validation.ValidateComponentStatusUpdate)
}

// selectableFields lets the binding controllers list an Application's Components.
func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.application": obj.(object).Spec.Application}
}

// columns are those of application-api's CRD, after the application, and the source.
var columns = []table.Column{
	table.String("Application", "The Application the Component belongs to.", func(c object) string { return c.Spec.Application }),
	table.String("Status", "The status of the last condition.", func(c object) string {
		return string(table.LastCondition(c.Status.Conditions).Status)
	}),
	table.String("Reason", "The reason of the last condition.", func(c object) string {
		return table.LastCondition(c.Status.Conditions).Reason
	}),
	table.String("Type", "The type of the last condition.", func(c object) string {
		return table.LastCondition(c.Status.Conditions).Type
	}),
	table.Wide(table.String("Source", "The Git repository or, without one, the image the Component is made from.", source)),
}

func source(c object) string {
	if g := c.Spec.Source.GitSource; g != nil {
		return g.URL
	}
	return c.Spec.ContainerImage
}
