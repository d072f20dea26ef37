package argocdinstance

import (
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
var testKind = registrytest.Kind[object, gitops.ArgoCDInstanceStatus]{
	Stored: stored,
	Kind: func() strategy.Kind {
		return kind(scheme, fleetidentity.Agents{UserPrefix: fleetidentity.DefaultAgentUserPrefix})
	},
	StatusOf: func(o object) *gitops.ArgoCDInstanceStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid ArgoCDInstance as stored: at generation 3, served. It is cluster-scoped.
func stored() *gitops.ArgoCDInstance {
	return &gitops.ArgoCDInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "engine-1", ResourceVersion: "1", Generation: 3, Labels: map[string]string{"team": "a"}},
		Spec:       gitops.ArgoCDInstanceSpec{Cluster: "engine.example.com", Namespace: "gitops-service-argocd", Capacity: 100},
		Status: gitops.ArgoCDInstanceStatus{
			Conditions: []metav1.Condition{{Type: gitops.ArgoCDInstanceConditionReady, Status: metav1.ConditionTrue,
				Reason: "AgentReporting", LastTransitionTime: now}},
			Leader: "agent-0", LastHeartbeatTime: &now, Tenants: 7, Applications: 12,
		},
	}
}

var otherStatus = gitops.ArgoCDInstanceStatus{
	Conditions: []metav1.Condition{{Type: gitops.ArgoCDInstanceConditionReady, Status: metav1.ConditionFalse,
		Reason: "AgentLost", LastTransitionTime: now}},
	Leader: "agent-1", Tenants: 3,
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "status sent", Mutate: func(object) {}},
		{Name: "generation sent", Mutate: func(o object) { o.Generation = 9; o.Status = gitops.ArgoCDInstanceStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[object]{
		{Name: "unchanged", Mutate: func(object) {}, Want: 3},
		{Name: "label added", Mutate: func(o object) { o.Labels["tier"] = "gold" }, Want: 3},
		{Name: "status sent", Mutate: func(o object) { o.Status = otherStatus }, Want: 3},
		{Name: "drained", Mutate: func(o object) { o.Spec.Draining = true }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "status written", Mutate: func(o object) { o.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(o object) { o.Spec.Capacity = 1; o.Status = otherStatus }},
		{Name: "labels sent", Mutate: func(o object) { o.Labels = nil }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(object) {}},
		{Name: "on the API's cluster", Mutate: func(o object) { o.Spec.Cluster = "" }},
		{Name: "name not a DNS label", Mutate: func(o object) { o.Name = "engine.1" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
		{Name: "no namespace", Mutate: func(o object) { o.Spec.Namespace = "" }, Want: []apitesting.Want{apitesting.Required("spec.namespace")}},
		{Name: "invalid namespace", Mutate: func(o object) { o.Spec.Namespace = "Argo_CD" }, Want: []apitesting.Want{apitesting.Invalid("spec.namespace")}},
		{Name: "invalid cluster", Mutate: func(o object) { o.Spec.Cluster = "https://engine" }, Want: []apitesting.Want{apitesting.Invalid("spec.cluster")}},
		{Name: "no capacity", Mutate: func(o object) { o.Spec.Capacity = 0 }, Want: []apitesting.Want{apitesting.Invalid("spec.capacity")}},
		{Name: "namespaced", Mutate: func(o object) { o.Namespace = "jane" }, Want: []apitesting.Want{apitesting.Forbidden("metadata.namespace")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "drained", Mutate: func(o object) { o.Spec.Draining = true }},
		{Name: "capacity lowered", Mutate: func(o object) { o.Spec.Capacity = 5 }},
		{Name: "moved namespace", Mutate: func(o object) { o.Spec.Namespace = "argocd" }, Want: []apitesting.Want{apitesting.Invalid("spec.namespace")}},
		{Name: "moved cluster", Mutate: func(o object) { o.Spec.Cluster = "" }, Want: []apitesting.Want{apitesting.Invalid("spec.cluster")}},
		{Name: "no capacity", Mutate: func(o object) { o.Spec.Capacity = -1 }, Want: []apitesting.Want{apitesting.Invalid("spec.capacity")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(o object) { o.Status = otherStatus }},
		{Name: "negative tenants", Mutate: func(o object) { o.Status.Tenants = -1 }, Want: []apitesting.Want{apitesting.Invalid("status.tenants")}},
		{Name: "negative applications", Mutate: func(o object) { o.Status.Applications = -1 }, Want: []apitesting.Want{apitesting.Invalid("status.applications")}},
		{Name: "condition without reason", Mutate: func(o object) { o.Status.Conditions[0].Reason = "" },
			Want: []apitesting.Want{apitesting.Required("status.conditions[0].reason")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

// An instance's agent reports on its own instance only; anyone else is left to RBAC (the
// placement controller marks an instance whose agent is gone).
func TestValidateStatusUpdateAgent(t *testing.T) {
	k := testKind.Kind()
	for _, c := range []struct {
		user    string
		wantErr bool
	}{
		{fleetidentity.DefaultAgentUserPrefix + "engine-1", false},
		{fleetidentity.DefaultAgentUserPrefix + "engine-2", true},
		{"system:serviceaccount:gitops-service:gitops-controllers", false},
	} {
		old := stored()
		obj := old.DeepCopy()
		obj.Status.Tenants = 8
		ctx := genericapirequest.WithUser(t.Context(), &user.DefaultInfo{Name: c.user})
		if errs := k.ValidateStatusUpdate(ctx, obj, old); (len(errs) > 0) != c.wantErr {
			t.Errorf("%s: errors %v, want errors %v", c.user, errs, c.wantErr)
		}
	}
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[object]{
		{Name: "serving", Obj: stored(), Want: fields.Set{"spec.draining": "false"}},
		{Name: "draining", Obj: &gitops.ArgoCDInstance{Spec: gitops.ArgoCDInstanceSpec{Draining: true}}, Want: fields.Set{"spec.draining": "true"}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[object]{
		{Name: "ready", Mutate: func(object) {},
			Want: []interface{}{"engine-1", "engine.example.com", "gitops-service-argocd", int64(100), int64(7), "false", "True", int64(12), "agent-0", "<unknown>"}},
		{Name: "never reported", Mutate: func(o object) { o.Status = gitops.ArgoCDInstanceStatus{}; o.Spec.Draining = true },
			Want: []interface{}{"engine-1", "engine.example.com", "gitops-service-argocd", int64(100), int64(0), "true", "Unknown", int64(0), "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{}, fleetidentity.Agents{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource: gitops.Resource("argocdinstances"),
		Singular: gitops.Resource("argocdinstance"),
		New:      "*managedgitops.ArgoCDInstance",
		NewList:  "*managedgitops.ArgoCDInstanceList",
		// Instances are the service's: kubectl get gitops must not list them.
		Categories:     nil,
		FieldSelectors: fields.Set{"metadata.name": "engine-1", "spec.draining": "false"},
		Columns:        []string{"Name", "Cluster", "Namespace", "Capacity", "Tenants", "Draining", "Ready", "Applications (wide)", "Leader (wide)", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:         true,
	})
}
