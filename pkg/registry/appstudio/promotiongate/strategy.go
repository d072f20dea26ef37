// Package promotiongate is the registry of PromotionGates: the gates of the Environment of the
// same name. A team writes the spec; the agent alone writes the status.
package promotiongate

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.PromotionGate

func kind(typer runtime.ObjectTyper) strategy.Kind {
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidatePromotionGate, validation.ValidatePromotionGateUpdate, validation.ValidatePromotionGateStatusUpdate)
}

var columns = []table.Column{
	table.Integer("Approvals", "The approvals a promotion needs (0: none).", func(g object) int64 {
		if g.Spec.Approvals == nil {
			return 0
		}
		return int64(g.Spec.Approvals.Required)
	}),
	table.String("Soak", "How long a Snapshot must stay Healthy before it may leave the Environment.", func(g object) string {
		if g.Spec.SoakTime == nil {
			return ""
		}
		return g.Spec.SoakTime.Duration.String()
	}),
	table.String("Verification", "Whether a verification Job runs after each deployment.", func(g object) string {
		if g.Spec.Verification == nil {
			return "no"
		}
		return "yes"
	}),
	table.Integer("Freezes", "The freezes listed, expired ones included.", func(g object) int64 { return int64(len(g.Spec.Freezes)) }),
}
