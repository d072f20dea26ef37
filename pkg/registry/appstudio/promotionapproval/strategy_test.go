package promotionapproval

import (
	"context"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind, which has no status.
var testKind = registrytest.Kind[object, struct{}]{
	Stored: stored,
	Kind:   func() strategy.Kind { return kind(scheme) },
}

// stored is a valid PromotionApproval as stored, at generation 3: alice's approval.
func stored() *appstudio.PromotionApproval {
	return &appstudio.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-42-prod-alice", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.PromotionApprovalSpec{
			PromotionRun: "shop-42.dev-auto",
			Environment:  "prod",
			Decision:     appstudio.ApprovalApprove,
			Comment:      "LGTM",
			Username:     "alice",
			UID:          "a1",
			Groups:       []string{"team-a", "system:authenticated"},
		},
	}
}

// noUser clears who made the approval: what a create without a user in the request stores.
func noUser(a *appstudio.PromotionApproval) { a.Spec.Username, a.Spec.UID, a.Spec.Groups = "", "", nil }

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.PromotionApproval]{
		{Name: "as sent", Mutate: noUser},
		{Name: "generation sent", Mutate: func(a *appstudio.PromotionApproval) { noUser(a); a.Generation = 9 }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

// Who decided is the requesting user, whatever the client sent, as a
// CertificateSigningRequest's spec.username; an update keeps the stored user.
func TestUserFromRequest(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob", UID: "b2", Groups: []string{"team-b", "system:authenticated"}}
	as := func(u user.Info) context.Context { return genericapirequest.WithUser(context.Background(), u) }
	s := strategy.New(func() *strategy.Kind { k := kind(scheme); return &k }())

	forged := stored() // claims to be alice's
	s.PrepareForCreate(as(bob), forged)
	if got := forged.Spec; got.Username != "bob" || got.UID != "b2" || !apiequality.Semantic.DeepEqual(got.Groups, bob.Groups) {
		t.Errorf("created by bob: stored user %q %q %v", got.Username, got.UID, got.Groups)
	}
	bob.Groups[0] = "changed"
	if forged.Spec.Groups[0] != "team-b" {
		t.Error("the stored groups are the request's slice")
	}
	anonymous := stored()
	s.PrepareForCreate(context.Background(), anonymous)
	if got := anonymous.Spec; got.Username != "" || got.UID != "" || got.Groups != nil {
		t.Errorf("created without a user: stored user %q %q %v, want none", got.Username, got.UID, got.Groups)
	}

	updated := stored()
	updated.Spec.Username, updated.Spec.UID, updated.Spec.Groups = "mallory", "m", []string{"system:masters"}
	updated.Labels["reviewed"] = "yes"
	s.PrepareForUpdate(as(bob), updated, stored())
	if !apiequality.Semantic.DeepEqual(updated.Spec, stored().Spec) || updated.Generation != 3 {
		t.Errorf("updated by bob: spec %+v at generation %d, want the stored spec at 3", updated.Spec, updated.Generation)
	}
	if errs := s.ValidateUpdate(as(bob), updated, stored()); len(errs) != 0 {
		t.Errorf("an update that sent another user: %v", errs)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.PromotionApproval]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionApproval) {}, Want: 3},
		{Name: "label added", Mutate: func(a *appstudio.PromotionApproval) { a.Labels["tier"] = "gold" }, Want: 3},
		// The stored user is put back: no change.
		{Name: "user sent", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.Username = "mallory" }, Want: 3},
		// Refused by validation, but the generation is decided first.
		{Name: "decision", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.Decision = appstudio.ApprovalReject }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionApproval]{
		{Name: "valid", Mutate: func(*appstudio.PromotionApproval) {}},
		{Name: "no run", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.PromotionRun = "" }, Want: []apitesting.Want{apitesting.Required("spec.promotionRun")}},
		{Name: "unknown decision", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.Decision = "Veto" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.decision")}},
		{Name: "override without comment", Mutate: func(a *appstudio.PromotionApproval) {
			a.Spec.Decision, a.Spec.Comment = appstudio.ApprovalOverride, ""
		}, Want: []apitesting.Want{apitesting.Required("spec.comment")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionApproval]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionApproval) {}},
		{Name: "labels", Mutate: func(a *appstudio.PromotionApproval) { a.Labels = nil }},
		// A record: every field of its spec is fixed.
		{Name: "decision", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.Decision = appstudio.ApprovalReject },
			Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "comment", Mutate: func(a *appstudio.PromotionApproval) { a.Spec.Comment = "" }, Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "renamed", Mutate: func(a *appstudio.PromotionApproval) { a.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.PromotionApproval]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.promotionRun": "shop-42.dev-auto", "spec.environment": "prod",
			"spec.decision": "Approve", "spec.username": "alice"}},
		{Name: "empty", Obj: &appstudio.PromotionApproval{}, Want: fields.Set{"spec.promotionRun": "", "spec.environment": "",
			"spec.decision": "", "spec.username": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.PromotionApproval]{
		{Name: "approve", Mutate: func(*appstudio.PromotionApproval) {},
			Want: []interface{}{"shop-42-prod-alice", "shop-42.dev-auto", "prod", "Approve", "alice", "<unknown>"}},
		{Name: "override", Mutate: func(a *appstudio.PromotionApproval) {
			a.Spec.Decision, a.Spec.Username = appstudio.ApprovalOverride, "bob"
		},
			Want: []interface{}{"shop-42-prod-alice", "shop-42.dev-auto", "prod", "Override", "bob", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("promotionapprovals"),
		Singular:   appstudio.Resource("promotionapproval"),
		New:        "*appstudio.PromotionApproval",
		NewList:    "*appstudio.PromotionApprovalList",
		Namespaced: true,
		ShortNames: []string{"approval"},
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "shop-42-prod-alice", "metadata.namespace": "jane",
			"spec.promotionRun": "shop-42.dev-auto", "spec.environment": "prod", "spec.decision": "Approve", "spec.username": "alice"},
		Columns:    []string{"Name", "Run", "Environment", "Decision", "User", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
	})
}
