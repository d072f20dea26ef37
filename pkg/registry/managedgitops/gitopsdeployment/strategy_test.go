package gitopsdeployment

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

// strategies are built as the storage builds them, with the server's validation options.
func strategies(opts validation.Options) (strategy.Strategy, strategy.StatusStrategy) {
	k := kind(scheme, opts)
	return strategy.New(&k), strategy.NewStatus(&k)
}

// testKind is what the shared table runners need to know of the kind.
var testKind = registrytest.Kind[object, gitops.GitOpsDeploymentStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme, validation.Options{}) },
	StatusOf: func(o object) *gitops.GitOpsDeploymentStatus { return &o.Status },
}

var now = metav1.Now()

// stored is a valid GitOpsDeployment as stored: at generation 3, synced and healthy.
func stored() *gitops.GitOpsDeployment {
	return &gitops.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "jane", ResourceVersion: "1", Generation: 3,
			Labels: map[string]string{"team": "a"}},
		Spec: gitops.GitOpsDeploymentSpec{
			Source: gitops.ApplicationSource{
				RepoURL: "https://github.com/org/repo",
				Path:    "environments/overlays/dev",
			},
			Destination: gitops.ApplicationDestination{Environment: "my-cluster", Namespace: "prod"},
			Type:        gitops.GitOpsDeploymentSpecTypeAutomated,
		},
		Status: gitops.GitOpsDeploymentStatus{
			Sync:   gitops.SyncStatus{Status: gitops.SyncStatusCodeSynced, Revision: "abc"},
			Health: gitops.HealthStatus{Status: gitops.HealthStatusCodeHealthy},
			ReconciledState: gitops.ReconciledState{
				Source: gitops.GitOpsDeploymentSource{RepoURL: "https://github.com/org/repo", Path: "environments/overlays/dev"},
			},
		},
	}
}

var otherStatus = gitops.GitOpsDeploymentStatus{
	Conditions: []gitops.GitOpsDeploymentCondition{{Type: gitops.GitOpsDeploymentConditionErrorOccurred,
		Status: gitops.GitOpsConditionStatusTrue, Reason: gitops.GitOpsDeploymentReasonErrorOccurred, LastTransitionTime: &now}},
	Sync:   gitops.SyncStatus{Status: gitops.SyncStatusCodeOutOfSync},
	Health: gitops.HealthStatus{Status: gitops.HealthStatusCodeDegraded},
}

func TestPrepareForCreate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeployment]{
		// A client cannot create a deployment that claims to be synced.
		{Name: "status sent", Mutate: func(*gitops.GitOpsDeployment) {}},
		{Name: "generation sent", Mutate: func(d *gitops.GitOpsDeployment) { d.Generation = 9; d.Status = gitops.GitOpsDeploymentStatus{} }},
	}
	registrytest.RunPrepareForCreate(t, testKind, cases)
}

func TestPrepareForUpdate(t *testing.T) {
	cases := []registrytest.GenerationCase[*gitops.GitOpsDeployment]{
		{Name: "unchanged", Mutate: func(*gitops.GitOpsDeployment) {}, Want: 3},
		{Name: "finalizer added", Mutate: func(d *gitops.GitOpsDeployment) { d.Finalizers = []string{gitops.GitOpsDeploymentFinalizer} }, Want: 3},
		{Name: "status sent", Mutate: func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }, Want: 3},
		{Name: "target revision", Mutate: func(d *gitops.GitOpsDeployment) { d.Spec.Source.TargetRevision = "v2" }, Want: 4},
		{Name: "sync options", Mutate: func(d *gitops.GitOpsDeployment) {
			d.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue}}
		}, Want: 4},
		{Name: "manual", Mutate: func(d *gitops.GitOpsDeployment) { d.Spec.Type = gitops.GitOpsDeploymentSpecTypeManual }, Want: 4},
	}
	registrytest.RunPrepareForUpdate(t, testKind, cases)
}

func TestPrepareForStatusUpdate(t *testing.T) {
	cases := []registrytest.Mutation[*gitops.GitOpsDeployment]{
		{Name: "status written", Mutate: func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }},
		{Name: "spec sent", Mutate: func(d *gitops.GitOpsDeployment) { d.Spec.Source.Path = "other"; d.Status = otherStatus }},
		{Name: "finalizers sent", Mutate: func(d *gitops.GitOpsDeployment) { d.Finalizers = []string{gitops.GitOpsDeploymentFinalizer} }},
	}
	registrytest.RunPrepareForStatusUpdate(t, testKind, cases)
}

func TestValidate(t *testing.T) {
	fileRepo := func(d *gitops.GitOpsDeployment) { d.Spec.Source.RepoURL = "file:///repos/app" }
	cases := []struct {
		name   string
		opts   validation.Options
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"valid", validation.Options{}, func(*gitops.GitOpsDeployment) {}, nil},
		{"this cluster", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination = gitops.ApplicationDestination{} }, nil},
		{"no path", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Source.Path = "" },
			[]apitesting.Want{apitesting.Required("spec.source.path")}},
		{"no type", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Type = "" }, []apitesting.Want{apitesting.Required("spec.type")}},
		{"cluster without namespace", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination.Namespace = "" },
			[]apitesting.Want{apitesting.Required("spec.destination.namespace")}},
		// The server's options reach the kind's validation.
		{"file repository", validation.Options{}, fileRepo, []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{"file repository, allowed", validation.Options{AllowFileRepositories: true}, fileRepo, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(tc.opts)
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, s.Validate(context.Background(), obj), tc.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	fileRepo := func(d *gitops.GitOpsDeployment) { d.Spec.Source.RepoURL = "file:///repos/app" }
	cases := []struct {
		name   string
		opts   validation.Options
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"unchanged", validation.Options{}, func(*gitops.GitOpsDeployment) {}, nil},
		// Every field of a GitOpsDeployment's spec may change.
		{"source and destination", validation.Options{}, func(d *gitops.GitOpsDeployment) {
			d.Spec.Source = gitops.ApplicationSource{RepoURL: "git@github.com:org/other.git", Path: "x", TargetRevision: "main"}
			d.Spec.Destination = gitops.ApplicationDestination{Namespace: "jane"}
		}, nil},
		{"other namespace on this cluster", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Spec.Destination.Environment = "" },
			[]apitesting.Want{apitesting.Invalid("spec.destination.namespace")}},
		{"file repository", validation.Options{}, fileRepo, []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{"file repository, allowed", validation.Options{AllowFileRepositories: true}, fileRepo, nil},
		{"renamed", validation.Options{}, func(d *gitops.GitOpsDeployment) { d.Name = "other" }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := strategies(tc.opts)
			old := stored()
			obj := stored()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, s.ValidateUpdate(context.Background(), obj, old), tc.want...)
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[*gitops.GitOpsDeployment]{
		{Name: "valid", Mutate: func(d *gitops.GitOpsDeployment) { d.Status = otherStatus }},
		{Name: "spec changed", Mutate: func(d *gitops.GitOpsDeployment) { d.Spec.Type = "" }},
		{Name: "unknown sync status", Mutate: func(d *gitops.GitOpsDeployment) { d.Status.Sync.Status = "InSync" },
			Want: []apitesting.Want{apitesting.NotSupported("status.sync.status")}},
		{Name: "condition without status", Mutate: func(d *gitops.GitOpsDeployment) {
			d.Status = otherStatus
			d.Status.Conditions[0].Status = ""
		}, Want: []apitesting.Want{apitesting.Required("status.conditions[0].status")}},
		{Name: "renamed", Mutate: func(d *gitops.GitOpsDeployment) { d.Name = "other" }, Want: []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[*gitops.GitOpsDeployment]{
		{Name: "full", Obj: stored(), Want: fields.Set{
			"spec.type": "automated", "spec.source.repoURL": "https://github.com/org/repo",
			"spec.destination.environment": "my-cluster", "spec.destination.namespace": "prod",
			"status.sync.status": "Synced", "status.health.status": "Healthy",
		}},
		{Name: "empty", Obj: &gitops.GitOpsDeployment{}, Want: fields.Set{
			"spec.type": "", "spec.source.repoURL": "", "spec.destination.environment": "", "spec.destination.namespace": "",
			"status.sync.status": "", "status.health.status": "",
		}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[*gitops.GitOpsDeployment]{
		{Name: "synced", Mutate: func(*gitops.GitOpsDeployment) {},
			Want: []interface{}{"app", "Synced", "Healthy", "automated", "https://github.com/org/repo", "environments/overlays/dev", "my-cluster", "<unknown>"}},
		{Name: "new, on this cluster", Mutate: func(d *gitops.GitOpsDeployment) {
			d.Status = gitops.GitOpsDeploymentStatus{}
			d.Spec.Destination = gitops.ApplicationDestination{}
		}, Want: []interface{}{"app", "", "", "automated", "https://github.com/org/repo", "environments/overlays/dev", "", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}

func TestNewREST(t *testing.T) {
	r, status, err := NewREST(scheme, registrytest.NoStorage{}, validation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The server's options reach the storage's strategy.
	fileRepo := stored()
	fileRepo.Spec.Source.RepoURL = "file:///repos/app"
	strict, _, err := NewREST(scheme, registrytest.NoStorage{}, validation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lenient, _, err := NewREST(scheme, registrytest.NoStorage{}, validation.Options{AllowFileRepositories: true})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.CheckREST(t, r, status, registrytest.REST{
		Resource:   gitops.Resource("gitopsdeployments"),
		Singular:   gitops.Resource("gitopsdeployment"),
		New:        "*managedgitops.GitOpsDeployment",
		NewList:    "*managedgitops.GitOpsDeploymentList",
		Namespaced: true,
		Categories: []string{"gitops"},
		FieldSelectors: fields.Set{"metadata.name": "app", "metadata.namespace": "jane",
			"spec.type": "automated", "spec.source.repoURL": "https://github.com/org/repo",
			"spec.destination.environment": "my-cluster", "spec.destination.namespace": "prod",
			"status.sync.status": "Synced", "status.health.status": "Healthy"},
		Columns:    []string{"Name", "Sync Status", "Health Status", "Type (wide)", "Repository (wide)", "Path (wide)", "Environment (wide)", "Age"},
		Sample:     stored(),
		APIVersion: fieldpath.APIVersion("managed-gitops.redhat.com/v1alpha1"),
		Status:     true,
	},
		registrytest.Check{Name: "file repository refused", Got: len(strict.CreateStrategy.Validate(context.Background(), fileRepo)), Want: 1},
		registrytest.Check{Name: "file repository allowed", Got: len(lenient.CreateStrategy.Validate(context.Background(), fileRepo)), Want: 0},
	)
}
