// Package componentdetectionquery is the registry of ComponentDetectionQueries, stored for
// application-service.
package componentdetectionquery

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.ComponentDetectionQuery

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateComponentDetectionQuery, validation.ValidateComponentDetectionQueryUpdate,
		validation.ValidateComponentDetectionQueryStatusUpdate)
}

// columns are those of application-api's CRD, and the repository.
var columns = []table.Column{
	table.String("Status", "The status of the last condition.", func(q object) string {
		return string(table.LastCondition(q.Status.Conditions).Status)
	}),
	table.String("Reason", "The reason of the last condition.", func(q object) string {
		return table.LastCondition(q.Status.Conditions).Reason
	}),
	table.String("Type", "The type of the last condition.", func(q object) string {
		return table.LastCondition(q.Status.Conditions).Type
	}),
	table.Wide(table.String("Repository", "The Git repository looked into.", func(q object) string { return q.Spec.GitSource.URL })),
}
