// Package snapshot is the registry of Snapshots.
package snapshot

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.Snapshot

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateSnapshot, validation.ValidateSnapshotUpdate, validation.ValidateSnapshotStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.application": obj.(object).Spec.Application}
}

var columns = []table.Column{
	table.String("Application", "The Application whose images these are.", func(s object) string { return s.Spec.Application }),
	table.Integer("Components", "How many component images the Snapshot holds.", func(s object) int64 { return int64(len(s.Spec.Components)) }),
	table.Wide(table.String("Display Name", "The name users see.", func(s object) string { return s.Spec.DisplayName })),
}
