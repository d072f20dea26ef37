package promotionrun

import (
	"testing"
	"time"

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
var testKind = registrytest.Kind[object, appstudio.PromotionRunStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *appstudio.PromotionRunStatus { return &o.Status },
}

var (
	now     = metav1.Now()
	earlier = metav1.NewTime(now.Add(-time.Minute))
)

// stored is a valid PromotionRun as stored: at generation 3, complete.
func stored() *appstudio.PromotionRun {
	return &appstudio.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "appa-manual-promotion", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.PromotionRunSpec{
			Snapshot:        "my-snapshot",
			Application:     "appa",
			ManualPromotion: appstudio.ManualPromotionConfiguration{TargetEnvironment: "staging"},
		},
		Status: appstudio.PromotionRunStatus{
			State:            appstudio.PromotionRunStateComplete,
			CompletionResult: appstudio.PromotionRunCompleteResultSuccess,
			EnvironmentStatus: []appstudio.PromotionRunEnvironmentStatus{
				{Step: 1, EnvironmentName: "staging", Status: appstudio.PromotionRunEnvironmentStatusSuccess},
			},
			ActiveBindings:     []string{"appa-staging-binding"},
			PromotionStartTime: now,
		},
	}
}

var otherStatus = appstudio.PromotionRunStatus{State: appstudio.PromotionRunStateActive, PromotionStartTime: now}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.PromotionRun]{
		// A client cannot create a run that claims to be complete.
		{Name: "status sent", Mutate: func(*appstudio.PromotionRun) {}},
		{Name: "generation sent", Mutate: func(p *appstudio.PromotionRun) { p.Generation = 9; p.Status = appstudio.PromotionRunStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.PromotionRun]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionRun) {}, Want: 3},
		{Name: "label added", Mutate: func(p *appstudio.PromotionRun) { p.Labels["tier"] = "gold" }, Want: 3},
		{Name: "finalizer added", Mutate: func(p *appstudio.PromotionRun) { p.Finalizers = []string{"example.com/f"} }, Want: 3},
		{Name: "status sent", Mutate: func(p *appstudio.PromotionRun) { p.Status = otherStatus }, Want: 3},
		// Refused by validation, but the generation is decided first.
		{Name: "target", Mutate: func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "prod" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.PromotionRun]{
		{Name: "status written", Mutate: func(p *appstudio.PromotionRun) { p.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "other"; p.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(p *appstudio.PromotionRun) { p.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionRun]{
		{Name: "valid", Mutate: func(*appstudio.PromotionRun) {}},
		{Name: "no snapshot", Mutate: func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "" }, Want: []apitesting.Want{apitesting.Required("spec.snapshot")}},
		{Name: "no target", Mutate: func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "" },
			Want: []apitesting.Want{apitesting.Required("spec.manualPromotion.targetEnvironment")}},
		{Name: "automated", Mutate: func(p *appstudio.PromotionRun) {
			p.Spec.ManualPromotion.TargetEnvironment, p.Spec.AutomatedPromotion.InitialEnvironment = "", "dev"
		}},
		{Name: "manual and automated", Mutate: func(p *appstudio.PromotionRun) { p.Spec.AutomatedPromotion.InitialEnvironment = "dev" },
			Want: []apitesting.Want{apitesting.Forbidden("spec.automatedPromotion.initialEnvironment")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionRun]{
		{Name: "unchanged", Mutate: func(*appstudio.PromotionRun) {}},
		{Name: "labels", Mutate: func(p *appstudio.PromotionRun) { p.Labels = nil }},
		// A run stands for one promotion: every field of its spec is fixed.
		{Name: "snapshot", Mutate: func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "other" }, Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "application", Mutate: func(p *appstudio.PromotionRun) { p.Spec.Application = "other" }, Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "target", Mutate: func(p *appstudio.PromotionRun) { p.Spec.ManualPromotion.TargetEnvironment = "prod" },
			Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "renamed", Mutate: func(p *appstudio.PromotionRun) { p.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.PromotionRun]{
		{Name: "valid", Mutate: func(p *appstudio.PromotionRun) { p.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(p *appstudio.PromotionRun) { p.Spec.Snapshot = "" }},
		{Name: "unknown state", Mutate: func(p *appstudio.PromotionRun) { p.Status = otherStatus; p.Status.State = "Done" },
			Want: []apitesting.Want{apitesting.NotSupported("status.state")}},
		{Name: "result before completion", Mutate: func(p *appstudio.PromotionRun) { p.Status.State = appstudio.PromotionRunStateActive },
			Want: []apitesting.Want{apitesting.Invalid("status.completionResult")}},
		{Name: "step times", Mutate: func(p *appstudio.PromotionRun) {
			p.Status.EnvironmentStatus[0].StartTime, p.Status.EnvironmentStatus[0].CompletionTime = &earlier, &now
		}},
		{Name: "step completed before it started", Mutate: func(p *appstudio.PromotionRun) {
			p.Status.EnvironmentStatus[0].StartTime, p.Status.EnvironmentStatus[0].CompletionTime = &now, &earlier
		}, Want: []apitesting.Want{apitesting.Invalid("status.environmentStatus[0].completionTime")}},
		{Name: "renamed", Mutate: func(p *appstudio.PromotionRun) { p.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*appstudio.PromotionRun]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.application": "appa", "spec.snapshot": "my-snapshot", "status.state": "Complete"}},
		{Name: "empty", Obj: &appstudio.PromotionRun{}, Want: fields.Set{"spec.application": "", "spec.snapshot": "", "status.state": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.PromotionRun]{
		{Name: "complete", Mutate: func(*appstudio.PromotionRun) {}, Want: []interface{}{"appa-manual-promotion", "appa", "my-snapshot", "staging", "Complete", "Success", "<unknown>"}},
		{Name: "active", Mutate: func(p *appstudio.PromotionRun) { p.Status = otherStatus },
			Want: []interface{}{"appa-manual-promotion", "appa", "my-snapshot", "staging", "Active", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   appstudio.Resource("promotionruns"),
		Singular:   appstudio.Resource("promotionrun"),
		New:        "*appstudio.PromotionRun",
		NewList:    "*appstudio.PromotionRunList",
		Namespaced: true,
		ShortNames: []string{"apr", "promotion"},
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "appa-manual-promotion", "metadata.namespace": "jane",
			"spec.application": "appa", "spec.snapshot": "my-snapshot", "status.state": "Complete"},
		Columns:    []string{"Name", "Application", "Snapshot", "Target", "State", "Result", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
		Status:     true,
	})
}
