// Package gitopsdeployment is the registry of GitOpsDeployments.
package gitopsdeployment

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.GitOpsDeployment

func kind(typer runtime.ObjectTyper, opts validation.Options) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		func(obj object) field.ErrorList { return validation.ValidateGitOpsDeployment(obj, opts) },
		func(obj, old object) field.ErrorList {
			return validation.ValidateGitOpsDeploymentUpdate(obj, old, opts)
		},
		validation.ValidateGitOpsDeploymentStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	d := obj.(object)
	return fields.Set{
		"spec.type":                    string(d.Spec.Type),
		"spec.source.repoURL":          d.Spec.Source.RepoURL,
		"spec.destination.environment": d.Spec.Destination.Environment,
		"spec.destination.namespace":   d.Spec.Destination.Namespace,
		"status.sync.status":           string(d.Status.Sync.Status),
		"status.health.status":         string(d.Status.Health.Status),
	}
}

// The first two are the original CRD's printer columns.
var columns = []table.Column{
	table.String("Sync Status", "Whether the live state matches Git.", func(d object) string { return string(d.Status.Sync.Status) }),
	table.String("Health Status", "Argo CD's health of the deployed resources.", func(d object) string { return string(d.Status.Health.Status) }),
	table.Wide(table.String("Type", "automated or manual.", func(d object) string { return string(d.Spec.Type) })),
	table.Wide(table.String("Repository", "The Git repository deployed.", func(d object) string { return d.Spec.Source.RepoURL })),
	table.Wide(table.String("Path", "The path of the repository deployed.", func(d object) string { return d.Spec.Source.Path })),
	table.Wide(table.String("Environment", "The managed environment deployed to; empty for this cluster.",
		func(d object) string { return d.Spec.Destination.Environment })),
}
