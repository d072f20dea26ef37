// Package gitopsdeploymentmanagedenvironment is the registry of GitOpsDeploymentManagedEnvironments.
package gitopsdeploymentmanagedenvironment

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

type object = *gitops.GitOpsDeploymentManagedEnvironment

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateGitOpsDeploymentManagedEnvironment,
		validation.ValidateGitOpsDeploymentManagedEnvironmentUpdate,
		validation.ValidateGitOpsDeploymentManagedEnvironmentStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.credentialsSecret": obj.(object).Spec.ClusterCredentialsSecret}
}

var columns = []table.Column{
	table.String("API URL", "The cluster's API server.", func(e object) string { return e.Spec.APIURL }),
	table.String("Secret", "The Secret holding the cluster's kubeconfig.", func(e object) string { return e.Spec.ClusterCredentialsSecret }),
	table.String("Connected", "Whether the service could connect to the cluster.", func(e object) string {
		if c := meta.FindStatusCondition(e.Status.Conditions, gitops.ManagedEnvironmentStatusConnectionInitializationSucceeded); c != nil {
			return string(c.Status)
		}
		return ""
	}),
}
