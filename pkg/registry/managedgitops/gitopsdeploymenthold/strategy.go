// Package gitopsdeploymenthold is the registry of GitOpsDeploymentHolds: while one exists, the
// agent deploys its revision for the GitOpsDeployment of the same name, whatever the
// deployment's spec says. Deleting it releases the deployment.
package gitopsdeploymenthold

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.GitOpsDeploymentHold

// kind: who held the deployment is the requesting user on every create (a create, a dry run, a
// server-side apply that creates), whatever the client sent, since the deployment's Held
// condition shows it to everyone as who rolled back; an update keeps the stored one, so that
// a client sending another name changes nothing.
func kind(typer runtime.ObjectTyper) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateGitOpsDeploymentHold,
		validation.ValidateGitOpsDeploymentHoldUpdate,
		validation.ValidateGitOpsDeploymentHoldStatusUpdate)
	k.PrepareCreate = func(ctx context.Context, obj runtime.Object) {
		spec := &obj.(object).Spec
		spec.HeldBy = ""
		if u, ok := genericapirequest.UserFrom(ctx); ok && u != nil {
			spec.HeldBy = u.GetName()
		}
	}
	k.PrepareUpdate = func(_ context.Context, obj, old runtime.Object) {
		obj.(object).Spec.HeldBy = old.(object).Spec.HeldBy
	}
	return k
}

// shortRevision is a commit as git log --oneline prints it; a branch or tag name is kept whole.
func shortRevision(rev string) string {
	if len(rev) == 40 || len(rev) == 64 {
		return rev[:7]
	}
	return rev
}

var columns = []table.Column{
	table.String("Revision", "The revision the GitOpsDeployment of the same name is held at.", func(h object) string { return shortRevision(h.Spec.Revision) }),
	table.String("Record", "The DeploymentRecord the revision was taken from.", func(h object) string { return h.Spec.DeploymentRecord }),
	table.String("HeldBy", "Who made the hold, as the server authenticated them.", func(h object) string { return h.Spec.HeldBy }),
}
