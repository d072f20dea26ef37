package promotionrun

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

const ns = "tenant"

var (
	started = metav1.NewTime(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	now     = metav1.NewTime(started.Add(time.Minute))
	late    = metav1.NewTime(started.Add(Timeout))
	earlier = metav1.NewTime(started.Add(-time.Hour))
)

const (
	startedText = "2026-01-02T03:00:00Z"
	nowText     = "2026-01-02T03:01:00Z"
)

func promotionRun(mutate ...func(*appstudiov1alpha1.PromotionRun)) *appstudiov1alpha1.PromotionRun {
	r := &appstudiov1alpha1.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "promote", Namespace: ns, UID: "run-uid", CreationTimestamp: earlier},
		Spec: appstudiov1alpha1.PromotionRunSpec{
			Snapshot: "snap-2", Application: "app",
			ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "staging"},
		},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

// underway is a run that pointed its binding at the Snapshot at started.
func underway(r *appstudiov1alpha1.PromotionRun) {
	r.Status = appstudiov1alpha1.PromotionRunStatus{
		State:              appstudiov1alpha1.PromotionRunStateActive,
		ActiveBindings:     []string{"app-staging-binding"},
		PromotionStartTime: started,
		EnvironmentStatus: []appstudiov1alpha1.PromotionRunEnvironmentStatus{{
			Step: 1, EnvironmentName: "staging", Status: appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress,
			DisplayStatus: msgWaitingForDeployments, StartTime: started.DeepCopy(),
		}},
	}
}

// underwayBeforeStepTimes is underway as written before the step had startTime: the time was
// in displayStatus only.
func underwayBeforeStepTimes(r *appstudiov1alpha1.PromotionRun) {
	underway(r)
	r.Status.EnvironmentStatus[0].StartTime = nil
	r.Status.EnvironmentStatus[0].DisplayStatus = msgWaitingForDeployments + " (step started " + startedText + ")"
}

func snapshot(components ...string) *appstudiov1alpha1.Snapshot {
	s := &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "snap-2", Namespace: ns},
		Spec:       appstudiov1alpha1.SnapshotSpec{Application: "app"},
	}
	for _, c := range components {
		s.Spec.Components = append(s.Spec.Components, appstudiov1alpha1.SnapshotComponent{Name: c, ContainerImage: "quay.io/" + c + ":2"})
	}
	return s
}

// binding is the binding of app and staging at snap, with a GitOpsDeployment and a commit of
// generation 3 per component.
func binding(snap string, components ...string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "app-staging-binding", Namespace: ns, Generation: 3, ResourceVersion: "5"},
		Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "staging", Snapshot: snap},
		Status: appstudiov1alpha1.SnapshotEnvironmentBindingStatus{
			GitOpsRepoConditions: []metav1.Condition{{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionTrue, Reason: "OK", ObservedGeneration: 3}},
		},
	}
	for _, c := range components {
		b.Spec.Components = append(b.Spec.Components, appstudiov1alpha1.BindingComponent{Name: c})
		b.Status.GitOpsDeployments = append(b.Status.GitOpsDeployments, appstudiov1alpha1.BindingStatusGitOpsDeployment{
			ComponentName: c, GitOpsDeployment: "gd-" + c,
		})
		b.Status.Components = append(b.Status.Components, appstudiov1alpha1.BindingComponentStatus{
			Name: c, GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{URL: "https://git.example.com/gitops", CommitID: "new-" + c},
		})
	}
	return b
}

func deployment(component string, sync managedv1alpha1.SyncStatusCode, health managedv1alpha1.HealthStatusCode, revision string) *managedv1alpha1.GitOpsDeployment {
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gd-" + component, Namespace: ns, Labels: map[string]string{
			appstudiov1alpha1.ApplicationLabel: "app", appstudiov1alpha1.EnvironmentLabel: "staging", appstudiov1alpha1.ComponentLabel: component,
		}},
		Status: managedv1alpha1.GitOpsDeploymentStatus{
			Sync:   managedv1alpha1.SyncStatus{Status: sync, Revision: revision},
			Health: managedv1alpha1.HealthStatus{Status: health},
		},
	}
}

func deployments(gds ...*managedv1alpha1.GitOpsDeployment) map[string]*managedv1alpha1.GitOpsDeployment {
	m := map[string]*managedv1alpha1.GitOpsDeployment{}
	for _, gd := range gds {
		m[gd.Name] = gd
	}
	return m
}

const (
	synced    = managedv1alpha1.SyncStatusCodeSynced
	outOfSync = managedv1alpha1.SyncStatusCodeOutOfSync
	healthy   = managedv1alpha1.HealthStatusCodeHealthy
	degraded  = managedv1alpha1.HealthStatusCodeProgressing
)

func errorCondition(msg string, at metav1.Time) []appstudiov1alpha1.PromotionRunCondition {
	return []appstudiov1alpha1.PromotionRunCondition{{
		Type: "ErrorOccurred", Status: "True", Reason: "ErrorOccurred", Message: msg, LastProbeTime: at, LastTransitionTime: at.DeepCopy(),
	}}
}

func clearCondition(at metav1.Time) []appstudiov1alpha1.PromotionRunCondition {
	return []appstudiov1alpha1.PromotionRunCondition{{Type: "ErrorOccurred", Status: "False", LastProbeTime: at, LastTransitionTime: at.DeepCopy()}}
}

// environmentStatus is the staging step, started at start and, unless end is zero, ended at end.
func environmentStatus(step int32, status appstudiov1alpha1.PromotionRunEnvironmentStatusField, display string,
	start, end metav1.Time) []appstudiov1alpha1.PromotionRunEnvironmentStatus {
	e := appstudiov1alpha1.PromotionRunEnvironmentStatus{Step: step, EnvironmentName: "staging", Status: status, DisplayStatus: display, StartTime: start.DeepCopy()}
	if !end.IsZero() {
		e.CompletionTime = end.DeepCopy()
	}
	return []appstudiov1alpha1.PromotionRunEnvironmentStatus{e}
}

func inProgressStatus(msg string) appstudiov1alpha1.PromotionRunStatus {
	return appstudiov1alpha1.PromotionRunStatus{
		State:              appstudiov1alpha1.PromotionRunStateActive,
		ActiveBindings:     []string{"app-staging-binding"},
		PromotionStartTime: started,
		EnvironmentStatus:  environmentStatus(1, "In Progress", msg, started, metav1.Time{}),
		Conditions:         clearCondition(now),
	}
}

func waitingStatus(msg string) appstudiov1alpha1.PromotionRunStatus {
	st := inProgressStatus(msg)
	st.State = appstudiov1alpha1.PromotionRunStateWaiting
	return st
}

// pointingOfOld is the record of app-staging-binding, at "old" commits, pointed at snap-2.
func pointingOfOld(marked bool) string {
	rec := `{"snapshot":"snap-2","components":"` + componentsHash(appServiceBinding("", "old", nil, "api").Status.Components) +
		`","images":"` + apiImages("quay.io/api:2") + `"`
	if marked {
		rec += `,"marked":true`
	}
	return rec + "}"
}

var msgUnreadable = "Binding: app-staging-binding has an annotation promotionrun.managed-gitops.redhat.com/pointing that cannot be read " +
	"(not a record: a snapshot and sha256 digests expected), so its GitOps repository commits cannot be told from the previous Snapshot's: they are not counted."

func TestPlanPromotion(t *testing.T) {
	allDeployed := deployments(deployment("api", synced, healthy, "new-api"), deployment("web", synced, healthy, "new-web"))
	for _, tc := range []struct {
		name  string
		state state
		now   metav1.Time
		// want is the plan's status, nil for no write.
		want       *appstudiov1alpha1.PromotionRunStatus
		wantEvents []string
		wantCreate *appstudiov1alpha1.SnapshotEnvironmentBinding
		wantUpdate string // the snapshot the binding is pointed at
		// wantPointing is the pointing annotation of the binding updated, when not "".
		wantPointing string
		// wantMark is the condition of the binding marked before it is pointed.
		wantMark      *metav1.Condition
		wantRecheck   time.Duration
		checkStatus   func(*testing.T, *appstudiov1alpha1.PromotionRunStatus)
		skipWantCheck bool
	}{
		{
			name:  "a deleted run: nothing",
			state: state{},
		},
		{
			name: "a Complete run is ignored, whatever it sees",
			state: state{run: promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.State = appstudiov1alpha1.PromotionRunStateComplete
			}), snapshot: snapshot("api")},
		},
		{
			name: "an earlier run of the application in the namespace that is not Complete: the run waits its turn",
			state: state{run: promotionRun(), siblings: []*appstudiov1alpha1.PromotionRun{promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.CreationTimestamp = "first", metav1.NewTime(earlier.Add(-time.Second))
			})}, snapshot: snapshot("api")},
			want:       &appstudiov1alpha1.PromotionRunStatus{Conditions: errorCondition(msgActivePromotion, now)},
			wantEvents: []string{"Warning ActivePromotionExists PromotionRun first of Application app is still active; only one PromotionRun per Application may be"},
		},
		{
			name: "the same error again: nothing written",
			state: state{run: promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.Conditions = errorCondition(msgActivePromotion, earlier)
			}), siblings: []*appstudiov1alpha1.PromotionRun{promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.CreationTimestamp = "first", metav1.NewTime(earlier.Add(-time.Second))
			})}, snapshot: snapshot("api")},
		},
		{
			name: "created in the same second: the earlier name goes first",
			state: state{run: promotionRun(), siblings: []*appstudiov1alpha1.PromotionRun{promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name = "a-first"
			})}, snapshot: snapshot("api")},
			want:       &appstudiov1alpha1.PromotionRunStatus{Conditions: errorCondition(msgActivePromotion, now)},
			wantEvents: []string{"Warning ActivePromotionExists PromotionRun a-first of Application app is still active; only one PromotionRun per Application may be"},
		},
		{
			name: "later, Complete, another application's or another namespace's runs do not hold the run up",
			state: state{run: promotionRun(), siblings: []*appstudiov1alpha1.PromotionRun{
				promotionRun(func(r *appstudiov1alpha1.PromotionRun) { r.Name, r.CreationTimestamp = "later", now }),
				promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
					r.Name, r.CreationTimestamp, r.Status.State = "done", metav1.NewTime(earlier.Add(-time.Second)), appstudiov1alpha1.PromotionRunStateComplete
				}),
				promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
					r.Name, r.CreationTimestamp, r.Spec.Application = "other-app", metav1.NewTime(earlier.Add(-time.Second)), "other"
				}),
				promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
					r.Name, r.CreationTimestamp, r.Namespace = "other-namespace", metav1.NewTime(earlier.Add(-time.Second)), "elsewhere"
				}),
			}, binding: binding("snap-2", "api"), snapshot: snapshot("api"),
				deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.State != appstudiov1alpha1.PromotionRunStateComplete {
					t.Errorf("status %+v, want the run to proceed", st)
				}
			},
			// The binding was at the Snapshot already, and deployed: done at once.
			wantEvents: []string{
				"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding",
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "fixed bug: an earlier active run of the application in another namespace does not hold the run up",
			state: state{run: promotionRun(), siblings: []*appstudiov1alpha1.PromotionRun{promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Name, r.Namespace, r.CreationTimestamp = "first", "elsewhere", metav1.NewTime(earlier.Add(-time.Second))
			})}, binding: binding("snap-2", "api"), snapshot: snapshot("api"), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultSuccess,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: now,
				EnvironmentStatus: environmentStatus(1, "Success", "All GitOpsDeployments are Synced/Healthy", now, now),
				Conditions:        clearCondition(now),
			},
			wantEvents: []string{
				"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding",
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name:       "no target Environment: the error",
			state:      state{run: promotionRun(func(r *appstudiov1alpha1.PromotionRun) { r.Spec.ManualPromotion.TargetEnvironment = "" }), snapshot: snapshot("api")},
			want:       &appstudiov1alpha1.PromotionRunStatus{Conditions: errorCondition(msgInvalidTarget, now)},
			wantEvents: []string{"Warning InvalidTargetEnvironment Target Environment has invalid value."},
		},
		{
			name:  "no binding: one is generated from the Snapshot's components, at the Snapshot, and the step starts",
			state: state{run: promotionRun(), snapshot: snapshot("api", "web")},
			now:   started,
			wantCreate: &appstudiov1alpha1.SnapshotEnvironmentBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "app-staging-generated-binding", Namespace: ns,
					Labels: map[string]string{"appstudio.application": "app", "appstudio.environment": "staging"},
					// sha256 of "null": it had no status.components; of {"api":"quay.io/api:2","web":"quay.io/web:2"}: the images.
					Annotations: map[string]string{pointingAnnotation: `{"snapshot":"snap-2","components":"74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",` +
						`"images":"06b2be8d232b06208fe2c35385625c7b2d20e7aa2c50a1bdbe2f940c0c37ef8d"}`}},
				Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "staging", Snapshot: "snap-2",
					Components: []appstudiov1alpha1.BindingComponent{{Name: "api"}, {Name: "web"}}},
			},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateActive, ActiveBindings: []string{"app-staging-generated-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "In Progress", msgWaitingForDeployments, started, metav1.Time{}),
				Conditions:        clearCondition(started),
			},
			wantEvents:  []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-generated-binding"},
			wantRecheck: Timeout,
		},
		{
			name:  "no binding and no Snapshot to take its components from: the message, with the binding's name",
			state: state{run: promotionRun()},
			want: &appstudiov1alpha1.PromotionRunStatus{
				Conditions: errorCondition("Snapshot: snap-2 referred in Binding: app-staging-generated-binding does not exist.", now),
			},
			wantEvents: []string{"Warning SnapshotNotFound Snapshot: snap-2 referred in Binding: app-staging-generated-binding does not exist."},
		},
		{
			name:       "no binding and a Snapshot without components: nothing to bind",
			state:      state{run: promotionRun(), snapshot: snapshot()},
			want:       &appstudiov1alpha1.PromotionRunStatus{Conditions: errorCondition("Snapshot: snap-2 has no components to deploy.", now)},
			wantEvents: []string{"Warning SnapshotNotDeployable Snapshot: snap-2 has no components to deploy."},
		},
		{
			name: "the generated name is another application's binding",
			state: state{run: promotionRun(), snapshot: snapshot("api"), occupant: &appstudiov1alpha1.SnapshotEnvironmentBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "app-staging-generated-binding", Namespace: ns},
			}},
			want:       &appstudiov1alpha1.PromotionRunStatus{Conditions: errorCondition("Binding: app-staging-generated-binding exists for another Application or Environment.", now)},
			wantEvents: []string{"Warning BindingNameTaken Binding: app-staging-generated-binding exists for another Application or Environment."},
		},
		{
			name:  "an existing binding is pointed at the Snapshot, and waits for its repository",
			state: state{run: promotionRun(), binding: binding("snap-1", "api"), snapshot: snapshot("api"), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			now:   started,
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateActive, ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "In Progress", msgWaitingForRepository("app-staging-binding", "snap-2"), started, metav1.Time{}),
				Conditions:        clearCondition(started),
			},
			wantUpdate:  "snap-2",
			wantEvents:  []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck: Timeout,
		},
		{
			name: "application-service's binding, pointed and generated again with new commits: Success",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: appServiceBinding("snap-2", "new", pointedFrom("old", false), "api"),
				deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess {
					t.Errorf("status %+v, want Success", st)
				}
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "the defect's guarantee: application-service's binding, pointed, with the previous Snapshot's commits, deployed: waits for the repository",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: appServiceBinding("snap-2", "old", pointedFrom("old", false), "api"),
				deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "pointing an existing binding records the components it had, and marks nothing when the images change",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", nil, "api"), snapshot: snapshot("api"),
				previous: previousSnapshot("api", "quay.io/api:1")},
			now:           started,
			wantUpdate:    "snap-2",
			wantPointing:  pointingOfOld(false),
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "the images of the Snapshot before: the binding is marked before it is pointed",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", nil, "api"), snapshot: snapshot("api"),
				previous: previousSnapshot("api", "quay.io/api:2")},
			now:          started,
			wantUpdate:   "snap-2",
			wantPointing: pointingOfOld(true),
			wantMark: &metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionUnknown, Reason: "SnapshotChanged",
				Message: "Waiting for the GitOps repository to be generated for Snapshot: snap-2", LastTransitionTime: started},
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "the images of the Snapshot before, and a generator that sets observedGeneration: no mark",
			state: state{run: promotionRun(), binding: binding("snap-1", "api"), snapshot: snapshot("api"),
				previous: previousSnapshot("api", "quay.io/api:2")},
			now:           started,
			wantUpdate:    "snap-2",
			wantPointing:  `{"snapshot":"snap-2","components":"` + componentsHash(binding("", "api").Status.Components) + `","images":"` + apiImages("quay.io/api:2") + `"}`,
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "marked and pointed; application-service's same commits and True again: Success",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: appServiceBinding("snap-2", "old", pointedFrom("old", true), "api"),
				deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess {
					t.Errorf("status %+v, want Success", st)
				}
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "marked and pointed, the condition still Unknown: waits for the repository",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-2", "old", pointedFrom("old", true), "api")
				b.Status.GitOpsRepoConditions[0].Status = metav1.ConditionUnknown
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "the previous Snapshot deleted, its images recorded, the same: the binding is marked before it is pointed",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", pointedWith("older", false, "quay.io/api:2"), "api"),
				snapshot: snapshot("api")},
			now:          started,
			wantUpdate:   "snap-2",
			wantPointing: pointingOfOld(true),
			wantMark: &metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionUnknown, Reason: "SnapshotChanged",
				Message: "Waiting for the GitOps repository to be generated for Snapshot: snap-2", LastTransitionTime: started},
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "the previous Snapshot deleted, its images recorded, the same; application-service's no-op rewrite, True again: Success",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"),
				binding:     appServiceBinding("snap-2", "old", pointedWith("old", true, "quay.io/api:2"), "api"),
				deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess {
					t.Errorf("status %+v, want Success", st)
				}
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "the previous Snapshot deleted, its images recorded, others: pointed unmarked",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", pointedWith("older", false, "quay.io/api:1"), "api"),
				snapshot: snapshot("api")},
			now:           started,
			wantUpdate:    "snap-2",
			wantPointing:  pointingOfOld(false),
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "the previous Snapshot deleted, other images, pointed; its commits True and deployed: waits for the repository",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"),
				binding:     appServiceBinding("snap-2", "old", pointedWith("old", false, "quay.io/api:2"), "api"),
				deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "the previous Snapshot deleted, other images, pointed; the new commits True and deployed: Success",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"),
				binding:     appServiceBinding("snap-2", "new", pointedWith("old", false, "quay.io/api:2"), "api"),
				deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultSuccess {
					t.Errorf("status %+v, want Success", st)
				}
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "pointed by the previous version (a record without images), the previous Snapshot there with the same images: marked",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", pointedFrom("older", false), "api"),
				snapshot: snapshot("api"), previous: previousSnapshot("api", "quay.io/api:2")},
			now:          started,
			wantUpdate:   "snap-2",
			wantPointing: pointingOfOld(true),
			wantMark: &metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionUnknown, Reason: "SnapshotChanged",
				Message: "Waiting for the GitOps repository to be generated for Snapshot: snap-2", LastTransitionTime: started},
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "pointed by the previous version, the previous Snapshot deleted: the images before are unknown, so new commits are waited for",
			state: state{run: promotionRun(), binding: appServiceBinding("snap-1", "old", pointedFrom("older", false), "api"),
				snapshot: snapshot("api")},
			now:           started,
			wantUpdate:    "snap-2",
			wantPointing:  pointingOfOld(false),
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "pointed by the previous version while it ran, and taken over: its record is read, the previous Snapshot's commits are not counted",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"),
				binding:     appServiceBinding("snap-2", "old", pointedFrom("old", false), "api"),
				deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "an unreadable record, True and deployed: not counted; the run says why, once, and waits",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-2", "old", nil, "api")
				b.Annotations = map[string]string{pointingAnnotation: `{"snapshot":"snap-2","components":"old"}`}
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want: func() *appstudiov1alpha1.PromotionRunStatus {
				st := inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))
				st.Conditions = errorCondition(msgUnreadable, now)
				return &st
			}(),
			wantEvents:  []string{"Warning PointingUnreadable " + msgUnreadable},
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "an oversized record: the same",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-2", "old", nil, "api")
				b.Annotations = map[string]string{pointingAnnotation: strings.Repeat(" ", maxPointingSize) + pointingOfOld(true)}
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			want: func() *appstudiov1alpha1.PromotionRunStatus {
				st := inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))
				st.Conditions = errorCondition("Binding: app-staging-binding has an annotation promotionrun.managed-gitops.redhat.com/pointing that cannot be read "+
					"(1215 bytes, more than the 1024 of a record), so its GitOps repository commits cannot be told from the previous Snapshot's: they are not counted.", now)
				return &st
			}(),
			wantEvents: []string{"Warning PointingUnreadable Binding: app-staging-binding has an annotation promotionrun.managed-gitops.redhat.com/pointing that cannot be read " +
				"(1215 bytes, more than the 1024 of a record), so its GitOps repository commits cannot be told from the previous Snapshot's: they are not counted."},
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "an unreadable record, reported already: nothing written",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.EnvironmentStatus[0].DisplayStatus = msgWaitingForRepository("app-staging-binding", "snap-2")
				r.Status.Conditions = errorCondition(msgUnreadable, earlier)
			}), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-2", "old", nil, "api")
				b.Annotations = map[string]string{pointingAnnotation: `{"snapshot":"snap-2","components":"old"}`}
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "an unreadable record at the timeout: Failure",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-2", "old", nil, "api")
				b.Annotations = map[string]string{pointingAnnotation: "\x00garbled"}
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "old-api"))},
			now:           late,
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultFailure {
					t.Errorf("status %+v, want Failure", st)
				}
			},
			wantEvents: []string{
				"Warning StepEnded Step 1 (Environment staging) failed: Promotion Failed. Could not be completed in 10 Minutes.",
				"Warning PromotionFailed Promotion Failed. Could not be completed in 10 Minutes.",
			},
		},
		{
			name: "an unreadable record on the binding pointed: replaced, and the previous Snapshot tells the images",
			state: state{run: promotionRun(), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := appServiceBinding("snap-1", "old", nil, "api")
				b.Annotations = map[string]string{pointingAnnotation: "{"}
				return b
			}(), snapshot: snapshot("api"), previous: previousSnapshot("api", "quay.io/api:1")},
			now:           started,
			wantUpdate:    "snap-2",
			wantPointing:  pointingOfOld(false),
			skipWantCheck: true,
			wantEvents:    []string{"Normal StepStarted Step 1 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck:   Timeout,
		},
		{
			name: "the binding changed since the run started: the error",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) { r.Status.ActiveBindings = []string{"old-binding"} }),
				binding: binding("snap-2", "api"), snapshot: snapshot("api")},
			want: func() *appstudiov1alpha1.PromotionRunStatus {
				r := promotionRun(underway)
				r.Status.ActiveBindings = []string{"old-binding"}
				r.Status.Conditions = errorCondition("The binding changed after the PromotionRun first start. The .spec fields of the PromotionRun are immutable, "+
					"and should not be changed after being created. old-binding: old-binding, new-binding: app-staging-binding", now)
				return &r.Status
			}(),
			wantEvents: []string{"Warning BindingChanged The binding changed after the PromotionRun first start. The .spec fields of the PromotionRun are immutable, and should not be changed after being created. old-binding: old-binding, new-binding: app-staging-binding"},
		},
		{
			name:  "the Snapshot is missing: the message, and the binding is left alone",
			state: state{run: promotionRun(), binding: binding("snap-1", "api")},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State:      appstudiov1alpha1.PromotionRunStateActive,
				Conditions: errorCondition("Snapshot: snap-2 referred in Binding: app-staging-binding does not exist.", now),
			},
			wantEvents: []string{"Warning SnapshotNotFound Snapshot: snap-2 referred in Binding: app-staging-binding does not exist."},
		},
		{
			name: "a Snapshot of another application is not deployed",
			state: state{run: promotionRun(), binding: binding("snap-1", "api"), snapshot: func() *appstudiov1alpha1.Snapshot {
				s := snapshot("api")
				s.Spec.Application = "other"
				return s
			}()},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State:      appstudiov1alpha1.PromotionRunStateActive,
				Conditions: errorCondition("Snapshot: snap-2 does not belong to Application: app.", now),
			},
			wantEvents: []string{"Warning SnapshotNotDeployable Snapshot: snap-2 does not belong to Application: app."},
		},
		{
			name: "waiting for the binding to create all of the GitOpsDeployments",
			state: state{run: promotionRun(underway), snapshot: snapshot("api", "web"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := binding("snap-2", "api", "web")
				b.Status.GitOpsDeployments = b.Status.GitOpsDeployments[:1]
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			want:        ptr(inProgressStatus(msgWaitingForDeployments)),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "waiting for application-service to generate the repository for the binding's generation",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := binding("snap-2", "api")
				b.Generation = 4 // pointed at snap-2; the commits are still those of generation 3
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "waiting while application-service reports it failed to generate the repository",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := binding("snap-2", "api")
				b.Status.GitOpsRepoConditions[0].Status = metav1.ConditionFalse
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			want:        ptr(inProgressStatus(msgWaitingForRepository("app-staging-binding", "snap-2"))),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "Synced but not Healthy, OutOfSync though Healthy, Synced and Healthy at the old commit, and missing: all waited for",
			state: state{run: promotionRun(underway), snapshot: snapshot("a", "b", "c", "d", "e"), binding: binding("snap-2", "a", "b", "c", "d", "e"),
				deployments: deployments(deployment("a", synced, degraded, "new-a"), deployment("b", outOfSync, healthy, "new-b"),
					deployment("c", synced, healthy, "old-c"), deployment("e", synced, healthy, "new-e"))},
			want:        ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-a, gd-b, gd-c, gd-d")),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "waiting for a Degraded deployment: its ResourcesReady reason is quoted",
			state: state{run: promotionRun(underway), snapshot: snapshot("api", "web"), binding: binding("snap-2", "api", "web"),
				deployments: deployments(func() *managedv1alpha1.GitOpsDeployment {
					d := deployment("api", synced, degraded, "new-api")
					d.Status.Conditions = []managedv1alpha1.GitOpsDeploymentCondition{{
						Type: managedv1alpha1.GitOpsDeploymentConditionResourcesReady, Status: managedv1alpha1.GitOpsConditionStatusFalse,
						Reason:  managedv1alpha1.GitOpsDeploymentReasonResourcesNotReady,
						Message: `1 of 1 resource not Synced and Healthy: Deployment/api: Degraded: Deployment "api" exceeded its progress deadline`,
					}}
					return d
				}(), deployment("web", outOfSync, healthy, "new-web"))},
			want: ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api, gd-web. " +
				`gd-api: 1 of 1 resource not Synced and Healthy: Deployment/api: Degraded: Deployment "api" exceeded its progress deadline`)),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "fixed bug: OutOfSync though Healthy at the Snapshot's commit is not deployed: Waiting",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: binding("snap-2", "api"),
				deployments: deployments(deployment("api", outOfSync, healthy, "new-api"))},
			want:        ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "Synced and Healthy at the Snapshot's commit after waiting: Waiting becomes Complete/Success",
			state: state{run: promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Status = waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")
			}), snapshot: snapshot("api"), binding: binding("snap-2", "api"), deployments: deployments(deployment("api", synced, healthy, "new-api"))},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultSuccess,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "Success", "All GitOpsDeployments are Synced/Healthy", started, now),
				Conditions:        clearCondition(now),
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "a component without a commit from application-service is waited for",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := binding("snap-2", "api")
				b.Status.Components = nil
				return b
			}(), deployments: deployments(deployment("api", synced, healthy, ""))},
			want:        ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "still waiting, as written: nothing written, the timer set again",
			state: state{run: promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
				r.Status = waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")
				r.Status.Conditions = clearCondition(earlier)
			}), snapshot: snapshot("api"), binding: binding("snap-2", "api"), deployments: deployments(deployment("api", synced, degraded, "new-api"))},
			wantRecheck: 9 * time.Minute,
		},
		{
			name:  "the timeout: Failure, with the message",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: binding("snap-2", "api"), deployments: deployments(deployment("api", synced, degraded, "new-api"))},
			now:   late,
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultFailure,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "Failed", "Promotion Failed. Could not be completed in 10 Minutes.", started, late),
				Conditions:        errorCondition("Promotion Failed. Could not be completed in 10 Minutes.", late),
			},
			wantEvents: []string{
				"Warning StepEnded Step 1 (Environment staging) failed: Promotion Failed. Could not be completed in 10 Minutes.",
				"Warning PromotionFailed Promotion Failed. Could not be completed in 10 Minutes.",
			},
		},
		{
			name: "the timeout covers the wait for the binding's GitOpsDeployments too",
			state: state{run: promotionRun(underway), snapshot: snapshot("api"), binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
				b := binding("snap-2", "api")
				b.Status.GitOpsDeployments = nil
				return b
			}()},
			now:           late,
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || st.CompletionResult != appstudiov1alpha1.PromotionRunCompleteResultFailure {
					t.Errorf("status %+v, want Failure", st)
				}
			},
			wantEvents: []string{
				"Warning StepEnded Step 1 (Environment staging) failed: Promotion Failed. Could not be completed in 10 Minutes.",
				"Warning PromotionFailed Promotion Failed. Could not be completed in 10 Minutes.",
			},
		},
		{
			name:  "every GitOpsDeployment Synced and Healthy at the Snapshot's commit: Success, with the message",
			state: state{run: promotionRun(underway), snapshot: snapshot("api", "web"), binding: binding("snap-2", "api", "web"), deployments: allDeployed},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultSuccess,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "Success", "All GitOpsDeployments are Synced/Healthy", started, now),
				Conditions:        clearCondition(now),
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "success clears an earlier error",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.Conditions = errorCondition("Snapshot: snap-2 referred in Binding: app-staging-binding does not exist.", earlier)
			}), snapshot: snapshot("api", "web"), binding: binding("snap-2", "api", "web"), deployments: allDeployed},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || len(st.Conditions) != 1 || st.Conditions[0].Status != "False" || st.Conditions[0].Message != "" || st.Conditions[0].Reason != "" {
					t.Errorf("conditions %+v, want ErrorOccurred False", st)
				}
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "a step written before startTime existed: it started with the promotion, and displayStatus loses the time it held",
			state: state{run: promotionRun(underwayBeforeStepTimes), snapshot: snapshot("api"), binding: binding("snap-2", "api"),
				deployments: deployments(deployment("api", synced, degraded, "new-api"))},
			want:        ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "a step written before the times existed ends: both times set",
			state: state{run: promotionRun(underwayBeforeStepTimes), snapshot: snapshot("api", "web"), binding: binding("snap-2", "api", "web"),
				deployments: allDeployed},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultSuccess,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "Success", "All GitOpsDeployments are Synced/Healthy", started, now),
				Conditions:        clearCondition(now),
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "a clock behind the one that started the step: the step ends when it started, never before",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.EnvironmentStatus[0].StartTime = ptr(metav1.NewTime(now.Add(time.Second)))
			}), snapshot: snapshot("api", "web"), binding: binding("snap-2", "api", "web"), deployments: allDeployed},
			want: &appstudiov1alpha1.PromotionRunStatus{
				State: appstudiov1alpha1.PromotionRunStateComplete, CompletionResult: appstudiov1alpha1.PromotionRunCompleteResultSuccess,
				ActiveBindings: []string{"app-staging-binding"}, PromotionStartTime: started,
				EnvironmentStatus: environmentStatus(1, "Success", "All GitOpsDeployments are Synced/Healthy",
					metav1.NewTime(now.Add(time.Second)), metav1.NewTime(now.Add(time.Second))),
				Conditions: clearCondition(now),
			},
			wantEvents: []string{
				"Normal StepEnded Step 1 (Environment staging) succeeded: All GitOpsDeployments are Synced/Healthy",
				"Normal PromotionSucceeded Promoted Snapshot snap-2 into Environment staging",
			},
		},
		{
			name: "a step that ended is started again: In Progress, without a completion time",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.State = appstudiov1alpha1.PromotionRunStateWaiting
				r.Status.EnvironmentStatus[0].Status = appstudiov1alpha1.PromotionRunEnvironmentStatusFailed
				r.Status.EnvironmentStatus[0].CompletionTime = now.DeepCopy()
			}), snapshot: snapshot("api"), binding: binding("snap-2", "api"), deployments: deployments(deployment("api", synced, degraded, "new-api"))},
			want:        ptr(waitingStatus("Waiting for following GitOpsDeployments to be Synced/Healthy: gd-api")),
			wantRecheck: 9 * time.Minute,
		},
		{
			name: "a new step is numbered after the highest: the entries are by Environment",
			state: state{run: promotionRun(underway, func(r *appstudiov1alpha1.PromotionRun) {
				r.Status.EnvironmentStatus = []appstudiov1alpha1.PromotionRunEnvironmentStatus{
					{Step: 3, EnvironmentName: "dev", Status: "Success", DisplayStatus: "done"},
					{Step: 1, EnvironmentName: "test", Status: "Success", DisplayStatus: "done"},
				}
			}), snapshot: snapshot("api"), binding: binding("snap-2", "api"), deployments: deployments(deployment("api", synced, degraded, "new-api"))},
			skipWantCheck: true,
			checkStatus: func(t *testing.T, st *appstudiov1alpha1.PromotionRunStatus) {
				if st == nil || len(st.EnvironmentStatus) != 3 || st.EnvironmentStatus[2].Step != 4 || st.EnvironmentStatus[2].EnvironmentName != "staging" {
					t.Fatalf("environmentStatus %+v, want staging as step 4", st)
				}
				// The new step starts now, not when the promotion started; the others keep their times.
				if e := st.EnvironmentStatus[2]; e.StartTime == nil || !e.StartTime.Equal(&now) || e.CompletionTime != nil {
					t.Errorf("step 4 times %v to %v, want started %v", e.StartTime, e.CompletionTime, now)
				}
				if e := st.EnvironmentStatus[0]; e.StartTime != nil || e.CompletionTime != nil {
					t.Errorf("step 3 times %v to %v, want none", e.StartTime, e.CompletionTime)
				}
			},
			wantEvents:  []string{"Normal StepStarted Step 4 started: promoting Snapshot snap-2 into Environment staging through Binding app-staging-binding"},
			wantRecheck: 9 * time.Minute,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := now
			if !tc.now.IsZero() {
				at = tc.now
			}
			p := planPromotion(tc.state, at)
			var w bindingWrite
			if len(p.writes) > 1 {
				t.Fatalf("a manual run writes %d bindings", len(p.writes))
			} else if len(p.writes) == 1 {
				w = p.writes[0]
			}
			if !tc.skipWantCheck && !jsonEqual(p.status, tc.want) {
				t.Errorf("status\n%s\nwant\n%s", toJSON(p.status), toJSON(tc.want))
			}
			if tc.checkStatus != nil {
				tc.checkStatus(t, p.status)
			}
			var events []string
			for _, e := range p.events {
				events = append(events, e.eventType+" "+e.reason+" "+e.message)
			}
			if strings.Join(events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
			if !jsonEqual(w.createBinding, tc.wantCreate) {
				t.Errorf("binding created\n%s\nwant\n%s", toJSON(w.createBinding), toJSON(tc.wantCreate))
			}
			switch {
			case tc.wantUpdate == "" && w.updateBinding != nil:
				t.Errorf("binding updated to %+v", w.updateBinding.Spec)
			case tc.wantUpdate != "" && (w.updateBinding == nil || w.updateBinding.Spec.Snapshot != tc.wantUpdate || w.updateBinding.ResourceVersion != "5"):
				t.Errorf("binding update %+v, want the binding read at snapshot %s", w.updateBinding, tc.wantUpdate)
			}
			if tc.wantPointing != "" && (w.updateBinding == nil || w.updateBinding.Annotations[pointingAnnotation] != tc.wantPointing) {
				t.Errorf("binding updated with annotations %v, want the pointing %s", w.updateBinding.Annotations, tc.wantPointing)
			}
			switch {
			case tc.wantMark == nil && w.markBinding != nil:
				t.Errorf("binding marked: %+v", w.markBinding.Status.GitOpsRepoConditions)
			case tc.wantMark != nil && (w.markBinding == nil || w.markBinding.ResourceVersion != "5" ||
				!jsonEqual(w.markBinding.Status.GitOpsRepoConditions, []metav1.Condition{*tc.wantMark}) ||
				w.markBinding.Spec.Snapshot != tc.state.binding.Spec.Snapshot):
				t.Errorf("binding marked %+v, want the binding read, with %+v", w.markBinding, *tc.wantMark)
			}
			if p.recheckAfter != tc.wantRecheck {
				t.Errorf("recheck after %v, want %v", p.recheckAfter, tc.wantRecheck)
			}
		})
	}
}

// appServiceBinding is binding as application-service writes it: its condition has no
// observedGeneration; the commits are <commits>-<component>. pointing, when not nil, is
// recorded as the binding's pointing at snap, its Components naming the commits the binding
// had then (pointedFrom).
func appServiceBinding(snap, commits string, pointing *pointing, components ...string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b := binding(snap, components...)
	b.Status.GitOpsRepoConditions[0].ObservedGeneration = 0
	b.Status.GitOpsRepoConditions[0].Message = "GitOps repository sync successful"
	for i := range b.Status.Components {
		b.Status.Components[i].GitOpsRepository.CommitID = commits + "-" + b.Status.Components[i].Name
	}
	if pointing != nil {
		pointing.Snapshot = snap
		pointing.Components = componentsHash(appServiceBinding(snap, pointing.Components, nil, components...).Status.Components)
		value, _ := json.Marshal(pointing)
		b.Annotations = map[string]string{pointingAnnotation: string(value)}
	}
	return b
}

// pointedFrom is the record of a pointing of a binding whose commits were <commits>-<component>,
// as written before records had images.
func pointedFrom(commits string, marked bool) *pointing {
	return &pointing{Components: commits, Marked: marked}
}

// pointedWith is pointedFrom with the images recorded: those of the bound component api at image.
func pointedWith(commits string, marked bool, image string) *pointing {
	return &pointing{Components: commits, Images: apiImages(image), Marked: marked}
}

// apiImages is imagesDigest of component api at image.
func apiImages(image string) string {
	return imagesDigest(previousSnapshot("api", image), []appstudiov1alpha1.BindingComponent{{Name: "api"}})
}

func previousSnapshot(component, image string) *appstudiov1alpha1.Snapshot {
	s := snapshot(component)
	s.Name = "snap-1"
	s.Spec.Components[0].ContainerImage = image
	return s
}

func TestRepositoryGenerated(t *testing.T) {
	withAnnotation := func(value string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
		b := appServiceBinding("snap-2", "old", nil, "api")
		b.Annotations = map[string]string{pointingAnnotation: value}
		return b
	}
	oldHash := componentsHash(appServiceBinding("", "old", nil, "api").Status.Components)
	for _, tc := range []struct {
		name    string
		binding *appstudiov1alpha1.SnapshotEnvironmentBinding
		want    bool
		// wantErr: the binding's annotation is no record.
		wantErr bool
	}{
		{name: "no condition", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "new", pointedFrom("old", false), "api")
			b.Status.GitOpsRepoConditions = nil
			return b
		}()},
		{name: "observedGeneration of the binding's generation", binding: binding("snap-2", "api"), want: true},
		{name: "observedGeneration of an earlier generation", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := binding("snap-2", "api")
			b.Generation = 4
			return b
		}()},
		{name: "observedGeneration of the binding's generation, but False", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := binding("snap-2", "api")
			b.Status.GitOpsRepoConditions[0].Status = metav1.ConditionFalse
			return b
		}()},
		{name: "observedGeneration decides, whatever the record says", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "old", pointedFrom("old", false), "api")
			b.Status.GitOpsRepoConditions[0].ObservedGeneration = 3
			return b
		}(), want: true},
		{name: "pointed by a run; components changed since, True", binding: appServiceBinding("snap-2", "new", pointedWith("old", false, "quay.io/api:1"), "api"), want: true},
		{name: "pointed by a run; components as when pointed, True: the previous Snapshot's",
			binding: appServiceBinding("snap-2", "old", pointedWith("old", false, "quay.io/api:1"), "api")},
		{name: "pointed by a run; components changed since, but False: a reconcile of the binding as it was, failing", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "new", pointedFrom("old", false), "api")
			b.Status.GitOpsRepoConditions[0].Status, b.Status.GitOpsRepoConditions[0].Reason = metav1.ConditionFalse, "GenerateError"
			return b
		}()},
		{name: "generated by a run, then given its first components", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "new", nil, "api")
			recordPointing(b, nil, snapshot("api"), false)
			return b
		}(), want: true},
		{name: "generated by a run, with no components yet but True", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "new", nil)
			recordPointing(b, nil, snapshot("api"), false)
			return b
		}()},
		{name: "marked and pointed; True again, same components", binding: appServiceBinding("snap-2", "old", pointedWith("old", true, "quay.io/api:2"), "api"), want: true},
		{name: "marked and pointed; still Unknown", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "old", pointedWith("old", true, "quay.io/api:2"), "api")
			b.Status.GitOpsRepoConditions[0].Status = metav1.ConditionUnknown
			return b
		}()},
		// Records written before they had images, by a run of the previous version under way
		// across the upgrade: read as they were meant.
		{name: "a record without images; components as when pointed: the previous Snapshot's",
			binding: withAnnotation(`{"snapshot":"snap-2","components":"` + oldHash + `"}`)},
		{name: "a record without images; components changed since, True", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-2", "new", nil, "api")
			b.Annotations = map[string]string{pointingAnnotation: `{"snapshot":"snap-2","components":"` + oldHash + `"}`}
			return b
		}(), want: true},
		{name: "a record without images, marked; True again", binding: withAnnotation(`{"snapshot":"snap-2","components":"` + oldHash + `","marked":true}`), want: true},
		{name: "a record of a pointing at another Snapshot: pointed since by someone else, the condition alone", binding: func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-1", "old", pointedFrom("old", false), "api")
			b.Spec.Snapshot = "snap-2"
			return b
		}(), want: true},
		{name: "no record: the condition alone", binding: appServiceBinding("snap-2", "old", nil, "api"), want: true},
		// Unreadable: it may be this pointing's record, so the commits are not counted.
		{name: "an annotation that is not JSON", binding: withAnnotation("snap-2"), wantErr: true},
		{name: "JSON without the components' digest", binding: withAnnotation(`{"snapshot":"snap-2"}`), wantErr: true},
		{name: "a components digest that is not one", binding: withAnnotation(`{"snapshot":"snap-2","components":"old"}`), wantErr: true},
		{name: "an images digest that is not one", binding: withAnnotation(`{"snapshot":"snap-2","components":"` + oldHash + `","images":"quay.io/api:2"}`), wantErr: true},
		{name: "a record of the wrong types", binding: withAnnotation(`{"snapshot":2,"components":["` + oldHash + `"]}`), wantErr: true},
		{name: "a record over the size bound, though well formed", binding: withAnnotation(
			`{"snapshot":"snap-2","components":"` + oldHash + `","marked":true,"padding":"` + strings.Repeat("x", maxPointingSize) + `"}`), wantErr: true},
	} {
		got, err := repositoryGenerated(tc.binding)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: repositoryGenerated = %v, %v; want %v, error: %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestImagesDigest(t *testing.T) {
	api := []appstudiov1alpha1.BindingComponent{{Name: "api"}}
	both := []appstudiov1alpha1.BindingComponent{{Name: "web"}, {Name: "api"}}
	two := snapshot("api", "web")
	// The encoding is a contract between versions: sha256 of the bound images by name, sorted.
	if got, want := imagesDigest(two, both), digest([]byte(`{"api":"quay.io/api:2","web":"quay.io/web:2"}`)); got != want {
		t.Errorf("imagesDigest = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name           string
		previous, next *appstudiov1alpha1.Snapshot
		components     []appstudiov1alpha1.BindingComponent
		same           bool
	}{
		{"the same image", previousSnapshot("api", "quay.io/api:2"), snapshot("api"), api, true},
		{"another image", previousSnapshot("api", "quay.io/api:1"), snapshot("api"), api, false},
		{"the same image of the bound component; another of one not bound", previousSnapshot("api", "quay.io/api:2"), two, api, true},
		{"the same images in another order", snapshot("web", "api"), two, both, true},
		{"a bound component the previous Snapshot lacks", previousSnapshot("api", "quay.io/api:2"), two, both, false},
		{"a bound component neither has", snapshot("api"), snapshot("api"), both, false},
		{"no previous Snapshot", nil, snapshot("api"), api, false},
		{"no component bound", previousSnapshot("api", "quay.io/api:2"), snapshot("api"), nil, false},
	} {
		before, after := imagesDigest(tc.previous, tc.components), imagesDigest(tc.next, tc.components)
		if same := before != "" && before == after; same != tc.same {
			t.Errorf("%s: the same images = %v, want %v", tc.name, same, tc.same)
		}
	}
}

func TestImagesBefore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		binding  *appstudiov1alpha1.SnapshotEnvironmentBinding
		previous *appstudiov1alpha1.Snapshot
		want     string
	}{
		{"recorded, the Snapshot deleted since", appServiceBinding("snap-1", "old", pointedWith("x", false, "quay.io/api:1"), "api"), nil,
			apiImages("quay.io/api:1")},
		{"recorded: the record, not a Snapshot of that name made again since with other images",
			appServiceBinding("snap-1", "old", pointedWith("x", false, "quay.io/api:1"), "api"), previousSnapshot("api", "quay.io/api:2"),
			apiImages("quay.io/api:1")},
		{"a record without images (an earlier version's): the Snapshot", appServiceBinding("snap-1", "old", pointedFrom("x", false), "api"),
			previousSnapshot("api", "quay.io/api:1"), apiImages("quay.io/api:1")},
		{"a record without images, the Snapshot deleted: unknown", appServiceBinding("snap-1", "old", pointedFrom("x", false), "api"), nil, ""},
		{"no record (pointed by someone else): the Snapshot", appServiceBinding("snap-1", "old", nil, "api"),
			previousSnapshot("api", "quay.io/api:1"), apiImages("quay.io/api:1")},
		{"no record, the Snapshot deleted: unknown", appServiceBinding("snap-1", "old", nil, "api"), nil, ""},
		{"a record of another Snapshot: the Snapshot", func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-0", "old", pointedWith("x", false, "quay.io/api:0"), "api")
			b.Spec.Snapshot = "snap-1"
			return b
		}(), previousSnapshot("api", "quay.io/api:1"), apiImages("quay.io/api:1")},
		{"an unreadable record: the Snapshot", func() *appstudiov1alpha1.SnapshotEnvironmentBinding {
			b := appServiceBinding("snap-1", "old", nil, "api")
			b.Annotations = map[string]string{pointingAnnotation: "{"}
			return b
		}(), previousSnapshot("api", "quay.io/api:1"), apiImages("quay.io/api:1")},
	} {
		if got := imagesBefore(tc.binding, tc.previous); got != tc.want {
			t.Errorf("%s: imagesBefore = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMarkedBinding(t *testing.T) {
	want := metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionUnknown, Reason: "SnapshotChanged",
		Message: "Waiting for the GitOps repository to be generated for Snapshot: snap-2", LastTransitionTime: now}
	b := appServiceBinding("snap-1", "old", nil, "api")
	if got := markedBinding(b, "snap-2", now); !jsonEqual(got.Status.GitOpsRepoConditions, []metav1.Condition{want}) {
		t.Errorf("marked %+v", got.Status.GitOpsRepoConditions)
	}
	if b.Status.GitOpsRepoConditions[0].Status != metav1.ConditionTrue {
		t.Error("the binding read was changed")
	}
	// None yet: application-service's.
	b.Status.GitOpsRepoConditions = nil
	if got := markedBinding(b, "snap-2", now); !jsonEqual(got.Status.GitOpsRepoConditions, []metav1.Condition{want}) {
		t.Errorf("marked %+v", got.Status.GitOpsRepoConditions)
	}
	// Another generator's type, last; already Unknown since earlier: it keeps its transition time.
	b.Status.GitOpsRepoConditions = []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue},
		{Type: "Generated", Status: metav1.ConditionUnknown, Reason: "Pending", LastTransitionTime: earlier}}
	got := markedBinding(b, "snap-2", now).Status.GitOpsRepoConditions
	if len(got) != 2 || got[0].Status != metav1.ConditionTrue || got[1].Type != "Generated" || got[1].Reason != "SnapshotChanged" || !got[1].LastTransitionTime.Equal(&earlier) {
		t.Errorf("marked %+v", got)
	}
}

func TestBindingName(t *testing.T) {
	if got := BindingName("App", "Staging"); got != "app-staging-generated-binding" {
		t.Errorf("BindingName = %q", got)
	}
	long := strings.Repeat("a", 200)
	got := BindingName(long, strings.Repeat("e", 40))
	// sha256 of the lower-cased long name, in hex.
	if !strings.HasPrefix(got, "generated-environment-binding-") || len(got) != len("generated-environment-binding-")+64 {
		t.Errorf("BindingName of a name over 250 characters = %q", got)
	}
	if got != BindingName(long, strings.Repeat("e", 40)) || got == BindingName(long, strings.Repeat("f", 40)) {
		t.Error("the hashed name is not a function of the application and Environment")
	}
	// 229 characters + "-generated-binding" = exactly 250: not hashed.
	exact := BindingName(strings.Repeat("a", 220), strings.Repeat("e", 11))
	if len(exact) != 250 || strings.HasPrefix(exact, "generated-environment-binding-") {
		t.Errorf("a name of 250 characters became %q", exact)
	}
}

func TestGeneratedBindingOfLongNames(t *testing.T) {
	run := promotionRun(func(r *appstudiov1alpha1.PromotionRun) {
		r.Spec.Application, r.Spec.ManualPromotion.TargetEnvironment = strings.Repeat("a", 200), strings.Repeat("e", 60)
	})
	s := snapshot("api")
	s.Spec.Application = run.Spec.Application
	p := planPromotion(state{run: run, snapshot: s}, now)
	if len(p.writes) != 1 || p.writes[0].createBinding == nil {
		t.Fatal("no binding generated")
	}
	b := p.writes[0].createBinding
	if b == nil {
		t.Fatal("no binding generated")
	}
	if b.Name != BindingName(run.Spec.Application, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee") || !strings.HasPrefix(b.Name, "generated-environment-binding-") {
		t.Errorf("name %q", b.Name)
	}
	// The application's name is too long for a label value; the Environment's is not.
	if _, ok := b.Labels["appstudio.application"]; ok || b.Labels["appstudio.environment"] != run.Spec.ManualPromotion.TargetEnvironment {
		t.Errorf("labels %v", b.Labels)
	}
}

func ptr[T any](v T) *T { return &v }

func toJSON(v interface{}) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func jsonEqual(a, b interface{}) bool { return toJSON(a) == toJSON(b) }

func TestReasonsOfIsCapped(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	why := map[string]string{"a": "ra", "b": "", "c": "rc", "d": "rd", "e": "re"}
	if got, want := reasonsOf(names, why), ". a: ra; c: rc; d: rd; and 1 more"; got != want {
		t.Errorf("reasonsOf = %q, want %q", got, want)
	}
	if got := reasonsOf(names, map[string]string{}); got != "" {
		t.Errorf("no reasons gave %q", got)
	}
}
