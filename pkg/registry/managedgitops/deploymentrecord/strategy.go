// Package deploymentrecord is the registry of DeploymentRecords, one per sync attempt of a
// GitOpsDeployment, written by the agent and read by tenants.
package deploymentrecord

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.DeploymentRecord

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateDeploymentRecord,
		validation.ValidateDeploymentRecordUpdate,
		validation.ValidateDeploymentRecordStatusUpdate)
}

func selectableFields(obj runtime.Object) fields.Set {
	o := obj.(object)
	return fields.Set{
		"spec.gitOpsDeploymentName": o.Spec.GitOpsDeploymentName,
		"spec.trigger.type":         string(o.Spec.Trigger.Type),
		"status.phase":              string(o.Status.Phase),
	}
}

// shortRevision is a commit as git log --oneline prints it.
func shortRevision(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

var columns = []table.Column{
	table.String("Deployment", "The GitOpsDeployment synced.", func(o object) string { return o.Spec.GitOpsDeploymentName }),
	table.String("Revision", "The commit synced.", func(o object) string { return shortRevision(o.Spec.Revision) }),
	table.String("Trigger", "What started the sync.", func(o object) string { return string(o.Spec.Trigger.Type) }),
	table.String("User", "Who made the change that started it.", func(o object) string { return o.Spec.Trigger.User }),
	table.String("Phase", "Running, Succeeded, Failed or Error.", func(o object) string { return string(o.Status.Phase) }),
	table.String("Started", "When Argo CD started the sync (UTC).", func(o object) string {
		return o.Spec.StartedAt.UTC().Format("2006-01-02T15:04:05Z")
	}),
	table.Wide(table.String("Message", "Argo CD's message.", func(o object) string { return o.Status.Message })),
}
