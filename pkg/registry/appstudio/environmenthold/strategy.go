// Package environmenthold is the registry of EnvironmentHolds: while one exists, automated
// promotion keeps out of the Environment of the same name. Deleting it releases the Environment.
package environmenthold

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.EnvironmentHold

// kind has no status: a hold is all spec.
func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateEnvironmentHold, validation.ValidateEnvironmentHoldUpdate, nil)
}

var columns = []table.Column{
	table.String("Snapshot", "The Snapshot the Environment is held on, when a rollback made the hold.", func(h object) string { return h.Spec.Snapshot }),
	table.String("Reason", "Why the Environment is held.", func(h object) string { return h.Spec.Reason }),
}
