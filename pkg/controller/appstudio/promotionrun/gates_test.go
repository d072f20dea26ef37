package promotionrun

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongate"
)

// stagingGate is the PromotionGate of staging, with entry as the run's entry in its status
// (none when its PromotionRun is "").
func stagingGate(spec appstudiov1alpha1.PromotionGateSpec, entry appstudiov1alpha1.GatedPromotion) *appstudiov1alpha1.PromotionGate {
	g := &appstudiov1alpha1.PromotionGate{ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: ns}, Spec: spec}
	if entry.PromotionRun != "" {
		g.Status.Promotions = []appstudiov1alpha1.GatedPromotion{entry}
	}
	return g
}

// entered is the run's entry in a gate after it entered staging at started, from snap-1.
func entered(mutate ...func(*appstudiov1alpha1.GatedPromotion)) appstudiov1alpha1.GatedPromotion {
	e := appstudiov1alpha1.GatedPromotion{PromotionRun: "snap-2-dev-auto", Snapshot: "snap-2", Phase: appstudiov1alpha1.GatePhaseDeploying,
		PreviousSnapshot: "snap-1", EnteredTime: started.DeepCopy()}
	for _, m := range mutate {
		m(&e)
	}
	return e
}

func healthySince(t metav1.Time) func(*appstudiov1alpha1.GatedPromotion) {
	return func(e *appstudiov1alpha1.GatedPromotion) {
		e.Phase, e.HealthyTime = appstudiov1alpha1.GatePhaseVerifying, t.DeepCopy()
	}
}

func verifying(result string) func(*appstudiov1alpha1.GatedPromotion) {
	return func(e *appstudiov1alpha1.GatedPromotion) {
		e.Verification = &appstudiov1alpha1.VerificationStatus{Job: promotiongate.JobName("snap-2-dev-auto", "run-uid", "staging"), Namespace: ns,
			Logs: "kubectl logs", StartTime: started, Result: result}
	}
}

func approvalBy(user string, decision appstudiov1alpha1.ApprovalDecision) *appstudiov1alpha1.PromotionApproval {
	return &appstudiov1alpha1.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + string(decision), Namespace: ns},
		Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: "snap-2-dev-auto", Environment: "staging", Decision: decision,
			Comment: "because", Username: user}}
}

func verificationJob(condition batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: promotiongate.JobName("snap-2-dev-auto", "run-uid", "staging"), Namespace: ns}}
	if condition != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: condition, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
	}
	return j
}

var (
	twoApprovals = appstudiov1alpha1.PromotionGateSpec{Approvals: &appstudiov1alpha1.ApprovalGate{Required: 2}}
	soak30s      = appstudiov1alpha1.PromotionGateSpec{SoakTime: &metav1.Duration{Duration: 30 * time.Second}}
	verified     = appstudiov1alpha1.PromotionGateSpec{SoakTime: &metav1.Duration{Duration: 30 * time.Second},
		Verification: &appstudiov1alpha1.Verification{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "check", Image: "registry.invalid/check:1"}}}}}}}}
	stagingEnvironment = &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: ns}}
	snap1              = func() *appstudiov1alpha1.Snapshot {
		s := snapshot("api")
		s.Name, s.Spec.Components[0].ContainerImage = "snap-1", "quay.io/api:1"
		return s
	}()
)

// gatedStaging is staging, entered or not (its binding at snap-2 or snap-1), deployed or
// not, behind g.
func gatedStaging(snap string, health managedv1alpha1.HealthStatusCode, g gates) target {
	b := envBinding("staging", snap)
	g.environment = stagingEnvironment
	return target{binding: b, deployments: deployments(deployment("api", synced, health, "new-api")), gates: g}
}

// TestPlanGates runs automated steps into staging, the second level of dev → staging → prod,
// through staging's gates.
func TestPlanGates(t *testing.T) {
	run := automatedRun(withSteps("dev:S:1", "staging:P:2"))
	runWaiting := automatedRun(withSteps("dev:S:1"))
	for _, tc := range []struct {
		name string
		run  *appstudiov1alpha1.PromotionRun
		t    target
		at   metav1.Time
		// The run's state and result, staging's step as "status: displayStatus" (a prefix),
		// the writes (bindings pointed: "point staging at snap-1"; "job <sa>"; "hold <snapshot>"),
		// the gate's entry as "phase: message" (a prefix; "" when none written), and when to
		// look again.
		wantState   appstudiov1alpha1.PromotionRunState
		wantResult  appstudiov1alpha1.PromotionRunCompleteResult
		wantStep    string
		wantWrites  []string
		wantGate    string
		wantRecheck time.Duration
		check       func(t *testing.T, p plan)
	}{{
		name: "waits for approvals before it enters: the binding is not pointed",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{})}),
		wantState: "Active", wantStep: "In Progress: Waiting for approvals: 0 of 2", wantGate: "Waiting: Waiting for approvals: 0 of 2",
	}, {
		name: "one user's two approvals count once",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{}),
			approvals: []*appstudiov1alpha1.PromotionApproval{approvalBy("alice", "Approve"), func() *appstudiov1alpha1.PromotionApproval {
				a := approvalBy("alice", "Approve")
				a.Name = "alice-again"
				return a
			}()}}),
		wantState: "Active", wantStep: "In Progress: Waiting for approvals: 1 of 2 (alice)", wantGate: "Waiting: Waiting for approvals: 1 of 2 (alice)",
	}, {
		name: "two approvals let it in: the entry (and the Snapshot before) is recorded with the pointing",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{}),
			approvals: []*appstudiov1alpha1.PromotionApproval{approvalBy("alice", "Approve"), approvalBy("bob", "Approve")}}),
		wantState: "Active", wantStep: "In Progress: ", wantWrites: []string{"point staging at snap-2"}, wantGate: "Deploying: ",
		wantRecheck: Timeout,
		check: func(t *testing.T, p plan) {
			e, _ := promotiongate.EntryOf(p.gates[0].Status, "snap-2-dev-auto", "run-uid")
			if e.PreviousSnapshot != "snap-1" || e.EnteredTime == nil || !reflect.DeepEqual(e.Approvers, []string{"alice", "bob"}) {
				t.Errorf("entry %+v: want previous snap-1, entered, approvers alice and bob", e)
			}
		},
	}, {
		name: "a rejection fails the step and the run, and nothing is pointed",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{}),
			approvals: []*appstudiov1alpha1.PromotionApproval{approvalBy("alice", "Approve"), approvalBy("bob", "Reject")}}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: Rejected by bob: because", wantGate: "Rejected: Rejected by bob",
	}, {
		name: "a hold keeps it out, gate or not",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{hold: &appstudiov1alpha1.EnvironmentHold{
			ObjectMeta: metav1.ObjectMeta{Name: "staging"}, Spec: appstudiov1alpha1.EnvironmentHoldSpec{Reason: "rolled back"}}}),
		wantState: "Active", wantStep: "In Progress: Held by EnvironmentHold staging: rolled back",
	}, {
		name: "a freeze keeps it out until it expires",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(appstudiov1alpha1.PromotionGateSpec{
			Freezes: []appstudiov1alpha1.Freeze{{Name: "close", Reason: "Quarterly close", Until: metav1.NewTime(now.Add(time.Hour))}}},
			appstudiov1alpha1.GatedPromotion{})}),
		wantState: "Active", wantStep: "In Progress: Frozen by close until 2026-01-02T04:01:00Z: Quarterly close", wantGate: "Waiting: Frozen",
		wantRecheck: time.Hour,
	}, {
		name: "deployed: the soak begins",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(soak30s, entered())}),
		wantState: "Active", wantStep: "In Progress: Soaking until 2026-01-02T03:01:30Z", wantGate: "Verifying: Soaking until",
		wantRecheck: 30 * time.Second,
	}, {
		name: "soaked: it passes and the step succeeds",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(soak30s, entered(healthySince(metav1.NewTime(now.Add(-30*time.Second)))))}),
		wantState: "Active", wantStep: "Success: All GitOpsDeployments are Synced/Healthy; Passed the gates of Environment staging: stayed Healthy for 30s",
		wantGate: "Passed: Passed the gates",
	}, {
		name: "deployed behind a verification: the Job is created, as the deployer",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered())}),
		wantState: "Active", wantStep: "In Progress: Verifying: Job staging-verify-", wantWrites: []string{"job gitops-deployer"},
		wantGate: "Verifying: Verifying: Job", wantRecheck: promotiongate.JobPollInterval,
	}, {
		name: "the Job succeeded but the soak is not over",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying(""))),
			job: verificationJob(batchv1.JobComplete)}),
		wantState: "Active", wantStep: "In Progress: Soaking until", wantGate: "Verifying: Soaking until", wantRecheck: 30 * time.Second,
	}, {
		name: "the Job succeeded and the soak is over",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(started), verifying(""))),
			job: verificationJob(batchv1.JobComplete)}),
		wantState: "Active", wantStep: "Success: ", wantGate: "Passed: Passed the gates of Environment staging: stayed Healthy for 30s, verification Job",
	}, {
		name: "the Job failed: rolled back to the Snapshot before, and held",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying(""))),
			job: verificationJob(batchv1.JobFailed), rollbackTo: snap1}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification Job staging-verify-",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: verification Job",
		check: func(t *testing.T, p plan) {
			msg := p.status.EnvironmentStatus[1].DisplayStatus
			for _, want := range []string{"failed: BackoffLimitExceeded", "rolled back to Snapshot snap-1", "kubectl delete environmenthold staging"} {
				if !strings.Contains(msg, want) {
					t.Errorf("step %q does not say %q", msg, want)
				}
			}
			if len(p.objectEvents) != 1 || p.objectEvents[0].object != stagingEnvironment || p.objectEvents[0].reason != EventRolledBack {
				t.Errorf("events on other objects %+v, want RolledBack on the Environment", p.objectEvents)
			}
		},
	}, {
		name: "the Job timed out: rolled back",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(earlier), verifying(""))),
			job: verificationJob(""), rollbackTo: snap1}),
		at:        metav1.NewTime(started.Add(promotiongate.DefaultVerificationTimeout)),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification Job staging-verify-",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: verification Job",
	}, {
		name: "Degraded while it soaks: rolled back",
		run:  run, t: gatedStaging("snap-2", managedv1alpha1.HealthStatusCodeDegraded, gates{gate: stagingGate(soak30s, entered(healthySince(now))),
			rollbackTo: snap1}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: GitOpsDeployment gd-api became Degraded",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: GitOpsDeployment gd-api became Degraded",
	}, {
		name: "Progressing while it soaks: waited for, the soak goes on",
		run:  run, t: gatedStaging("snap-2", degraded, gates{gate: stagingGate(soak30s, entered(healthySince(now)))}),
		wantState: "Active", wantStep: "In Progress: Soaking until 2026-01-02T03:01:30Z; Waiting for the GitOpsDeployments",
		wantGate: "Verifying: Soaking", wantRecheck: 30 * time.Second,
	}, {
		name: "released from a hold without a gate: the step's time, and its timeout, start now",
		run: automatedRun(withSteps("dev:S:1", "staging:P:2"), func(r *appstudiov1alpha1.PromotionRun) {
			r.Status.EnvironmentStatus[1].StartTime = earlier.DeepCopy()
		}),
		t:         gatedStaging("snap-1", healthy, gates{}),
		wantState: "Active", wantStep: "In Progress: ", wantWrites: []string{"point staging at snap-2"}, wantRecheck: Timeout,
		check: func(t *testing.T, p plan) {
			if st := p.status.EnvironmentStatus[1].StartTime; st == nil || !st.Equal(&now) {
				t.Errorf("step started %v, want now", st)
			}
		},
	}, {
		name: "a rollback recorded but not carried out is carried out again, once",
		run:  run, t: func() target {
			g := gatedStaging("snap-1", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying("Failed"), func(e *appstudiov1alpha1.GatedPromotion) {
				e.Phase, e.Message = appstudiov1alpha1.GatePhaseRolledBack, "verification Job x failed; rolled back to Snapshot snap-1"
			})), rollbackTo: snap1, hold: &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "staging"}}})
			return g
		}(),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification Job x failed; rolled back to Snapshot snap-1",
		// The binding points at snap-1 already; it is entered (the entry says so) and not pointed back at snap-2.
		// The entry gets the run's UID and Application.
		wantGate: "RolledBack: verification Job x failed",
	}, {
		name: "a rollback recorded before the binding was pointed back: pointed back and held now",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying("Failed"), func(e *appstudiov1alpha1.GatedPromotion) {
			e.Phase, e.Message = appstudiov1alpha1.GatePhaseRolledBack, "verification Job x failed; rolled back to Snapshot snap-1"
		})), rollbackTo: snap1}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification Job x failed; rolled back to Snapshot snap-1",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: verification Job x failed",
	}, {
		name: "the entry of an earlier run of the same name is not this run's: it waits at the gate again",
		run:  runWaiting, t: gatedStaging("snap-1", healthy, gates{gate: stagingGate(twoApprovals, entered(func(e *appstudiov1alpha1.GatedPromotion) {
			e.PromotionRunUID = "earlier-uid"
		})), approvals: []*appstudiov1alpha1.PromotionApproval{func() *appstudiov1alpha1.PromotionApproval {
			a := approvalBy("alice", "Approve")
			a.Spec.PromotionRunUID = "earlier-uid"
			return a
		}()}}),
		wantState: "Active", wantStep: "In Progress: Waiting for approvals: 0 of 2", wantGate: "Waiting: Waiting for approvals: 0 of 2",
	}, {
		name: "the Job could not be created: rolled back",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying("Failed"), func(e *appstudiov1alpha1.GatedPromotion) {
			e.Message = "verification Job j could not be created in namespace ns as its deployer: forbidden"
		})), rollbackTo: snap1}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification failed: verification Job j could not be created",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: verification failed",
	}, {
		name: "never Healthy again after it was deployed: rolled back once its gates' time is over",
		run:  run, t: gatedStaging("snap-2", degraded, gates{gate: stagingGate(soak30s, entered(healthySince(metav1.NewTime(now.Add(-promotiongate.ExitTimeout-30*time.Second))))),
			rollbackTo: snap1}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: Snapshot snap-2 did not pass the gates of Environment staging in the 10m30s",
		wantWrites: []string{"point staging at snap-1", "hold snap-1"}, wantGate: "RolledBack: Snapshot snap-2 did not pass",
	}, {
		name: "nothing to roll back to: held all the same",
		run:  run, t: gatedStaging("snap-2", healthy, gates{gate: stagingGate(verified, entered(healthySince(now), verifying(""), func(e *appstudiov1alpha1.GatedPromotion) {
			e.PreviousSnapshot = ""
		})), job: verificationJob(batchv1.JobFailed)}),
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: verification Job", wantWrites: []string{"hold "},
		wantGate: "RolledBack: verification Job",
		check: func(t *testing.T, p plan) {
			if msg := p.status.EnvironmentStatus[1].DisplayStatus; !strings.Contains(msg, "nothing to roll back to") {
				t.Errorf("step %q does not say there is nothing to roll back to", msg)
			}
		},
	}, {
		name: "the deployment timeout counts from the entry, not from the wait for approvals",
		run: automatedRun(withSteps("dev:S:1", "staging:P:2"), func(r *appstudiov1alpha1.PromotionRun) {
			r.Status.EnvironmentStatus[1].StartTime = earlier.DeepCopy()
		}),
		t: gatedStaging("snap-2", degraded, gates{gate: stagingGate(twoApprovals, entered(func(e *appstudiov1alpha1.GatedPromotion) {
			e.EnteredTime = now.DeepCopy()
		}))}),
		wantState: "Waiting", wantStep: "In Progress: Waiting for following GitOpsDeployments", wantGate: "Deploying: Waiting for following",
		wantRecheck: Timeout,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			if !tc.at.IsZero() {
				at = tc.at
			}
			s := state{run: tc.run, snapshot: snapshot("api"), graph: chain, targets: map[string]target{"staging": tc.t}}
			p := planPromotion(s, at)
			if p.status == nil {
				t.Fatal("no status written")
			}
			if p.status.State != tc.wantState || p.status.CompletionResult != tc.wantResult {
				t.Errorf("state %q %q, want %q %q", p.status.State, p.status.CompletionResult, tc.wantState, tc.wantResult)
			}
			var stepText string
			for _, e := range p.status.EnvironmentStatus {
				if e.EnvironmentName == "staging" {
					stepText = fmt.Sprintf("%s: %s", e.Status, e.DisplayStatus)
				}
			}
			if !strings.HasPrefix(stepText, tc.wantStep) {
				t.Errorf("step %q, want %q", stepText, tc.wantStep)
			}
			var writes []string
			for _, w := range p.writes {
				if w.updateBinding != nil {
					writes = append(writes, "point "+w.updateBinding.Spec.Environment+" at "+w.updateBinding.Spec.Snapshot)
				}
			}
			for _, j := range p.jobs {
				writes = append(writes, "job "+j.Spec.Template.Spec.ServiceAccountName)
			}
			for _, h := range p.holds {
				writes = append(writes, "hold "+h.Spec.Snapshot)
			}
			if !reflect.DeepEqual(writes, tc.wantWrites) {
				t.Errorf("writes %v, want %v", writes, tc.wantWrites)
			}
			var gate string
			if len(p.gates) > 0 {
				e, _ := promotiongate.EntryOf(p.gates[0].Status, "snap-2-dev-auto", "run-uid")
				gate = fmt.Sprintf("%s: %s", e.Phase, e.Message)
			}
			if tc.wantGate == "" && gate != "" || !strings.HasPrefix(gate, tc.wantGate) {
				t.Errorf("gate entry %q, want %q", gate, tc.wantGate)
			}
			if p.recheckAfter != tc.wantRecheck {
				t.Errorf("recheck after %v, want %v", p.recheckAfter, tc.wantRecheck)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// TestSupersededStopsGates: a run superseded while a gate holds it ends its entry there.
func TestSupersededStopsGates(t *testing.T) {
	older := automatedRun(withSteps("dev:S:1", "staging:P:2"))
	newer := automatedRun(func(r *appstudiov1alpha1.PromotionRun) {
		r.Name, r.Spec.Snapshot, r.CreationTimestamp = "snap-3-dev-auto", "snap-3", now
	})
	s := state{run: older, snapshot: snapshot("api"), graph: chain, siblings: []*appstudiov1alpha1.PromotionRun{newer},
		snapshotCreated: map[string]metav1.Time{"snap-2": earlier, "snap-3": now},
		targets:         map[string]target{"staging": gatedStaging("snap-2", healthy, gates{gate: stagingGate(soak30s, entered(healthySince(now)))})}}
	p := planPromotion(s, now)
	if len(p.gates) != 1 {
		t.Fatalf("gates written %d, want 1", len(p.gates))
	}
	e, _ := promotiongate.EntryOf(p.gates[0].Status, "snap-2-dev-auto", "run-uid")
	if e.Phase != appstudiov1alpha1.GatePhaseStopped || !strings.HasPrefix(e.Message, "Superseded by PromotionRun snap-3-dev-auto") || e.CompletionTime == nil {
		t.Errorf("entry %+v, want Stopped, superseded, with a completion time", e)
	}
}

// TestPlanManualGates: a manual run passes its Environment's gates as an automated step does,
// but for a hold.
func TestPlanManualGates(t *testing.T) {
	manualEntered := func(mutate ...func(*appstudiov1alpha1.GatedPromotion)) appstudiov1alpha1.GatedPromotion {
		e := entered(mutate...)
		e.PromotionRun = "promote"
		return e
	}
	for _, tc := range []struct {
		name       string
		run        *appstudiov1alpha1.PromotionRun
		s          func(*state)
		wantState  appstudiov1alpha1.PromotionRunState
		wantResult appstudiov1alpha1.PromotionRunCompleteResult
		wantStep   string
		wantWrites int
	}{{
		name: "waits for approvals: nothing pointed",
		run:  promotionRun(),
		s: func(s *state) {
			s.binding = envBinding("staging", "snap-1")
			s.gates = gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{})}
		},
		wantState: "Active", wantStep: "In Progress: Waiting for approvals: 0 of 2",
	}, {
		name: "a hold does not keep a person out",
		run:  promotionRun(),
		s: func(s *state) {
			s.binding = envBinding("staging", "snap-1")
			s.gates = gates{hold: &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "staging"}}}
		},
		wantState: "Active", wantStep: "In Progress: ", wantWrites: 1,
	}, {
		name: "rejected: the run fails",
		run:  promotionRun(),
		s: func(s *state) {
			s.binding = envBinding("staging", "snap-1")
			a := approvalBy("bob", "Reject")
			a.Spec.PromotionRun = "promote"
			s.gates = gates{gate: stagingGate(twoApprovals, appstudiov1alpha1.GatedPromotion{}), approvals: []*appstudiov1alpha1.PromotionApproval{a}}
		},
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: Rejected by bob: because",
	}, {
		name: "deployed behind a soak: it soaks before it succeeds",
		run:  promotionRun(underway),
		s: func(s *state) {
			s.binding = envBinding("staging", "snap-2")
			s.deployments = deployments(deployment("api", synced, healthy, "new-api"))
			s.gates = gates{gate: stagingGate(soak30s, manualEntered())}
		},
		wantState: "Active", wantStep: "In Progress: Soaking until",
	}, {
		name: "Degraded while it soaks: rolled back, the run fails",
		run:  promotionRun(underway),
		s: func(s *state) {
			s.binding = envBinding("staging", "snap-2")
			s.deployments = deployments(deployment("api", synced, managedv1alpha1.HealthStatusCodeDegraded, "new-api"))
			s.gates = gates{gate: stagingGate(soak30s, manualEntered(healthySince(now))), rollbackTo: snap1, environment: stagingEnvironment}
		},
		wantState: "Complete", wantResult: "Failure", wantStep: "Failed: GitOpsDeployment gd-api became Degraded", wantWrites: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := state{run: tc.run, snapshot: snapshot("api")}
			tc.s(&s)
			p := planPromotion(s, now)
			if p.status == nil {
				t.Fatal("no status written")
			}
			if p.status.State != tc.wantState || p.status.CompletionResult != tc.wantResult {
				t.Errorf("state %q %q, want %q %q", p.status.State, p.status.CompletionResult, tc.wantState, tc.wantResult)
			}
			e := p.status.EnvironmentStatus[len(p.status.EnvironmentStatus)-1]
			if got := fmt.Sprintf("%s: %s", e.Status, e.DisplayStatus); !strings.HasPrefix(got, tc.wantStep) {
				t.Errorf("step %q, want %q", got, tc.wantStep)
			}
			n := 0
			for _, w := range p.writes {
				if w.createBinding != nil || w.updateBinding != nil {
					n++
				}
			}
			if n != tc.wantWrites {
				t.Errorf("%d binding writes, want %d", n, tc.wantWrites)
			}
		})
	}
}
