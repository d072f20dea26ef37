package promotiongate

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, appstudio.PromotionGateStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.PromotionGateStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid PromotionGate as stored: at generation 3, with a promotion passed.
func stored() *appstudio.PromotionGate {
	return &appstudio.PromotionGate{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.PromotionGateSpec{
			Approvals: &appstudio.ApprovalGate{Required: 2},
			ChangeWindows: []appstudio.ChangeWindow{{Name: "office-hours", Type: appstudio.ChangeWindowAllow,
				Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Paris"}},
			Freezes:  []appstudio.Freeze{{Name: "year-end", Reason: "Year-end freeze", Until: now}},
			SoakTime: &metav1.Duration{Duration: 30 * time.Minute},
			Verification: &appstudio.Verification{
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "smoke", Image: "quay.io/org/smoke:1"}},
				}}}},
			},
		},
		Status: appstudio.PromotionGateStatus{Promotions: []appstudio.GatedPromotion{
			{PromotionRun: "shop-41.dev-auto", Snapshot: "shop-41", Phase: appstudio.GatePhasePassed, Approvers: []string{"alice", "bob"}},
		}},
	}
}

var otherStatus = appstudio.PromotionGateStatus{Promotions: []appstudio.GatedPromotion{
	{PromotionRun: "shop-42.dev-auto", Snapshot: "shop-42", Phase: appstudio.GatePhaseWaiting, Message: "Waiting for 2 approvals"},
}}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.PromotionGate]{
		// A client cannot create a gate that claims promotions passed it.
		{Name: "status sent", Mutate: func(*appstudio.PromotionGate) {}},
		{Name: "generation sent", Mutate: func(g *appstudio.PromotionGate) { g.Generation = 9; g.Status = appstudio.PromotionGateStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.PromotionGate]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionGate) {}, Want: 3},
		{Name: "label added", Mutate: func(g *appstudio.PromotionGate) { g.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(g *appstudio.PromotionGate) { g.Status = otherStatus }, Want: 3},
		{Name: "freeze added", Mutate: func(g *appstudio.PromotionGate) {
			g.Spec.Freezes = append(g.Spec.Freezes, appstudio.Freeze{Name: "incident", Reason: "INC-42", Until: now})
		}, Want: 4},
		{Name: "approvals dropped", Mutate: func(g *appstudio.PromotionGate) { g.Spec.Approvals = nil }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.PromotionGate]{
		{Name: "status written", Mutate: func(g *appstudio.PromotionGate) { g.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(g *appstudio.PromotionGate) { g.Spec.Approvals = nil; g.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(g *appstudio.PromotionGate) { g.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionGate]{
		{Name: "valid", Mutate: func(*appstudio.PromotionGate) {}},
		{Name: "no gates", Mutate: func(g *appstudio.PromotionGate) { g.Spec = appstudio.PromotionGateSpec{} }},
		{Name: "dotted name", Mutate: func(g *appstudio.PromotionGate) { g.Name = "pro.d" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "bad schedule", Mutate: func(g *appstudio.PromotionGate) { g.Spec.ChangeWindows[0].Schedule = "TZ=UTC 0 9 * * *" },
			Want: []apitesting.Want{apitesting.Invalid("spec.changeWindows[0].schedule")}},
		{Name: "another account", Mutate: func(g *appstudio.PromotionGate) {
			g.Spec.Verification.JobTemplate.Spec.Template.Spec.ServiceAccountName = "default"
		}, Want: []apitesting.Want{apitesting.Forbidden("spec.verification.jobTemplate.spec.template.spec.serviceAccountName")}},
		// Times of every kind are checked wherever they are.
		{Name: "freeze until year 10000", Mutate: func(g *appstudio.PromotionGate) {
			g.Spec.Freezes[0].Until = metav1.NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
		}, Want: []apitesting.Want{apitesting.Invalid("spec.freezes[0].until")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionGate]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionGate) {}},
		// A team edits its gates and freezes.
		{Name: "gates edited", Mutate: func(g *appstudio.PromotionGate) {
			g.Spec.Approvals.Required = 1
			g.Spec.Freezes = nil
			g.Spec.Verification = nil
		}},
		{Name: "too many approvals", Mutate: func(g *appstudio.PromotionGate) { g.Spec.Approvals.Required = 11 },
			Want: []apitesting.Want{apitesting.Invalid("spec.approvals.required")}},
		{Name: "renamed", Mutate: func(g *appstudio.PromotionGate) { g.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionGate]{
		{Name: "valid", Mutate: func(g *appstudio.PromotionGate) { g.Status = otherStatus }},
		{Name: "invalid spec is not checked", Mutate: func(g *appstudio.PromotionGate) { g.Spec.Approvals.Required = 0 }},
		{Name: "unknown phase", Mutate: func(g *appstudio.PromotionGate) { g.Status.Promotions[0].Phase = "Done" },
			Want: []apitesting.Want{apitesting.NotSupported("status.promotions[0].phase")}},
		{Name: "renamed", Mutate: func(g *appstudio.PromotionGate) { g.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.PromotionGate]{
		{Name: "every gate", Mutate: func(*appstudio.PromotionGate) {}, Want: []interface{}{"prod", int64(2), "30m0s", "yes", int64(1), "<unknown>"}},
		{Name: "none", Mutate: func(g *appstudio.PromotionGate) { g.Spec = appstudio.PromotionGateSpec{} },
			Want: []interface{}{"prod", int64(0), "", "no", int64(0), "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("promotiongates"),
		Singular:       appstudio.Resource("promotiongate"),
		New:            "*appstudio.PromotionGate",
		NewList:        "*appstudio.PromotionGateList",
		Namespaced:     true,
		ShortNames:     []string{"gate"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "prod", "metadata.namespace": "jane"},
		Columns:        []string{"Name", "Approvals", "Soak", "Verification", "Freezes", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:         true,
	})
}
