package gitopsdeployment

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
	t2 = metav1.NewTime(t0.Add(2 * time.Minute))
)

func syncedApp() *argov1alpha1.Application {
	finished := t0
	return &argov1alpha1.Application{Status: argov1alpha1.ApplicationStatus{
		Sync: argov1alpha1.SyncStatus{
			Status:   argov1alpha1.SyncStatusCodeSynced,
			Revision: "abc123",
			ComparedTo: argov1alpha1.ComparedTo{
				Source:      argov1alpha1.ApplicationSource{RepoURL: "file:///repo.git", Path: "env", TargetRevision: "HEAD"},
				Destination: argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "jane"},
			},
		},
		Health: argov1alpha1.HealthStatus{Status: "Healthy"},
		Resources: []argov1alpha1.ResourceStatus{{
			Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "cm",
			Status: argov1alpha1.SyncStatusCodeSynced, Health: &argov1alpha1.HealthStatus{Status: "Healthy"},
			RequiresPruning: true,
		}},
		OperationState: &argov1alpha1.OperationState{
			Operation: argov1alpha1.Operation{
				Sync:        &argov1alpha1.SyncOperation{Revision: "abc123", Prune: true, SyncOptions: argov1alpha1.SyncOptions{"PrunePropagationPolicy=background"}},
				InitiatedBy: argov1alpha1.OperationInitiator{Automated: true},
				Retry:       argov1alpha1.RetryStrategy{Limit: -1},
			},
			Phase:      "Succeeded",
			Message:    "successfully synced (all tasks run)",
			StartedAt:  t0,
			FinishedAt: &finished,
			SyncResult: &argov1alpha1.SyncOperationResult{
				Revision: "abc123",
				Source:   argov1alpha1.ApplicationSource{RepoURL: "file:///repo.git", Path: "env", Chart: "ignored"},
				Resources: argov1alpha1.ResourceResults{{
					Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "cm",
					Status: "Synced", Message: "configmap/cm created", SyncPhase: "Sync",
				}},
			},
		},
	}}
}

func TestComputeStatusCopiesArgoCD(t *testing.T) {
	got, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, syncedApp(), treeRead{}, nil, t1)
	if err != nil {
		t.Fatal(err)
	}
	finished := t0
	want := managedv1alpha1.GitOpsDeploymentStatus{
		Conditions: []managedv1alpha1.GitOpsDeploymentCondition{{
			Type: "ResourcesReady", Status: "True", Reason: "ResourcesReady", Message: "1 resource Synced and Healthy",
			LastProbeTime: t1, LastTransitionTime: &t1,
		}},
		Sync:   managedv1alpha1.SyncStatus{Status: managedv1alpha1.SyncStatusCodeSynced, Revision: "abc123"},
		Health: managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCodeHealthy},
		Resources: []managedv1alpha1.ResourceStatus{{
			Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "cm",
			Status: managedv1alpha1.SyncStatusCodeSynced, Health: &managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCodeHealthy},
		}},
		ReconciledState: managedv1alpha1.ReconciledState{
			Source:      managedv1alpha1.GitOpsDeploymentSource{RepoURL: "file:///repo.git", Path: "env", Branch: "HEAD"},
			Destination: managedv1alpha1.GitOpsDeploymentDestination{Namespace: "jane"},
		},
		OperationState: &managedv1alpha1.OperationState{
			Operation: managedv1alpha1.ApplicationOperation{
				Sync:        &managedv1alpha1.SyncOperation{Revision: "abc123", Prune: true, SyncOptions: managedv1alpha1.SyncOptions{"PrunePropagationPolicy=background"}},
				InitiatedBy: managedv1alpha1.OperationInitiator{Automated: true},
				Retry:       managedv1alpha1.RetryStrategy{Limit: -1},
			},
			Phase:      managedv1alpha1.OperationPhaseSucceeded,
			Message:    "successfully synced (all tasks run)",
			StartedAt:  t0,
			FinishedAt: &finished,
			SyncResult: &managedv1alpha1.SyncOperationResult{
				Revision: "abc123",
				Source:   managedv1alpha1.ApplicationSource{RepoURL: "file:///repo.git", Path: "env"},
				Resources: []managedv1alpha1.ResourceResult{{
					Version: "v1", Kind: "ConfigMap", Namespace: "jane", Name: "cm",
					Status: managedv1alpha1.ResultCodeSynced, Message: "configmap/cm created", SyncPhase: managedv1alpha1.SyncPhaseSync,
				}},
			},
		},
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("status:\n got %+v\nwant %+v", got, want)
	}
}

func TestComputeStatusIsStableWhenNothingChanged(t *testing.T) {
	app := syncedApp()
	app.Status.Conditions = []argov1alpha1.ApplicationCondition{{Type: argov1alpha1.ApplicationConditionSharedResourceWarning, Message: "shared"}}
	first, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, app, treeRead{}, nil, t1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := computeStatus(first, app, treeRead{}, nil, t2)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(first, second) {
		t.Errorf("a second pass over the same Application changed the status (and would cost a write):\n%+v\n%+v", first, second)
	}
}

func TestMirroredConditions(t *testing.T) {
	app := syncedApp()
	app.Status.Conditions = []argov1alpha1.ApplicationCondition{
		{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "repository not found"},
		{Type: "SomethingNew", Message: "not part of the API"},
	}
	st, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, app, treeRead{}, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ComparisonError", Status: "True", Reason: "ComparisonError", Message: "repository not found",
		LastProbeTime: t0, LastTransitionTime: &t0,
	})
	if len(st.Conditions) != 2 {
		t.Errorf("conditions = %+v, want only the mirrored ComparisonError and ResourcesReady", st.Conditions)
	}

	// The message changes: a transition.
	app.Status.Conditions[0].Message = "authentication required"
	st, _ = computeStatus(st, app, treeRead{}, nil, t1)
	wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ComparisonError", Status: "True", Reason: "ComparisonError", Message: "authentication required",
		LastProbeTime: t1, LastTransitionTime: &t1,
	})

	// Argo CD no longer reports it: resolved, once.
	app.Status.Conditions = nil
	st, _ = computeStatus(st, app, treeRead{}, nil, t2)
	resolved := managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ComparisonError", Status: "False", Reason: "ComparisonErrorResolved", LastProbeTime: t2, LastTransitionTime: &t2,
	}
	wantCond(t, st, resolved)
	st, _ = computeStatus(st, app, treeRead{}, nil, metav1.NewTime(t2.Add(time.Hour)))
	wantCond(t, st, resolved)
}

// Argo CD reports one ExcludedResourceWarning per excluded resource; the tenant sees them all,
// and, for Secrets (which the service's instances exclude on the cluster they share), what to
// do instead.
func TestExcludedResourcesInOneCondition(t *testing.T) {
	excluded := func(res string) argov1alpha1.ApplicationCondition {
		return argov1alpha1.ApplicationCondition{Type: argov1alpha1.ApplicationConditionExcludedResourceWarning,
			Message: "Resource " + res + " is excluded in the settings"}
	}
	for _, tc := range []struct {
		name string
		argo []argov1alpha1.ApplicationCondition
		want string
	}{{
		name: "another kind",
		argo: []argov1alpha1.ApplicationCondition{excluded("example.com/Widget w")},
		want: "Resource example.com/Widget w is excluded in the settings",
	}, {
		name: "two Secrets and a ConfigMap's group-less neighbour",
		argo: []argov1alpha1.ApplicationCondition{excluded("/Secret db"), excluded("/Secret api"),
			{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "unrelated"}},
		want: "Resource /Secret db is excluded in the settings; Resource /Secret api is excluded in the settings. " + secretsExcludedHint,
	}, {
		name: "many: the first ten quoted, the rest counted",
		argo: func() []argov1alpha1.ApplicationCondition {
			var conds []argov1alpha1.ApplicationCondition
			for i := 0; i < 12; i++ {
				conds = append(conds, excluded(fmt.Sprintf("example.com/Widget w%d", i)))
			}
			return conds
		}(),
		want: func() string {
			var msgs []string
			for i := 0; i < 10; i++ {
				msgs = append(msgs, fmt.Sprintf("Resource example.com/Widget w%d is excluded in the settings", i))
			}
			return strings.Join(msgs, "; ") + "; and 2 more"
		}(),
	}, {
		// A custom kind named Secret in a group is not a core Secret.
		name: "a Secret kind of another group",
		argo: []argov1alpha1.ApplicationCondition{excluded("vault.example.com/Secret s")},
		want: "Resource vault.example.com/Secret s is excluded in the settings",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			app := syncedApp()
			app.Status.Conditions = tc.argo
			st, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, app, treeRead{}, nil, t0)
			if err != nil {
				t.Fatal(err)
			}
			wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
				Type: "ExcludedResourceWarning", Status: "True", Reason: "ExcludedResourceWarning", Message: tc.want,
				LastProbeTime: t0, LastTransitionTime: &t0,
			})
			// The same report again writes nothing new.
			again, _ := computeStatus(st, app, treeRead{}, nil, t1)
			if !apiequality.Semantic.DeepEqual(again, st) {
				t.Errorf("an unchanged report changed the status:\n%+v\n%+v", st, again)
			}
		})
	}
}

func TestErrorOccurred(t *testing.T) {
	// Success on a deployment that never failed adds nothing.
	st, _ := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, nil, treeRead{}, nil, t0)
	if len(st.Conditions) != 0 {
		t.Fatalf("conditions = %+v, want none", st.Conditions)
	}

	st, _ = computeStatus(st, nil, treeRead{}, &userError{managedv1alpha1.GitOpsDeploymentUserErrorInvalidPathSlash}, t0)
	wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ErrorOccurred", Status: "True", Reason: "ErrorOccurred", Message: "spec.source.path cannot be '/'",
		LastProbeTime: t0, LastTransitionTime: &t0,
	})

	// An internal error never reaches the tenant with its details.
	st, _ = computeStatus(st, nil, treeRead{}, errors.New("Post https://10.0.0.1: dial tcp: connection refused"), t1)
	wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ErrorOccurred", Status: "True", Reason: "ErrorOccurred", Message: "an unknown error occurred",
		LastProbeTime: t1, LastTransitionTime: &t1,
	})
	// The same error again is no change.
	again, _ := computeStatus(st, nil, treeRead{}, errors.New("another internal error"), t2)
	if !apiequality.Semantic.DeepEqual(st, again) {
		t.Errorf("a repeated unknown error changed the status: %+v", again.Conditions)
	}

	st, _ = computeStatus(st, syncedApp(), treeRead{}, nil, t2)
	wantCond(t, st, managedv1alpha1.GitOpsDeploymentCondition{
		Type: "ErrorOccurred", Status: "False", Reason: "ErrorOccurredResolved", LastProbeTime: t2, LastTransitionTime: &t2,
	})
}

func TestConditionsSortedByType(t *testing.T) {
	app := syncedApp()
	app.Status.Conditions = []argov1alpha1.ApplicationCondition{
		{Type: argov1alpha1.ApplicationConditionSyncError, Message: "b"},
		{Type: argov1alpha1.ApplicationConditionComparisonError, Message: "a"},
	}
	st, _ := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, app, treeRead{}, errors.New("x"), t0)
	var types []string
	for _, c := range st.Conditions {
		types = append(types, string(c.Type))
	}
	if want := []string{"ComparisonError", "ErrorOccurred", "ResourcesReady", "SyncError"}; !apiequality.Semantic.DeepEqual(types, want) {
		t.Errorf("condition order = %v, want %v", types, want)
	}
}

func wantCond(t *testing.T, st managedv1alpha1.GitOpsDeploymentStatus, want managedv1alpha1.GitOpsDeploymentCondition) {
	t.Helper()
	got := findCondition(st.Conditions, want.Type)
	if got == nil {
		t.Fatalf("no %s condition in %+v", want.Type, st.Conditions)
	}
	if !apiequality.Semantic.DeepEqual(*got, want) {
		t.Errorf("%s condition:\n got %+v\nwant %+v", want.Type, *got, want)
	}
}

// An Application made again (on the instance a tenant moved to) has nothing to say until Argo
// CD compares it, and then has no operation of its own: the deployment keeps its last sync's
// result, and does not flash Unknown in between.
func TestComputeStatusAcrossAnApplicationMadeAgain(t *testing.T) {
	now := metav1.NewTime(t0.Add(time.Minute))
	before, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, syncedApp(), treeRead{}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	fresh := &argov1alpha1.Application{}
	got, err := computeStatus(before, fresh, treeRead{}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, before) {
		t.Errorf("status changed for an Application not compared yet:\n%+v\nwant\n%+v", got, before)
	}
	adopted := syncedApp()
	adopted.Status.OperationState = nil
	got, err = computeStatus(before, adopted, treeRead{}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.OperationState == nil || !apiequality.Semantic.DeepEqual(got.OperationState, before.OperationState) {
		t.Errorf("operationState %+v, want the last sync's kept", got.OperationState)
	}
	// A deployment that never reported still starts at Unknown.
	first, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, fresh, treeRead{}, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if first.Sync.Status != managedv1alpha1.SyncStatusCodeUnknown || first.OperationState != nil {
		t.Errorf("first status %+v, want Unknown and no operation", first)
	}
}
