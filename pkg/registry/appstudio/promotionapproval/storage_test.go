package promotionapproval

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
)

// rbac is a fake authorizer: the verbs each user holds on environments, by Environment name
// ("*" for every one), in namespace jane. It records what it was asked.
type rbac struct {
	grants map[string]map[string][]string // user → Environment → verbs
	err    error
	asked  []authorizer.Attributes
}

func (r *rbac) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a)
	if r.err != nil {
		return authorizer.DecisionNoOpinion, "", r.err
	}
	if a.GetNamespace() != "jane" || a.GetAPIGroup() != appstudio.GroupName || a.GetResource() != "environments" || !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	envs := r.grants[a.GetUser().GetName()]
	for _, name := range []string{a.GetName(), "*"} {
		for _, verb := range envs[name] {
			if verb == a.GetVerb() {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// getter is a fake rest.Getter holding the named objects.
type getter struct {
	resource string
	names    []string
	err      error
}

func (g getter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if g.err != nil {
		return nil, g.err
	}
	for _, n := range g.names {
		if n == name {
			return &appstudio.Environment{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
		}
	}
	return nil, apierrors.NewNotFound(appstudio.Resource(g.resource), name)
}

func as(name string) context.Context {
	ctx := genericapirequest.WithNamespace(context.Background(), "jane")
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: name, Groups: []string{"system:authenticated"}})
}

func approval(decision appstudio.ApprovalDecision, env, run string) *appstudio.PromotionApproval {
	// No user: the duplicate check, which lists through the store, is the server tests'.
	return &appstudio.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{Name: "decision", Namespace: "jane"},
		Spec:       appstudio.PromotionApprovalSpec{PromotionRun: run, Environment: env, Decision: decision, Comment: "why"},
	}
}

// Each decision is admitted only from a user allowed its verb on the Environment, by name:
// approve for Approve and Reject, override for Override. The refusal is a 403 that names the
// verb, the resource and the kubectl command that tells who may.
func TestDecisionsTakeTheirVerbOnTheEnvironment(t *testing.T) {
	authz := &rbac{grants: map[string]map[string][]string{
		"alice": {"prod": {VerbApprove}},
		"bob":   {"*": {VerbApprove, VerbOverride}},
		"carol": {"staging": {VerbApprove, VerbOverride}},
	}}
	r := WithAuthorization(nil, getter{"promotionruns", []string{"shop-42"}, nil}, getter{"environments", []string{"prod", "staging"}, nil}, authz)
	next := errors.New("the next validation")
	admit := r.admit(func(context.Context, runtime.Object) error { return next })
	for _, c := range []struct {
		user     string
		decision appstudio.ApprovalDecision
		env      string
		refusal  string // "" when admitted
	}{
		{"alice", appstudio.ApprovalApprove, "prod", ""},
		{"alice", appstudio.ApprovalReject, "prod", ""},
		{"alice", appstudio.ApprovalOverride, "prod", `user "alice" may not override environments/prod in namespace jane: ` +
			"overriding takes the verb override on the Environment (kubectl auth can-i override environments/prod)"},
		{"alice", appstudio.ApprovalApprove, "staging", `user "alice" may not approve environments/staging in namespace jane: ` +
			"approving takes the verb approve on the Environment (kubectl auth can-i approve environments/staging)"},
		{"bob", appstudio.ApprovalOverride, "prod", ""},
		{"bob", appstudio.ApprovalReject, "staging", ""},
		{"carol", appstudio.ApprovalReject, "prod", `user "carol" may not approve environments/prod in namespace jane: ` +
			"rejecting takes the verb approve on the Environment (kubectl auth can-i approve environments/prod)"},
		{"mallory", appstudio.ApprovalApprove, "prod", `user "mallory" may not approve environments/prod`},
	} {
		err := admit(as(c.user), approval(c.decision, c.env, "shop-42"))
		switch {
		case c.refusal == "" && err != next:
			t.Errorf("%s: %s on %s: got %v, want the next validation's verdict", c.user, c.decision, c.env, err)
		case c.refusal != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), c.refusal) || !strings.Contains(err.Error(), `"decision"`)):
			t.Errorf("%s: %s on %s: got %v, want a 403 saying %q", c.user, c.decision, c.env, err, c.refusal)
		}
	}
	// What the authorizer is asked: a resource request on the Environment by name.
	want := authorizer.AttributesRecord{User: authz.asked[0].GetUser(), Verb: "approve", Namespace: "jane", APIGroup: "appstudio.redhat.com",
		APIVersion: "v1alpha1", Resource: "environments", Name: "prod", ResourceRequest: true}
	if got := authz.asked[0]; !reflect.DeepEqual(got, authorizer.Attributes(want)) {
		t.Errorf("asked %+v, want %+v", got, want)
	}
}

func TestAuthorizerFailures(t *testing.T) {
	a := approval(appstudio.ApprovalApprove, "prod", "shop-42")
	r := WithAuthorization(nil, nil, nil, &rbac{err: errors.New("webhook down")})
	if err := r.admit(nil)(as("alice"), a); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "webhook down") {
		t.Errorf("an authorizer error: want a 500, got %v", err)
	}
	r = WithAuthorization(nil, nil, nil, &rbac{})
	ctx := genericapirequest.WithNamespace(context.Background(), "jane")
	if err := r.admit(nil)(ctx, a); !apierrors.IsForbidden(err) {
		t.Errorf("no user: want a 403, got %v", err)
	}
	// Without an authorizer (unit tests of the registry) every decision is allowed.
	if err := WithAuthorization(nil, nil, nil, nil).admit(nil)(ctx, a); err != nil {
		t.Errorf("no authorizer: %v", err)
	}
}

// A decision on a PromotionRun or an Environment that is not in the namespace is a 422 at the
// field that names it.
func TestRunAndEnvironmentMustExist(t *testing.T) {
	authz := &rbac{grants: map[string]map[string][]string{"bob": {"*": {VerbApprove}}}}
	r := WithAuthorization(nil, getter{"promotionruns", []string{"shop-42"}, nil}, getter{"environments", []string{"prod"}, nil}, authz)
	for _, c := range []struct {
		name, run, env string
		fields         []string
	}{
		{"both exist", "shop-42", "prod", nil},
		{"no such run", "shop-43", "prod", []string{"spec.promotionRun"}},
		{"no such Environment", "shop-42", "qa", []string{"spec.environment"}},
		{"neither", "shop-43", "qa", []string{"spec.promotionRun", "spec.environment"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := r.admit(nil)(as("bob"), approval(appstudio.ApprovalApprove, c.env, c.run))
			if c.fields == nil {
				if err != nil {
					t.Errorf("got %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want a 422, got %v", err)
			}
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != len(c.fields) {
				t.Fatalf("causes %+v, want %v", causes, c.fields)
			}
			for i, f := range c.fields {
				if causes[i].Field != f || causes[i].Type != metav1.CauseTypeFieldValueNotFound || !strings.Contains(causes[i].Message, "in namespace jane") {
					t.Errorf("cause %d: %+v, want NotFound at %s", i, causes[i], f)
				}
			}
		})
	}
	// Another error of the storage is passed on as it is.
	down := apierrors.NewServiceUnavailable("database down")
	r = WithAuthorization(nil, getter{err: down}, getter{"environments", []string{"prod"}, nil}, authz)
	if err := r.admit(nil)(as("bob"), approval(appstudio.ApprovalApprove, "prod", "shop-42")); err != down {
		t.Errorf("got %v, want the storage's error", err)
	}
	// The authorizer decides first: who may not decide learns nothing of what exists.
	r = WithAuthorization(nil, getter{"promotionruns", nil, nil}, getter{"environments", nil, nil}, authz)
	if err := r.admit(nil)(as("carol"), approval(appstudio.ApprovalApprove, "qa", "shop-43")); !apierrors.IsForbidden(err) {
		t.Errorf("carol on what does not exist: want a 403, got %v", err)
	}
}
