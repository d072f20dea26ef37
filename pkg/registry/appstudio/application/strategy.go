// Package application is the registry of Applications, stored for application-service.
package application

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.Application

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateApplication, validation.ValidateApplicationUpdate, validation.ValidateApplicationStatusUpdate)
}

// columns are those of application-api's CRD, and the display name.
var columns = []table.Column{
	table.String("Status", "The status of the last condition.", func(a object) string {
		return string(table.LastCondition(a.Status.Conditions).Status)
	}),
	table.String("Reason", "The reason of the last condition.", func(a object) string {
		return table.LastCondition(a.Status.Conditions).Reason
	}),
	table.Wide(table.String("Display Name", "The name users see.", func(a object) string { return a.Spec.DisplayName })),
}
