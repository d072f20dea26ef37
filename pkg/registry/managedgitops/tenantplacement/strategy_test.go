package tenantplacement

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, gitops.TenantPlacementStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme, agents) },
	StatusOf: func(o object) *gitops.TenantPlacementStatus { return &o.Status },
}

var now = metav1.Now()

var agents = fleetidentity.Agents{UserPrefix: fleetidentity.DefaultAgentUserPrefix}

// as is a request context of user name.
func as(t *testing.T, name string) context.Context {
	return genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: name})
}

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
	k := kind(scheme, agents)
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

// Each instance's agent changes only the tenants placed on or held by its instance, and moves
// none; the placement controller and admins (any other user) are left to RBAC.
func TestValidateAgent(t *testing.T) {
	const (
		agent1 = fleetidentity.DefaultAgentUserPrefix + "engine-1"
		agent2 = fleetidentity.DefaultAgentUserPrefix + "engine-2"
		agent3 = fleetidentity.DefaultAgentUserPrefix + "engine-3"
	)
	held := stored                                                                    // placed on and held by engine-1
	moving := func() object { o := stored(); o.Spec.Instance = "engine-2"; return o } // placed on engine-2, held by engine-1
	pending := func() object { o := stored(); o.Status.Instance = ""; return o }      // placed on engine-1, held by none
	k := kind(scheme, agents)
	for _, c := range []struct {
		name    string
		user    string
		old     func() object
		mutate  func(object)
		status  bool
		wantErr bool
	}{
		{name: "takes a tenant placed on its instance", user: agent1, old: pending, status: true,
			mutate: func(o object) { o.Status.Instance = "engine-1" }},
		{name: "another instance's agent takes it", user: agent2, old: pending, status: true,
			mutate: func(o object) { o.Status.Message = "waiting" }, wantErr: true},
		{name: "releases a tenant it holds", user: agent1, old: moving, status: true,
			mutate: func(o object) { o.Status.Instance = "" }},
		{name: "the new instance's agent writes a message while waiting", user: agent2, old: moving, status: true,
			mutate: func(o object) { o.Status.Message = "waiting for engine-1" }},
		{name: "the new instance's agent releases the old holder's hold", user: agent2, old: moving, status: true,
			mutate: func(o object) { o.Status.Instance = "" }, wantErr: true},
		{name: "the new instance's agent takes the holder's finalizer off", user: agent2,
			old:    func() object { o := moving(); o.Finalizers = []string{"x/held"}; return o },
			mutate: func(o object) { o.Finalizers = nil }, wantErr: true},
		{name: "the holder keeps its finalizer while the tenant moves", user: agent1, old: moving,
			mutate: func(o object) { o.Finalizers = []string{"x/held"} }},
		{name: "an uninvolved agent releases it", user: agent3, old: moving, status: true,
			mutate: func(o object) { o.Status.Instance = "" }, wantErr: true},
		{name: "keeps its finalizer", user: agent1, old: held,
			mutate: func(o object) { o.Finalizers = []string{"x/held"} }},
		{name: "an uninvolved agent's finalizer", user: agent2, old: held,
			mutate: func(o object) { o.Finalizers = []string{"x/held"} }, wantErr: true},
		{name: "an agent moves its own tenant", user: agent1, old: held,
			mutate: func(o object) { o.Spec.Instance = "engine-2" }, wantErr: true},
		{name: "the placement controller moves it", user: "system:serviceaccount:gitops-service:gitops-controllers", old: held,
			mutate: func(o object) { o.Spec.Instance = "engine-3" }},
		{name: "not an agent: the prefix alone", user: fleetidentity.DefaultAgentUserPrefix, old: held,
			mutate: func(o object) { o.Spec.Instance = "engine-3" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := c.old()
			obj := old.DeepCopy()
			c.mutate(obj)
			validate := k.ValidateUpdate
			if c.status {
				validate = k.ValidateStatusUpdate
			}
			errs := validate(as(t, c.user), obj, old)
			if (len(errs) > 0) != c.wantErr {
				t.Errorf("errors %v, want errors %v", errs, c.wantErr)
			}
		})
	}
	if errs := k.Validate(as(t, agent1), stored()); len(errs) == 0 {
		t.Error("an agent created a placement")
	}
	if errs := k.Validate(as(t, "admin"), stored()); len(errs) > 0 {
		t.Errorf("an admin's placement refused: %v", errs)
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
	r, status, err := NewREST(scheme, registrytest.NoStorage{}, fleetidentity.Agents{})
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
