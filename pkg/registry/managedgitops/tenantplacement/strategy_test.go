package tenantplacement

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, gitops.TenantPlacementStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.TenantPlacementStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid TenantPlacement as stored, at generation 3: jane placed on and held by
// engine-1. It is cluster-scoped and named after the namespace.
func stored() *gitops.TenantPlacement {
	return &gitops.TenantPlacement{
		ObjectMeta: metav1.ObjectMeta{Name: "jane", ResourceVersion: "1", Generation: 3, Labels: map[string]string{"team": "a"}},
		Spec:       gitops.TenantPlacementSpec{Instance: "engine-1"},
		Status:     gitops.TenantPlacementStatus{Instance: "engine-1", LastTransitionTime: &now},
	}
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "status sent", Mutate: func(object) {}},
		{Name: "generation sent", Mutate: func(o object) { o.Generation = 9; o.Status = gitops.TenantPlacementStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[object]{
		{Name: "unchanged", Mutate: func(object) {}, Want: 3},
		{Name: "status sent", Mutate: func(o object) { o.Status = gitops.TenantPlacementStatus{} }, Want: 3},
		{Name: "moved", Mutate: func(o object) { o.Spec.Instance = "engine-2" }, Want: 4},
		{Name: "pinned", Mutate: func(o object) { o.Spec.Pinned = true }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "released", Mutate: func(o object) { o.Status.Instance = "" }},
		{Name: "spec sent", Mutate: func(o object) { o.Spec.Instance = "engine-2"; o.Status.Instance = "" }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(object) {}},
		{Name: "not placed yet", Mutate: func(o object) { o.Spec.Instance = "" }},
		{Name: "pinned", Mutate: func(o object) { o.Spec.Pinned = true }},
		{Name: "pinned nowhere", Mutate: func(o object) { o.Spec = gitops.TenantPlacementSpec{Pinned: true} },
			Want: []apitesting.Want{apitesting.Required("spec.instance")}},
		{Name: "not a namespace name", Mutate: func(o object) { o.Name = "jane.doe" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "invalid instance", Mutate: func(o object) { o.Spec.Instance = "Engine_1" }, Want: []apitesting.Want{apitesting.Invalid("spec.instance")}},
		{Name: "namespaced", Mutate: func(o object) { o.Namespace = "jane" }, Want: []apitesting.Want{apitesting.Forbidden("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "moved", Mutate: func(o object) { o.Spec.Instance = "engine-2" }},
		{Name: "pinned nowhere", Mutate: func(o object) { o.Spec = gitops.TenantPlacementSpec{Pinned: true} },
			Want: []apitesting.Want{apitesting.Required("spec.instance")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

// The hand-over is decided here: no write can take a tenant from an instance that holds it.
func TestValidateStatusUpdate(t *testing.T) {
	moving := func(o object) { o.Spec.Instance = "engine-2" }
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "released", Mutate: func(o object) { moving(o); o.Status.Instance = "" }},
		{Name: "taken from another instance", Mutate: func(o object) { moving(o); o.Status.Instance = "engine-2" },
			Want: []apitesting.Want{apitesting.Forbidden("status.instance")}},
		{Name: "invalid instance", Mutate: func(o object) { o.Status.Instance = "Engine_1" },
			Want: []apitesting.Want{apitesting.Invalid("status.instance"), apitesting.Forbidden("status.instance")}},
		{Name: "message", Mutate: func(o object) { o.Status.Message = "no instance has room" }},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

// A tenant that nobody holds is taken only by the instance it is placed on.
func TestValidateTake(t *testing.T) {
	k := kind(scheme)
	old := stored()
	old.Status.Instance = ""
	for _, c := range []struct {
		to      string
		wantErr bool
	}{{"engine-1", false}, {"engine-2", true}, {"", false}} {
		obj := old.DeepCopy()
		obj.Status.Instance = c.to
		errs := k.ValidateStatusUpdate(t.Context(), obj, old)
		if (len(errs) > 0) != c.wantErr {
			t.Errorf("taking by %q: errors %v, want errors %v", c.to, errs, c.wantErr)
		}
	}
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[object]{
		{Name: "placed", Obj: stored(), Want: fields.Set{"spec.instance": "engine-1", "status.instance": "engine-1"}},
		{Name: "empty", Obj: &gitops.TenantPlacement{}, Want: fields.Set{"spec.instance": "", "status.instance": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[object]{
		{Name: "placed", Mutate: func(object) {}, Want: []interface{}{"jane", "engine-1", "engine-1", "false", "Placed", "", "<unknown>"}},
		{Name: "moving", Mutate: func(o object) { o.Spec.Instance = "engine-2" },
			Want: []interface{}{"jane", "engine-2", "engine-1", "false", "Moving", "", "<unknown>"}},
		{Name: "pending", Mutate: func(o object) {
			o.Spec = gitops.TenantPlacementSpec{}
			o.Status = gitops.TenantPlacementStatus{Message: "no instance has room"}
		}, Want: []interface{}{"jane", "", "", "false", "Pending", "no instance has room", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource: gitops.Resource("tenantplacements"),
		Singular: gitops.Resource("tenantplacement"),
		New:      "*managedgitops.TenantPlacement",
		NewList:  "*managedgitops.TenantPlacementList",
		// Placements are the service's: kubectl get gitops must not list them.
		Categories:     nil,
		FieldSelectors: fields.Set{"metadata.name": "jane", "spec.instance": "engine-1", "status.instance": "engine-1"},
		Columns:        []string{"Name", "Instance", "Held By", "Pinned", "Phase", "Message (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:         true,
	})
}
