// Package promotionapproval is the registry of PromotionApprovals: one user's decision on a
// PromotionRun's promotion into an Environment. The server records who decided, from the
// request, and admits the decision only from a user the server's authorizer allows its verb on
// the Environment (storage.go).
package promotionapproval

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *appstudio.PromotionApproval

// kind has no status: an approval is a record, immutable once made (validation). Who made it
// is set from the request on every create (a create, a dry run, a server-side apply that
// creates), whatever the client sent, as a CertificateSigningRequest's spec.username; an update
// keeps the stored user, so that a client sending another one changes nothing.
func kind(typer runtime.ObjectTyper) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidatePromotionApproval, validation.ValidatePromotionApprovalUpdate, nil)
	k.PrepareCreate = func(ctx context.Context, obj runtime.Object) {
		spec := &obj.(object).Spec
		// The run's UID is the server's too, set from the run (AuthorizedREST.stampRun).
		spec.Username, spec.UID, spec.Groups = "", "", nil
		if u, ok := genericapirequest.UserFrom(ctx); ok && u != nil {
			spec.Username, spec.UID, spec.Groups = u.GetName(), u.GetUID(), slices.Clone(u.GetGroups())
		}
	}
	k.PrepareUpdate = func(_ context.Context, obj, old runtime.Object) {
		spec, stored := &obj.(object).Spec, &old.(object).Spec
		spec.Username, spec.UID, spec.Groups = stored.Username, stored.UID, slices.Clone(stored.Groups)
		spec.PromotionRunUID = stored.PromotionRunUID
	}
	return k
}

// selectableFields are those of v1alpha1.SelectableFields["PromotionApproval"]: the approvals of
// a run, of an Environment, of a decision, of a user.
func selectableFields(obj runtime.Object) fields.Set {
	a := obj.(object)
	return fields.Set{
		"spec.promotionRun": a.Spec.PromotionRun,
		"spec.environment":  a.Spec.Environment,
		"spec.decision":     string(a.Spec.Decision),
		"spec.username":     a.Spec.Username,
	}
}

var columns = []table.Column{
	table.String("Run", "The PromotionRun decided on.", func(a object) string { return a.Spec.PromotionRun }),
	table.String("Environment", "The Environment the run promotes into.", func(a object) string { return a.Spec.Environment }),
	table.String("Decision", "Approve, Reject or Override.", func(a object) string { return string(a.Spec.Decision) }),
	table.String("User", "Who decided, as the server authenticated them.", func(a object) string { return a.Spec.Username }),
}
