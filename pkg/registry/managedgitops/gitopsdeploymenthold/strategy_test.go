package gitopsdeploymenthold

import (
	"context"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

var testKind = registrytest.Kind[object, gitops.GitOpsDeploymentHoldStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.GitOpsDeploymentHoldStatus { return &o.Status },
}

const sha = "0123456789abcdef0123456789abcdef01234567"

// stored is a valid hold as stored at generation 2: alice rolled web back to a record's commit,
// and the agent put it in effect.
func stored() *gitops.GitOpsDeploymentHold {
	return &gitops.GitOpsDeploymentHold{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", ResourceVersion: "1", Generation: 2,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.GitOpsDeploymentHoldSpec{Revision: sha, DeploymentRecord: "web-1796597202",
			Reason: "v2 breaks checkout", HeldBy: "alice"},
		Status: gitops.GitOpsDeploymentHoldStatus{ObservedGeneration: 2, Holding: true, Message: "Holding at 0123456"},
	}
}

// noUser clears who held: what a create without a user in the request stores.
func noUser(h object) { h.Spec.HeldBy = "" }

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "as sent", Mutate: noUser},
		{Name: "generation sent", Mutate: func(h object) { noUser(h); h.Generation = 9 }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

// Who held is the requesting user, whatever the client sent; an update keeps the stored one.
func TestHeldByFromRequest(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob", UID: "b2"}
	as := func(u user.Info) context.Context { return genericapirequest.WithUser(context.Background(), u) }
	s := strategy.New(func() *strategy.Kind { k := kind(scheme); return &k }())

	forged := stored() // claims to be alice's
	s.PrepareForCreate(as(bob), forged)
	if forged.Spec.HeldBy != "bob" {
		t.Errorf("created by bob: heldBy %q", forged.Spec.HeldBy)
	}
	anonymous := stored()
	s.PrepareForCreate(context.Background(), anonymous)
	if anonymous.Spec.HeldBy != "" {
		t.Errorf("created without a user: heldBy %q, want none", anonymous.Spec.HeldBy)
	}

	updated := stored()
	updated.Spec.HeldBy = "mallory"
	s.PrepareForUpdate(as(bob), updated, stored())
	if !apiequality.Semantic.DeepEqual(updated.Spec, stored().Spec) || updated.Generation != 2 {
		t.Errorf("updated by bob: spec %+v at generation %d, want the stored spec at 2", updated.Spec, updated.Generation)
	}
	if errs := s.ValidateUpdate(as(bob), updated, stored()); len(errs) != 0 {
		t.Errorf("an update that sent another user: %v", errs)
	}
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[object]{
		{Name: "unchanged", Mutate: func(object) {}, Want: 2},
		{Name: "label added", Mutate: func(h object) { h.Labels["tier"] = "gold" }, Want: 2},
		{Name: "heldBy sent", Mutate: func(h object) { h.Spec.HeldBy = "mallory" }, Want: 2},
		{Name: "status sent", Mutate: func(h object) { h.Status.Holding = false }, Want: 2},
		{Name: "revision", Mutate: func(h object) { h.Spec.Revision = "v1.2.0" }, Want: 3},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[object]{
		{Name: "status", Mutate: func(h object) {
			h.Status = gitops.GitOpsDeploymentHoldStatus{ObservedGeneration: 2, Message: "no GitOpsDeployment web"}
		}},
		{Name: "spec sent too", Mutate: func(h object) { h.Spec.Revision = "main"; h.Status.Holding = false }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(object) {}},
		{Name: "revision only", Mutate: func(h object) { h.Spec = gitops.GitOpsDeploymentHoldSpec{Revision: "v1.2.0"} }},
		{Name: "no revision", Mutate: func(h object) { h.Spec.Revision = "" }, Want: []apitesting.Want{apitesting.Required("spec.revision")}},
		{Name: "revision with space", Mutate: func(h object) { h.Spec.Revision = "main --force" }, Want: []apitesting.Want{apitesting.Invalid("spec.revision")}},
		{Name: "revision with newline", Mutate: func(h object) { h.Spec.Revision = sha + "\n" }, Want: []apitesting.Want{apitesting.Invalid("spec.revision")}},
		{Name: "revision too long", Mutate: func(h object) { h.Spec.Revision = strings.Repeat("a", 256) }, Want: []apitesting.Want{apitesting.TooLong("spec.revision")}},
		{Name: "revision at the bound", Mutate: func(h object) { h.Spec.Revision = strings.Repeat("a", 255) }},
		{Name: "releaseOn NewCommit", Mutate: func(h object) { h.Spec.ReleaseOn = gitops.HoldReleaseNewCommit }},
		{Name: "releaseOn Manual", Mutate: func(h object) { h.Spec.ReleaseOn = gitops.HoldReleaseManual }},
		{Name: "releaseOn unknown", Mutate: func(h object) { h.Spec.ReleaseOn = "newcommit" }, Want: []apitesting.Want{apitesting.NotSupported("spec.releaseOn")}},
		{Name: "reason too long", Mutate: func(h object) { h.Spec.Reason = strings.Repeat("é", 1025) }, Want: []apitesting.Want{apitesting.TooLong("spec.reason")}},
		{Name: "reason at the bound", Mutate: func(h object) { h.Spec.Reason = strings.Repeat("é", 1024) }},
		{Name: "bad record name", Mutate: func(h object) { h.Spec.DeploymentRecord = "Web_1" }, Want: []apitesting.Want{apitesting.Invalid("spec.deploymentRecord")}},
		{Name: "bad name", Mutate: func(h object) { h.Name = "Web" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "held elsewhere", Mutate: func(h object) { h.Spec.Revision = "fedcba9"; h.Spec.Reason = "" }},
		{Name: "no revision", Mutate: func(h object) { h.Spec.Revision = "" }, Want: []apitesting.Want{apitesting.Required("spec.revision")}},
		{Name: "renamed", Mutate: func(h object) { h.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "not holding", Mutate: func(h object) { h.Status.Holding = false }},
		{Name: "negative generation", Mutate: func(h object) { h.Status.ObservedGeneration = -1 },
			Want: []apitesting.Want{apitesting.Invalid("status.observedGeneration")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[object]{
		{Name: "commit", Mutate: func(object) {}, Want: []interface{}{"web", "0123456", "web-1796597202", "alice", "<unknown>"}},
		{Name: "tag, no record", Mutate: func(h object) { h.Spec.Revision, h.Spec.DeploymentRecord = "v1.2.0", "" },
			Want: []interface{}{"web", "v1.2.0", "", "alice", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:       gitops.Resource("gitopsdeploymentholds"),
		Singular:       gitops.Resource("gitopsdeploymenthold"),
		New:            "*managedgitops.GitOpsDeploymentHold",
		NewList:        "*managedgitops.GitOpsDeploymentHoldList",
		Namespaced:     true,
		ShortNames:     []string{"gdhold"},
		Categories:     []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "web", "metadata.namespace": "team-a"},
		Columns:        []string{"Name", "Revision", "Record", "HeldBy", "Age"},
		Sample:         stored(),
		APIVersion:     fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:         true,
	})
}
