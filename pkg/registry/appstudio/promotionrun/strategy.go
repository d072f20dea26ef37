// Package promotionrun is the registry of PromotionRuns.
package promotionrun

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.PromotionRun

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidatePromotionRun, validation.ValidatePromotionRunUpdate, validation.ValidatePromotionRunStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	p := obj.(object)
	return fields.Set{"spec.application": p.Spec.Application, "spec.snapshot": p.Spec.Snapshot, "status.state": string(p.Status.State)}
}

var columns = []table.Column{
	table.String("Application", "The Application promoted.", func(p object) string { return p.Spec.Application }),
	table.String("Snapshot", "The Snapshot promoted.", func(p object) string { return p.Spec.Snapshot }),
	table.String("Target", "The Environment promoted to.", func(p object) string { return p.Spec.ManualPromotion.TargetEnvironment }),
	table.String("State", "Active, Waiting or Complete.", func(p object) string { return string(p.Status.State) }),
	table.String("Result", "Success or Failure, once complete.", func(p object) string { return string(p.Status.CompletionResult) }),
}
