// Package gitopsdeploymentrepositorycredential is the registry of GitOpsDeploymentRepositoryCredentials.
package gitopsdeploymentrepositorycredential

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.GitOpsDeploymentRepositoryCredential

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateGitOpsDeploymentRepositoryCredential,
		validation.ValidateGitOpsDeploymentRepositoryCredentialUpdate,
		validation.ValidateGitOpsDeploymentRepositoryCredentialStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	c := obj.(object)
	return fields.Set{"spec.repository": c.Spec.Repository, "spec.secret": c.Spec.Secret}
}

var columns = []table.Column{
	table.String("Repository", "The Git repository.", func(c object) string { return c.Spec.Repository }),
	table.String("Secret", "The Secret holding the credentials.", func(c object) string { return c.Spec.Secret }),
	table.String("Valid", "Whether the credentials give access to the repository.", func(c object) string {
		if cond := meta.FindStatusCondition(c.Status.Conditions, gitops.RepositoryCredentialConditionValidRepositoryCredential); cond != nil {
			return string(cond.Status)
		}
		return ""
	}),
}
