// Package deploymentpreview is the registry of DeploymentPreviews: a tenant asks what a
// GitOpsDeployment would deploy now (its source at a revision, rendered by the agent with Argo
// CD's repo-server), and compares it with a DeploymentRecord through the diff subresource.
package deploymentpreview

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.DeploymentPreview

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateDeploymentPreview,
		validation.ValidateDeploymentPreviewUpdate,
		validation.ValidateDeploymentPreviewStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	o := obj.(object)
	return fields.Set{
		"spec.gitOpsDeploymentName": o.Spec.GitOpsDeploymentName,
		"status.phase":              string(o.Status.Phase),
	}
}

// shortRevision is a commit as git log --oneline prints it; a branch or tag name is kept whole.
func shortRevision(rev string) string {
	if len(rev) == 40 || len(rev) == 64 {
		return rev[:7]
	}
	return rev
}

var columns = []table.Column{
	table.String("Deployment", "The GitOpsDeployment rendered.", func(o object) string { return o.Spec.GitOpsDeploymentName }),
	table.String("Ref", "The branch, tag or commit asked for; empty for the one the deployment follows.", func(o object) string {
		return shortRevision(o.Spec.Revision)
	}),
	table.String("Revision", "The commit rendered.", func(o object) string { return shortRevision(o.Status.Revision) }),
	table.String("Phase", "Pending, Rendered or Failed.", func(o object) string { return string(o.Status.Phase) }),
	table.Wide(table.String("Digest", "The digest of the rendered manifests.", func(o object) string { return o.Status.ManifestsDigest })),
	table.Wide(table.String("Message", "What the agent says of it.", func(o object) string { return o.Status.Message })),
}
