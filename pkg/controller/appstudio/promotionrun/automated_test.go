package promotionrun

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
)

// automatedRun is an automated run of snap-2 from dev, created at earlier.
func automatedRun(mutate ...func(*appstudiov1alpha1.PromotionRun)) *appstudiov1alpha1.PromotionRun {
	return promotionRun(append([]func(*appstudiov1alpha1.PromotionRun){func(r *appstudiov1alpha1.PromotionRun) {
		r.Name = "snap-2-dev-auto"
		r.Spec.ManualPromotion.TargetEnvironment = ""
		r.Spec.AutomatedPromotion.InitialEnvironment = "dev"
	}}, mutate...)...)
}

// withSteps gives the run steps, each "env:status:step" (status S, P or F), started at started.
func withSteps(steps ...string) func(*appstudiov1alpha1.PromotionRun) {
	return func(r *appstudiov1alpha1.PromotionRun) {
		r.Status.State = appstudiov1alpha1.PromotionRunStateActive
		r.Status.PromotionStartTime = started
		for _, s := range steps {
			var n int32
			parts := strings.Split(s, ":")
			env, st := parts[0], parts[1]
			if _, err := fmt.Sscan(parts[2], &n); err != nil {
				panic(err)
			}
			status := map[string]appstudiov1alpha1.PromotionRunEnvironmentStatusField{
				"S": appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, "P": appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress,
				"F": appstudiov1alpha1.PromotionRunEnvironmentStatusFailed}[st]
			e := appstudiov1alpha1.PromotionRunEnvironmentStatus{Step: n, EnvironmentName: env, Status: status, StartTime: started.DeepCopy()}
			if st != "P" {
				e.CompletionTime = started.DeepCopy()
			}
			r.Status.EnvironmentStatus = append(r.Status.EnvironmentStatus, e)
		}
	}
}

// envBinding is binding() for env, at snap, with one component "api".
func envBinding(env, snap string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b := binding(snap, "api")
	b.Name, b.Spec.Environment = "app-"+env+"-binding", env
	return b
}

// deployedTarget is env's binding at snap-2 with its GitOpsDeployment deployed (or not).
func deployedTarget(env string, deployed bool) target {
	health := healthy
	if !deployed {
		health = degraded
	}
	return target{binding: envBinding(env, "snap-2"), deployments: deployments(deployment("api", synced, health, "new-api"))}
}

var (
	chain = promotiongraph.New([]promotiongraph.Environment{{Name: "dev", Automated: true}, {Name: "staging", Automated: true, Parent: "dev"},
		{Name: "prod", Automated: true, Parent: "staging"}})
	fork = promotiongraph.New([]promotiongraph.Environment{{Name: "dev", Automated: true}, {Name: "eu", Automated: true, Parent: "dev"},
		{Name: "us", Automated: true, Parent: "dev"}, {Name: "perf", Parent: "dev"}})
)

func TestPlanAutomated(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    state
		at   metav1.Time
		// What the plan writes: the run's state and result, its steps as "env:status:step", its
		// active bindings, the bindings written (created or pointed) by Environment, the Events'
		// reasons, and the ErrorOccurred message ("" for none or cleared).
		wantState   appstudiov1alpha1.PromotionRunState
		wantResult  appstudiov1alpha1.PromotionRunCompleteResult
		wantSteps   []string
		wantActive  []string
		wantWrites  []string
		wantEvents  []string
		wantError   string
		wantNoWrite bool
	}{{
		name:      "begins at the initial Environment: its binding is generated",
		s:         state{run: automatedRun(), snapshot: snapshot("api"), graph: chain, targets: map[string]target{"dev": {}}},
		wantState: "Active", wantSteps: []string{"dev:In Progress:1"}, wantActive: []string{"app-dev-generated-binding"},
		wantWrites: []string{"create dev"}, wantEvents: []string{"StepStarted"},
	}, {
		name: "an existing binding is pointed; waiting for the generator",
		s: state{run: automatedRun(), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"dev": {binding: envBinding("dev", "snap-1")}}},
		wantState: "Active", wantSteps: []string{"dev:In Progress:1"}, wantActive: []string{"app-dev-binding"},
		wantWrites: []string{"point dev"}, wantEvents: []string{"StepStarted"},
	}, {
		name: "a step done: it succeeds, and the next level is for the pass its write brings",
		s: state{run: automatedRun(withSteps("dev:P:1")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"dev": deployedTarget("dev", true)}},
		wantState: "Active", wantSteps: []string{"dev:Success:1"}, wantActive: []string{"app-dev-binding"},
		wantEvents: []string{"StepEnded"},
	}, {
		name: "the next level begins, numbered by its depth",
		s: state{run: automatedRun(withSteps("dev:S:1")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"staging": {binding: envBinding("staging", "snap-1")}}},
		wantState: "Active", wantSteps: []string{"dev:Success:1", "staging:In Progress:2"}, wantActive: []string{"app-staging-binding"},
		wantWrites: []string{"point staging"}, wantEvents: []string{"StepStarted"},
	}, {
		name: "waiting for the GitOpsDeployments: Waiting",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"staging": deployedTarget("staging", false)}},
		wantState: "Waiting", wantSteps: []string{"dev:Success:1", "staging:In Progress:2"}, wantActive: []string{"app-staging-binding"},
	}, {
		name: "the last step succeeds: Complete, Success",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:S:2", "prod:P:3")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"prod": deployedTarget("prod", true)}},
		wantState: "Complete", wantResult: "Success", wantSteps: []string{"dev:Success:1", "staging:Success:2", "prod:Success:3"},
		wantActive: []string{"app-prod-binding"}, wantEvents: []string{"StepEnded", "PromotionSucceeded"},
	}, {
		name: "a step times out from its own start: Complete, Failure, nothing below entered",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"staging": deployedTarget("staging", false)}},
		at:        metav1.NewTime(started.Add(Timeout)),
		wantState: "Complete", wantResult: "Failure", wantSteps: []string{"dev:Success:1", "staging:Failed:2"},
		wantActive: []string{"app-staging-binding"}, wantEvents: []string{"StepEnded", "PromotionFailed"},
		wantError: "Step 2 (Environment staging) failed: " + msgTimedOut,
	}, {
		name: "a level's Environments at once, a Manual child never",
		s: state{run: automatedRun(withSteps("dev:S:1")), snapshot: snapshot("api"), graph: fork,
			targets: map[string]target{"eu": {binding: envBinding("eu", "snap-1")}, "us": {}}},
		wantState: "Active", wantSteps: []string{"dev:Success:1", "eu:In Progress:2", "us:In Progress:2"},
		wantActive: []string{"app-eu-binding", "app-us-generated-binding"}, wantWrites: []string{"point eu", "create us"},
		wantEvents: []string{"StepStarted", "StepStarted"},
	}, {
		name: "a step whose binding's pointing record is unreadable is not counted; the run says why, beside a step waiting on its deployments",
		s: state{run: automatedRun(withSteps("dev:S:1", "eu:P:2", "us:P:2")), snapshot: snapshot("api"), graph: fork,
			targets: map[string]target{"eu": func() target {
				t := deployedTarget("eu", true)
				t.binding.Status.GitOpsRepoConditions[0].ObservedGeneration = 0 // application-service's
				t.binding.Annotations = map[string]string{pointingAnnotation: "{garbled"}
				return t
			}(), "us": deployedTarget("us", false)}},
		wantState: "Active", wantSteps: []string{"dev:Success:1", "eu:In Progress:2", "us:In Progress:2"},
		wantActive: []string{"app-eu-binding", "app-us-binding"}, wantEvents: []string{"PointingUnreadable"},
		wantError: "Binding: app-eu-binding has an annotation promotionrun.managed-gitops.redhat.com/pointing that cannot be read " +
			"(not a record: invalid character 'g' looking for beginning of object key string), " +
			"so its GitOps repository commits cannot be told from the previous Snapshot's: they are not counted.",
	}, {
		name: "superseded by the run of a newer Snapshot: its steps in progress fail, saying by which",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), snapshot: snapshot("api"), graph: chain,
			siblings: []*appstudiov1alpha1.PromotionRun{automatedRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.Spec.Snapshot, r.CreationTimestamp = "snap-3-dev-auto", "snap-3", now
			})}, snapshotCreated: map[string]metav1.Time{"snap-2": earlier, "snap-3": started}},
		wantState: "Complete", wantResult: "Failure", wantSteps: []string{"dev:Success:1", "staging:Failed:2"},
		wantEvents: []string{"StepEnded", "Superseded"}, wantError: msgSuperseded("snap-3-dev-auto", "snap-3"),
	}, {
		name: "a run made later for an older Snapshot supersedes nothing",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"staging": deployedTarget("staging", false)},
			siblings: []*appstudiov1alpha1.PromotionRun{automatedRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.Spec.Snapshot, r.CreationTimestamp = "snap-1-dev-auto", "snap-1", now
			})}, snapshotCreated: map[string]metav1.Time{"snap-1": earlier, "snap-2": started}},
		wantState: "Waiting", wantSteps: []string{"dev:Success:1", "staging:In Progress:2"},
	}, {
		name: "a newer Snapshot's run from another initial Environment walks another tree: no supersession",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), snapshot: snapshot("api"), graph: chain,
			targets: map[string]target{"staging": deployedTarget("staging", false)},
			siblings: []*appstudiov1alpha1.PromotionRun{automatedRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.Spec.Snapshot, r.CreationTimestamp = "snap-3-hotfix", "snap-3", now
				r.Spec.AutomatedPromotion.InitialEnvironment = "hotfix"
			})}, snapshotCreated: map[string]metav1.Time{"snap-2": earlier, "snap-3": started}},
		wantState: "Waiting", wantSteps: []string{"dev:Success:1", "staging:In Progress:2"},
	}, {
		name: "a failed step stops the rest of its level",
		s: state{run: automatedRun(withSteps("dev:S:1", "eu:P:2", "us:P:2")), snapshot: snapshot("api"), graph: fork,
			targets: map[string]target{"eu": deployedTarget("eu", false), "us": deployedTarget("us", false)}},
		at:        metav1.NewTime(started.Add(Timeout)),
		wantState: "Complete", wantResult: "Failure", wantSteps: []string{"dev:Success:1", "eu:Failed:2", "us:Failed:2"},
		wantEvents: []string{"StepEnded", "StepEnded", "PromotionFailed"},
		wantError:  "Step 2 (Environment eu) failed: " + msgTimedOut,
	}, {
		name: "a problem is waited on, for a timeout",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2")), graph: chain,
			targets: map[string]target{"staging": deployedTarget("staging", false)}},
		wantSteps: []string{"dev:Success:1", "staging:In Progress:2"}, wantState: "Active",
		wantEvents: []string{"SnapshotNotFound"}, wantError: msgSnapshotMissing("snap-2", "app-staging-binding"),
	}, {
		name: "a problem reported for a timeout ends the run",
		s: state{run: automatedRun(withSteps("dev:S:1", "staging:P:2"), func(r *appstudiov1alpha1.PromotionRun) {
			r.Status.Conditions = errorCondition(msgSnapshotMissing("snap-2", "app-staging-binding"), started)
		}), graph: chain, targets: map[string]target{"staging": deployedTarget("staging", false)}},
		at:        metav1.NewTime(started.Add(Timeout)),
		wantState: "Complete", wantResult: "Failure", wantSteps: []string{"dev:Success:1", "staging:Failed:2"},
		wantEvents: []string{"StepEnded", "PromotionFailed"},
		wantError:  msgSnapshotMissing("snap-2", "app-staging-binding") + " " + msgTimedOut,
	}, {
		name: "a run of the same Snapshot from another root goes side by side",
		s: state{run: automatedRun(), snapshot: snapshot("api"), graph: chain, targets: map[string]target{"dev": {}},
			siblings: []*appstudiov1alpha1.PromotionRun{automatedRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.Spec.AutomatedPromotion.InitialEnvironment, r.CreationTimestamp = "snap-2-eu-auto", "eu", now
			})}},
		wantState: "Active", wantSteps: []string{"dev:In Progress:1"}, wantActive: []string{"app-dev-generated-binding"},
		wantWrites: []string{"create dev"}, wantEvents: []string{"StepStarted"},
	}, {
		name: "an earlier manual run holds it",
		s: state{run: automatedRun(), snapshot: snapshot("api"), graph: chain, targets: map[string]target{"dev": {}},
			siblings: []*appstudiov1alpha1.PromotionRun{promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.CreationTimestamp = "manual", metav1.NewTime(earlier.Add(-time.Second))
			})}},
		wantError: msgActivePromotion, wantEvents: []string{"ActivePromotionExists"},
	}, {
		name: "an initial Environment in a cycle: refused with the Environments named",
		s: state{run: automatedRun(), snapshot: snapshot("api"), graph: promotiongraph.New([]promotiongraph.Environment{
			{Name: "dev", Automated: true, Parent: "prod"}, {Name: "prod", Automated: true, Parent: "dev"}})},
		wantState: "Complete", wantResult: "Failure", wantEvents: []string{"PromotionGraphInvalid"},
		wantError: "Environments dev, prod are each other's parents (a cycle): none can be promoted into automatically",
	}, {
		name:      "an initial Environment that does not exist",
		s:         state{run: automatedRun(), snapshot: snapshot("api"), graph: promotiongraph.New(nil)},
		wantState: "Complete", wantResult: "Failure", wantEvents: []string{"PromotionGraphInvalid"},
		wantError: "Environment dev does not exist",
	}, {
		name:        "a Complete run is left alone",
		s:           state{run: automatedRun(func(r *appstudiov1alpha1.PromotionRun) { r.Status.State = "Complete" }), graph: chain},
		wantNoWrite: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			if !tc.at.IsZero() {
				at = tc.at
			}
			p := planPromotion(tc.s, at)
			if tc.wantNoWrite {
				if p.status != nil || len(p.writes) > 0 {
					t.Fatalf("plan %+v, want nothing", p)
				}
				return
			}
			if p.status == nil {
				t.Fatal("no status written")
			}
			st := p.status
			if st.State != tc.wantState || st.CompletionResult != tc.wantResult {
				t.Errorf("state %q %q, want %q %q", st.State, st.CompletionResult, tc.wantState, tc.wantResult)
			}
			var steps []string
			for _, e := range st.EnvironmentStatus {
				steps = append(steps, fmt.Sprintf("%s:%s:%d", e.EnvironmentName, e.Status, e.Step))
				if e.Status != appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress && e.CompletionTime == nil {
					t.Errorf("step %s ended without a completionTime", e.EnvironmentName)
				}
			}
			if !reflect.DeepEqual(steps, tc.wantSteps) {
				t.Errorf("steps %v, want %v", steps, tc.wantSteps)
			}
			if tc.wantActive != nil && !reflect.DeepEqual(st.ActiveBindings, tc.wantActive) {
				t.Errorf("active bindings %v, want %v", st.ActiveBindings, tc.wantActive)
			}
			var writes []string
			for _, w := range p.writes {
				switch {
				case w.createBinding != nil:
					writes = append(writes, "create "+w.createBinding.Spec.Environment)
				case w.updateBinding != nil:
					writes = append(writes, "point "+w.updateBinding.Spec.Environment)
					if w.updateBinding.Spec.Snapshot != "snap-2" {
						t.Errorf("%s pointed at %s", w.updateBinding.Name, w.updateBinding.Spec.Snapshot)
					}
				}
			}
			if !reflect.DeepEqual(writes, tc.wantWrites) {
				t.Errorf("writes %v, want %v", writes, tc.wantWrites)
			}
			var reasons []string
			for _, e := range p.events {
				reasons = append(reasons, e.reason)
			}
			if !reflect.DeepEqual(reasons, tc.wantEvents) {
				t.Errorf("events %v, want %v", reasons, tc.wantEvents)
			}
			var errMsg string
			for _, c := range st.Conditions {
				if c.Status == appstudiov1alpha1.PromotionRunConditionStatusTrue {
					errMsg = c.Message
				}
			}
			if errMsg != tc.wantError {
				t.Errorf("error %q, want %q", errMsg, tc.wantError)
			}
		})
	}
}
