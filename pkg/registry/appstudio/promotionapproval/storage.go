package promotionapproval

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of promotionapprovals; they have no status, so no /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("promotionapprovals"),
		SingularResource: appstudio.Resource("promotionapproval"),
		NewFunc:          func() runtime.Object { return &appstudio.PromotionApproval{} },
		NewListFunc:      func() runtime.Object { return &appstudio.PromotionApprovalList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"approval"},
	}, optsGetter)
}

// The verbs a decision takes on its Environment (appstudio.redhat.com environments), which
// no built-in role has: ClusterRole gitops-service:approve (artifacts/apiserver/tenant-roles.yaml)
// aggregates them to each namespace's admin, and a team may grant them on one Environment with
// a Role naming it in resourceNames.
const (
	VerbApprove  = "approve"
	VerbOverride = "override"
)

// VerbOf is the verb on the Environment that decision takes: approve for Approve and Reject,
// override for Override.
func VerbOf(decision appstudio.ApprovalDecision) string {
	if decision == appstudio.ApprovalOverride {
		return VerbOverride
	}
	return VerbApprove
}

// AuthorizedREST is the storage of promotionapprovals that admits an approval only from a user
// the server's authorizer allows the decision's verb on the Environment, only for a
// PromotionRun and an Environment that exist, and only as that user's first decision on the
// run's promotion into the Environment.
//
// RBAC alone cannot say this: create on promotionapprovals (which edit holds, so that the
// namespace's editors and its deployer can record decisions) says nothing of which
// Environment, nor of which decision. Asking the authorizer with the Environment's name makes
// `kubectl auth can-i approve environments/prod -n team` tell exactly who may approve, since
// the server's authorizer delegates to the host cluster's RBAC.
type AuthorizedREST struct {
	*store.REST
	runs, environments rest.Getter
	authorizer         authorizer.Authorizer
}

// WithAuthorization wraps approvals, the approvals' storage; runs and environments are the
// storages of promotionruns and environments; authz is the server's authorizer (nil: every
// decision is allowed, as in unit tests of the registry).
func WithAuthorization(approvals *store.REST, runs, environments rest.Getter, authz authorizer.Authorizer) *AuthorizedREST {
	return &AuthorizedREST{REST: approvals, runs: runs, environments: environments, authorizer: authz}
}

// Create implements rest.Creater.
func (r *AuthorizedREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	options *metav1.CreateOptions) (runtime.Object, error) {
	r.stampRun(ctx, obj)
	return r.REST.Create(ctx, obj, r.admit(createValidation), options)
}

// stampRun sets obj's spec.promotionRunUID, whatever the client sent, to the UID of the run it
// names (none when there is no such run, which admit refuses): the decision is on that run, not
// on one made later under its name. (Not in admit: the store validates a copy.) An update keeps
// the stored UID (the strategy's PrepareUpdate).
func (r *AuthorizedREST) stampRun(ctx context.Context, obj runtime.Object) {
	a, ok := obj.(*appstudio.PromotionApproval)
	if !ok {
		return
	}
	a.Spec.PromotionRunUID = ""
	if r.runs == nil {
		return
	}
	if run, err := r.runs.Get(ctx, a.Spec.PromotionRun, &metav1.GetOptions{}); err == nil {
		if m, err := meta.Accessor(run); err == nil {
			a.Spec.PromotionRunUID = m.GetUID()
		}
	}
}

// stampedInfo is an update's object with its run stamped (stampRun).
type stampedInfo struct {
	rest.UpdatedObjectInfo
	r *AuthorizedREST
}

func (s stampedInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	obj, err := s.UpdatedObjectInfo.UpdatedObject(ctx, old)
	if err == nil {
		s.r.stampRun(ctx, obj)
	}
	return obj, err
}

// Update implements rest.Updater: server-side apply creates a missing approval through it. An
// update of an existing approval changes no decision (its spec is immutable) and is left to
// RBAC.
func (r *AuthorizedREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.REST.Update(ctx, name, stampedInfo{objInfo, r}, r.admit(createValidation), updateValidation, forceAllowCreate, options)
}

// admit adds to validate, which the generic store runs on every create (a create, dry run
// included, or a server-side apply that creates) after the strategy has set the user and
// validated the object, the checks that read beyond the object: the authorizer's (403), the
// run's and the Environment's existence (422), the user's earlier decision (409).
func (r *AuthorizedREST) admit(validate rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		if a, ok := obj.(*appstudio.PromotionApproval); ok {
			if err := r.authorize(ctx, a); err != nil {
				return err
			}
			if err := r.exist(ctx, a); err != nil {
				return err
			}
			if err := r.firstDecision(ctx, a); err != nil {
				return err
			}
		}
		if validate == nil {
			return nil
		}
		return validate(ctx, obj)
	}
}

// authorize asks the authorizer whether the requesting user may the decision's verb the
// Environment, by name, in the request's namespace.
func (r *AuthorizedREST) authorize(ctx context.Context, a *appstudio.PromotionApproval) error {
	if r.authorizer == nil {
		return nil
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	verb, env := VerbOf(a.Spec.Decision), a.Spec.Environment
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || u == nil {
		return apierrors.NewForbidden(appstudio.Resource("promotionapprovals"), a.Name,
			fmt.Errorf("no user in the request: a decision on environments/%s takes the verb %s on the Environment", env, verb))
	}
	decision, _, err := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            verb,
		Namespace:       namespace,
		APIGroup:        appstudio.GroupName,
		APIVersion:      "v1alpha1",
		Resource:        "environments",
		Name:            env,
		ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		// As the server's own authorization filter: an authorizer that could not decide is an
		// error of the server, not a refusal.
		return apierrors.NewInternalError(fmt.Errorf("asking whether user %q may %s environments/%s in namespace %s: %w",
			u.GetName(), verb, env, namespace, err))
	}
	doing := map[appstudio.ApprovalDecision]string{
		appstudio.ApprovalApprove: "approving", appstudio.ApprovalReject: "rejecting", appstudio.ApprovalOverride: "overriding",
	}[a.Spec.Decision]
	return apierrors.NewForbidden(appstudio.Resource("promotionapprovals"), a.Name, fmt.Errorf(
		"user %q may not %s environments/%s in namespace %s: %s takes the verb %s on the Environment (kubectl auth can-i %s environments/%s)",
		u.GetName(), verb, env, namespace, doing, verb, verb, env))
}

// exist refuses an approval whose PromotionRun or Environment is not in the namespace: a
// decision on nothing would wait, unseen, for a run of that name.
func (r *AuthorizedREST) exist(ctx context.Context, a *appstudio.PromotionApproval) error {
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	var errs field.ErrorList
	for _, ref := range []struct {
		getter rest.Getter
		path   *field.Path
		kind   string
		name   string
	}{
		{r.runs, field.NewPath("spec", "promotionRun"), "PromotionRun", a.Spec.PromotionRun},
		{r.environments, field.NewPath("spec", "environment"), "Environment", a.Spec.Environment},
	} {
		// A stamped run UID (stampRun) is the run found a moment ago: not read again.
		if ref.getter == nil || ref.kind == "PromotionRun" && a.Spec.PromotionRunUID != "" {
			continue
		}
		_, err := ref.getter.Get(ctx, ref.name, &metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			e := field.NotFound(ref.path, ref.name)
			e.Detail = fmt.Sprintf("no %s %s in namespace %s", ref.kind, ref.name, namespace)
			errs = append(errs, e)
		case err != nil:
			return err
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: appstudio.GroupName, Kind: "PromotionApproval"}, a.Name, errs)
	}
	return nil
}

// firstDecision refuses a user's second decision on the same run's promotion into the same
// Environment: the first stands (an admin may delete it). It lists through the store, before
// the create, so two concurrent creates may both pass it: the storage's UniqueIndex, checked in
// the transaction that inserts, refuses the second of those with the same 409 (on this
// server's PostgreSQL storage; the agent counts each user once anyway, so even a duplicate
// could never count as a second approval). This check answers dry runs too, which never
// reach the insert.
func (r *AuthorizedREST) firstDecision(ctx context.Context, a *appstudio.PromotionApproval) error {
	if a.Spec.Username == "" {
		return nil // no user to tell apart (a server without authentication, in tests)
	}
	list, err := r.REST.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.SelectorFromSet(fields.Set{
		"spec.promotionRun": a.Spec.PromotionRun,
		"spec.environment":  a.Spec.Environment,
		"spec.username":     a.Spec.Username,
	})})
	if err != nil {
		return err
	}
	for _, earlier := range list.(*appstudio.PromotionApprovalList).Items {
		if earlier.Name == a.Name || earlier.Spec.PromotionRunUID != a.Spec.PromotionRunUID {
			continue
		}
		return alreadyDecided(a, earlier.Name)
	}
	return nil
}
