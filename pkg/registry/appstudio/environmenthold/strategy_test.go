package environmenthold

import (
	"strings"
	"testing"

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

// testKind is what the shared table runners need to know of the kind, which has no status.
var testKind = registrytest.Kind[object, struct{}]{
	Stored: stored,
	Kind:   func() strategy.Kind { return kind(scheme) },
}

// stored is a valid EnvironmentHold as stored, at generation 3: one a rollback made.
func stored() *appstudio.EnvironmentHold {
	return &appstudio.EnvironmentHold{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: appstudio.EnvironmentHoldSpec{
			Reason:       "Rolled back: the verification Job prod-verify-x7k2 failed",
			Snapshot:     "shop-41",
			PromotionRun: "shop-42.dev-auto",
		},
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*appstudio.EnvironmentHold]{
		{Name: "as sent", Mutate: func(*appstudio.EnvironmentHold) {}},
		{Name: "generation sent", Mutate: func(h *appstudio.EnvironmentHold) { h.Generation = 9 }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*appstudio.EnvironmentHold]{
		{Name: "unchanged", Mutate: func(*appstudio.EnvironmentHold) {}, Want: 3},
		{Name: "label added", Mutate: func(h *appstudio.EnvironmentHold) { h.Labels["tier"] = "gold" }, Want: 3},
		{Name: "reason", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec.Reason = "held for the audit" }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.EnvironmentHold]{
		{Name: "valid", Mutate: func(*appstudio.EnvironmentHold) {}},
		{Name: "made by hand", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec = appstudio.EnvironmentHoldSpec{Reason: "release freeze"} }},
		{Name: "no reason", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec.Reason = "" }, Want: []apitesting.Want{apitesting.Required("spec.reason")}},
		{Name: "reason too long", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec.Reason = strings.Repeat("x", 1025) },
			Want: []apitesting.Want{apitesting.TooLong("spec.reason")}},
		{Name: "dotted name", Mutate: func(h *appstudio.EnvironmentHold) { h.Name = "pro.d" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*appstudio.EnvironmentHold]{
		{Name: "unchanged", Mutate: func(*appstudio.EnvironmentHold) {}},
		{Name: "reason changed", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec.Reason = "held for the audit" }},
		{Name: "no reason", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec.Reason = "" }, Want: []apitesting.Want{apitesting.Required("spec.reason")}},
		{Name: "renamed", Mutate: func(h *appstudio.EnvironmentHold) { h.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*appstudio.EnvironmentHold]{
		{Name: "rollback", Mutate: func(*appstudio.EnvironmentHold) {},
			Want: []interface{}{"prod", "shop-41", "Rolled back: the verification Job prod-verify-x7k2 failed", "<unknown>"}},
		{Name: "by hand", Mutate: func(h *appstudio.EnvironmentHold) { h.Spec = appstudio.EnvironmentHoldSpec{Reason: "release freeze"} },
			Want: []interface{}{"prod", "", "release freeze", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       appstudio.Resource("environmentholds"),
		Singular:       appstudio.Resource("environmenthold"),
		New:            "*appstudio.EnvironmentHold",
		NewList:        "*appstudio.EnvironmentHoldList",
		Namespaced:     true,
		ShortNames:     []string{"hold"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "prod", "metadata.namespace": "jane"},
		Columns:        []string{"Name", "Snapshot", "Reason", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("appstudio.redhat.com/v1alpha1"),
	})
}
