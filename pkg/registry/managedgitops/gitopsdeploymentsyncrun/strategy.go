// Package gitopsdeploymentsyncrun is the registry of GitOpsDeploymentSyncRuns.
package gitopsdeploymentsyncrun

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.GitOpsDeploymentSyncRun

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateGitOpsDeploymentSyncRun,
		validation.ValidateGitOpsDeploymentSyncRunUpdate,
		validation.ValidateGitOpsDeploymentSyncRunStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.gitopsDeploymentName": obj.(object).Spec.GitopsDeploymentName}
}

var columns = []table.Column{
	table.String("Deployment", "The GitOpsDeployment synced.", func(r object) string { return r.Spec.GitopsDeploymentName }),
	table.String("Revision", "The commit synced to; empty for the deployment's target revision.", func(r object) string { return r.Spec.RevisionID }),
	table.String("Error", "Whether an error stopped the sync.", func(r object) string {
		for _, c := range r.Status.Conditions {
			if c.Type == gitops.GitOpsDeploymentSyncRunConditionErrorOccurred {
				return string(c.Status)
			}
		}
		return ""
	}),
}
