package promotionrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Timeout is how long a promotion may take from the moment its binding is pointed at the
// Snapshot (PromotionRunTimeOutLimit of the original).
const Timeout = 10 * time.Minute

// The labels of a generated binding, as the original service and application-service set them.
const (
	bindingApplicationLabel = "appstudio.application"
	bindingEnvironmentLabel = "appstudio.environment"
)

// The messages of the PromotionRun's status, as the original service wrote them.
const (
	msgActivePromotion       = "Error occurred while checking for existing active promotions."
	msgInvalidTarget         = "Target Environment has invalid value."
	msgWaitingForDeployments = "Waiting for the environment binding to create all of the expected GitOpsDeployments."
	msgSucceeded             = "All GitOpsDeployments are Synced/Healthy"
)

var msgTimedOut = fmt.Sprintf("Promotion Failed. Could not be completed in %d Minutes.", int(Timeout/time.Minute))

func msgBindingChanged(old, binding string) string {
	return "The binding changed after the PromotionRun first start. The .spec fields of the PromotionRun are immutable, " +
		"and should not be changed after being created. old-binding: " + old + ", new-binding: " + binding
}

func msgSnapshotMissing(snapshot, binding string) string {
	return "Snapshot: " + snapshot + " referred in Binding: " + binding + " does not exist."
}

func msgWaitingFor(deployments []string) string {
	return "Waiting for following GitOpsDeployments to be Synced/Healthy: " + strings.Join(deployments, ", ")
}

// Messages of rules the original did not have.

// maxDeploymentReasons is how many GitOpsDeployments' reasons a step's displayStatus quotes.
const maxDeploymentReasons = 3

// reasonsOf adds, to the original's list of GitOpsDeployments waited for, why each is not yet
// Synced and Healthy where its ResourcesReady condition says: ". web-dev: 1 of 2 resources not
// Synced and Healthy: Deployment/web: Degraded: …".
func reasonsOf(names []string, why map[string]string) string {
	var out []string
	for _, n := range names {
		if why[n] != "" {
			out = append(out, n+": "+why[n])
		}
	}
	if len(out) == 0 {
		return ""
	}
	return framework.TruncateMessage(". "+framework.JoinMessages(out, maxDeploymentReasons), maxReasonsLength)
}

// maxReasonsLength bounds what reasonsOf adds to a step's displayStatus.
const maxReasonsLength = 2048

func msgSnapshotOfOtherApplication(snapshot, application string) string {
	return "Snapshot: " + snapshot + " does not belong to Application: " + application + "."
}

func msgSnapshotWithoutComponents(snapshot string) string {
	return "Snapshot: " + snapshot + " has no components to deploy."
}

func msgBindingNameTaken(binding string) string {
	return "Binding: " + binding + " exists for another Application or Environment."
}

func msgWaitingForRepository(binding, snapshot string) string {
	return "Waiting for the GitOps repository of Binding: " + binding + " to be generated for Snapshot: " + snapshot + "."
}

func msgPointingUnreadable(binding string, err error) string {
	return "Binding: " + binding + " has an annotation " + pointingAnnotation + " that cannot be read (" + err.Error() +
		"), so its GitOps repository commits cannot be told from the previous Snapshot's: they are not counted."
}

// Event reasons. Problems are Warnings.
const (
	EventBindingCreated        = "BindingCreated"
	EventBindingUpdated        = "BindingUpdated"
	EventBindingCreateFailed   = "BindingCreateFailed"
	EventBindingUpdateFailed   = "BindingUpdateFailed"
	EventStepStarted           = "StepStarted"
	EventStepEnded             = "StepEnded"
	EventPromotionSucceeded    = "PromotionSucceeded"
	EventPromotionFailed       = "PromotionFailed"
	EventActivePromotionExists = "ActivePromotionExists"
	EventInvalidTarget         = "InvalidTargetEnvironment"
	EventBindingChanged        = "BindingChanged"
	EventBindingNameTaken      = "BindingNameTaken"
	EventSnapshotNotFound      = "SnapshotNotFound"
	EventSnapshotNotDeployable = "SnapshotNotDeployable"
	EventPointingUnreadable    = "PointingUnreadable"
)

// BindingName is the name of the SnapshotEnvironmentBinding a PromotionRun generates for
// application and environment when there is none.
func BindingName(application, environment string) string {
	name := strings.ToLower(application + "-" + environment + "-generated-binding")
	if len(name) > 250 {
		sum := sha256.Sum256([]byte(name))
		name = "generated-environment-binding-" + hex.EncodeToString(sum[:])
	}
	return name
}

// target is what the controller sees of the Environment a step promotes into.
type target struct {
	binding, occupant *appstudiov1alpha1.SnapshotEnvironmentBinding
	previous          *appstudiov1alpha1.Snapshot
	deployments       map[string]*managedv1alpha1.GitOpsDeployment
	// gates are the Environment's gates, for an automated run.
	gates gates
}

// target is the manual run's Environment.
func (s state) target() target {
	return target{binding: s.binding, occupant: s.occupant, previous: s.previous, deployments: s.deployments, gates: s.gates}
}

// state is what the controller sees of one PromotionRun key.
type state struct {
	// run is nil once the PromotionRun is gone.
	run *appstudiov1alpha1.PromotionRun
	// siblings are the other PromotionRuns of run's namespace and application.
	siblings []*appstudiov1alpha1.PromotionRun
	// binding is the SnapshotEnvironmentBinding of run's application and target Environment,
	// nil when there is none; occupant is the binding of the generated name when binding is
	// nil (one of another application or Environment).
	binding, occupant *appstudiov1alpha1.SnapshotEnvironmentBinding
	// snapshot is run's Snapshot, nil when missing; previous is the Snapshot binding points at
	// when that is another, nil when missing or the same; it tells the images deployed only
	// when the binding's pointing record does not (imagesBefore).
	snapshot, previous *appstudiov1alpha1.Snapshot
	// deployments are the GitOpsDeployments that binding's status names, by name; one missing
	// from the cache is absent.
	deployments map[string]*managedv1alpha1.GitOpsDeployment
	// gates are the target Environment's gates.
	gates gates

	// An automated run's: the namespace's Environment graph, and the Environments of the
	// walk's current level (the ones above are done with), by name.
	graph   *promotiongraph.Graph
	targets map[string]target
	// snapshotCreated holds the creation times of the Snapshots of run's automated siblings and
	// of run's own, by name; a Snapshot that is gone is missing.
	snapshotCreated map[string]metav1.Time
}

// event is a Kubernetes Event to record on the PromotionRun once its status is written.
type event struct{ eventType, reason, message string }

// bindingWrite is what to write to one binding, in this order: its status marked (see
// markedBinding), then the binding created or pointed at the Snapshot; updateBinding is written
// over the marked binding's resourceVersion, so that nothing comes between the two.
type bindingWrite struct {
	markBinding, createBinding, updateBinding *appstudiov1alpha1.SnapshotEnvironmentBinding
}

// plan is what to write for one PromotionRun, in this order: the bindings, the PromotionRun's
// status; then when to look again.
type plan struct {
	// writes are the bindings' writes, one per Environment the pass promotes into.
	writes []bindingWrite
	// status is the PromotionRun's new status; nil leaves it as it is.
	status *appstudiov1alpha1.PromotionRunStatus
	// events are recorded once status is written.
	events []event
	// recheckAfter is when the promotion times out, a gate opens or a verification Job is
	// looked at: what no watch reports.
	recheckAfter time.Duration

	// An automated run's gates: the PromotionGates whose status to write (first: a rollback
	// and an entry are recorded before they are carried out), the verification Jobs to create
	// (before that: a status naming a Job is never written before the Job exists), the
	// EnvironmentHolds to make, and Events on other objects.
	gates        []*appstudiov1alpha1.PromotionGate
	jobs         []*batchv1.Job
	holds        []*appstudiov1alpha1.EnvironmentHold
	objectEvents []objectEvent
}

// planPromotion decides, from what the controller sees, what to write for one PromotionRun.
// It is pure, so every rule can be tested without a cluster.
//
// The rules are the original service's (reference §3.8), checked in its order: a Complete
// run is left alone; only the earliest run not Complete of an application in a namespace
// proceeds; automated promotion and an empty target Environment are errors. The run then
// finds the binding of its application and Environment, or generates one, points it at the
// Snapshot, and waits until every GitOpsDeployment of the binding is Synced and Healthy at the
// GitOps repository commit of the Snapshot: Success; or, ten minutes after it pointed the
// binding, Failure. Errors are reported in the ErrorOccurred condition and leave the run where
// it is.
//
// Beyond the original: the active-promotion check is per namespace (the original's spanned
// every namespace); an OutOfSync GitOpsDeployment is waited for as one that is Synced but not
// Healthy is (the original counted OutOfSync as deployed); one deployed at a commit older than
// the Snapshot's is waited for too (deployedAt), and the binding's commits are the Snapshot's
// only once the generator has answered the pointing (repositoryGenerated); the generated binding's components are the
// Snapshot's (the original's were the Application's Components); the timeout also covers
// the wait for the binding's GitOpsDeployments to appear; and the step records when it started
// and ended, in startTime and completionTime (fields beyond application-api).
func planPromotion(s state, now metav1.Time) plan {
	var p plan
	run := s.run
	if run == nil || run.Status.State == appstudiov1alpha1.PromotionRunStateComplete {
		return p
	}
	if isAutomated(run) {
		return planAutomated(s, now)
	}
	st := run.Status.DeepCopy()
	write, fail := p.writers(run, st, now)

	if first := earliestActive(run, s.siblings); first != nil {
		return fail(EventActivePromotionExists, msgActivePromotion, fmt.Sprintf(
			"PromotionRun %s of Application %s is still active; only one PromotionRun per Application may be", first.Name, run.Spec.Application))
	}
	env := run.Spec.ManualPromotion.TargetEnvironment
	if env == "" {
		return fail(EventInvalidTarget, msgInvalidTarget, msgInvalidTarget)
	}
	binding, w, problem, reason := bindingFor(run, s.snapshot, env, s.target())
	if problem != "" {
		return fail(reason, problem, problem)
	}
	st.State = appstudiov1alpha1.PromotionRunStateActive
	for _, old := range st.ActiveBindings {
		if old != binding.Name {
			return fail(EventBindingChanged, msgBindingChanged(old, binding.Name), msgBindingChanged(old, binding.Name))
		}
	}
	// The Environment's gates hold a manual run as an automated one, but for its hold: a hold
	// keeps automation out, and a manual run is a person's deliberate act.
	t := s.target()
	t.gates.hold = nil
	gp := openGate(run, t.gates)
	// complete ends the run with the outcome of its one step, ended by its gate.
	complete := func(events []event) plan {
		e := st.EnvironmentStatus[len(st.EnvironmentStatus)-1]
		st.State = appstudiov1alpha1.PromotionRunStateComplete
		if e.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess {
			st.CompletionResult = appstudiov1alpha1.PromotionRunCompleteResultSuccess
			clearErrorCondition(st, now)
			return write(append(events, event{corev1.EventTypeNormal, EventPromotionSucceeded, fmt.Sprintf("Promoted Snapshot %s into Environment %s", run.Spec.Snapshot, env)})...)
		}
		st.CompletionResult = appstudiov1alpha1.PromotionRunCompleteResultFailure
		setErrorCondition(st, e.DisplayStatus, now)
		return write(append(events, event{corev1.EventTypeWarning, EventPromotionFailed, e.DisplayStatus})...)
	}
	if done, events := gp.ended(&p, run, s.snapshot, binding, st, env, 0, now); done {
		return complete(events)
	}
	entering := w.createBinding != nil || binding.Spec.Snapshot != run.Spec.Snapshot
	if held, events := gp.atEntry(&p, run, t, binding, entering, st, env, 0, now); held {
		if st.PromotionStartTime.IsZero() {
			st.PromotionStartTime = now
		}
		if st.EnvironmentStatus[len(st.EnvironmentStatus)-1].Status == appstudiov1alpha1.PromotionRunEnvironmentStatusFailed {
			return complete(events)
		}
		return write(events...)
	}
	step := stepInto(run, s.snapshot, env, 0, binding, w, t, st, now)
	if step.problem != "" {
		return fail(step.problemReason, step.problem, step.problem)
	}
	if st.PromotionStartTime.IsZero() {
		st.PromotionStartTime = now
	}
	st.ActiveBindings = []string{step.binding}
	p.writes = append(p.writes, step.write)
	events := step.started
	if handled, evs := gp.atExit(&p, run, s.snapshot, step.bindingObject, t, step, env, now); handled {
		events = append(events, evs...)
		if step.e.Status != appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress {
			return complete(events)
		}
		clearErrorCondition(st, now)
		return write(events...)
	}
	// The timeout runs from promotionStartTime, as the original's did, or from the moment the
	// Environment's gates let the run in.
	deadline := st.PromotionStartTime.Add(Timeout)
	if gp.entry.EnteredTime != nil {
		deadline = gp.entry.EnteredTime.Add(Timeout)
	}
	switch {
	case !now.Time.Before(deadline):
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure
		gp.set(appstudiov1alpha1.GatePhaseStopped, msgTimedOut, now)
		events = append(events, step.end(appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, msgTimedOut, now)...)
		setErrorCondition(st, msgTimedOut, now)
		events = append(events, event{corev1.EventTypeWarning, EventPromotionFailed, msgTimedOut})
	case step.waiting != "":
		if step.onDeployments {
			st.State = appstudiov1alpha1.PromotionRunStateWaiting
		}
		if gp.gated() {
			gp.set(appstudiov1alpha1.GatePhaseDeploying, step.waiting, now)
		}
		step.e.DisplayStatus = step.waiting
		events = append(events, reportWaiting(st, step, now)...)
		p.later(deadline.Sub(now.Time))
	default:
		st.State, st.CompletionResult = appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultSuccess
		gp.set(appstudiov1alpha1.GatePhasePassed, "", now)
		events = append(events, step.end(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, msgSucceeded, now)...)
		clearErrorCondition(st, now)
		events = append(events, event{corev1.EventTypeNormal, EventPromotionSucceeded, fmt.Sprintf("Promoted Snapshot %s into Environment %s", run.Spec.Snapshot, env)})
	}
	gp.record(&p)
	return write(events...)
}

// writers are the two ways a pass ends: write completes p with st when it differs from what
// the run has, with events; fail reports a problem in the ErrorOccurred condition (with its
// Event once) and writes no binding.
func (p *plan) writers(run *appstudiov1alpha1.PromotionRun, st *appstudiov1alpha1.PromotionRunStatus, now metav1.Time) (
	write func(events ...event) plan, fail func(reason, message, eventMessage string) plan) {
	write = func(events ...event) plan {
		if !apiequality.Semantic.DeepEqual(*st, run.Status) {
			p.status = st
			p.events = events
		}
		return *p
	}
	fail = func(reason, message, eventMessage string) plan {
		// Nothing of the pass is carried out: not half of a step (a gate's record of a
		// rollback without the binding pointed back).
		p.writes, p.gates, p.jobs, p.holds, p.objectEvents = nil, nil, nil, nil, nil
		if !setErrorCondition(st, message, now) {
			return write() // already reported
		}
		return write(event{corev1.EventTypeWarning, reason, eventMessage})
	}
	return write, fail
}

// step is one Environment's part of a pass: the binding writes that deploy the run's Snapshot
// there, and how far the deployment is.
type step struct {
	write   bindingWrite
	binding string // the binding's name
	// bindingObject is the binding, pointed at the Snapshot when write points it.
	bindingObject *appstudiov1alpha1.SnapshotEnvironmentBinding
	// e is the step's entry in the status being built, In Progress; started holds the Event of
	// its start when it begins in this pass.
	e       *appstudiov1alpha1.PromotionRunEnvironmentStatus
	started []event
	// waiting is what the step waits for, "" once every GitOpsDeployment runs the Snapshot;
	// onDeployments tells whether it waits for GitOpsDeployments to sync.
	waiting       string
	onDeployments bool
	// unreadable is why the binding's pointing record cannot be read, when the step waits for
	// its repository because of it (waitingFor).
	unreadable error
	// problem, when set, keeps the step from starting (with its Event's reason).
	problem, problemReason string
}

// bindingFor is the binding through which run deploys its Snapshot into env: t's, or one
// generated (the write creates it); or the problem that keeps it from being made.
func bindingFor(run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot, env string, t target) (
	b *appstudiov1alpha1.SnapshotEnvironmentBinding, w bindingWrite, problem, reason string) {
	if t.binding != nil {
		return t.binding, w, "", ""
	}
	name := BindingName(run.Spec.Application, env)
	if t.occupant != nil {
		return nil, w, msgBindingNameTaken(name), EventBindingNameTaken
	}
	if problem := snapshotProblem(run, snapshot, name); problem != "" {
		return nil, w, problem, snapshotEventReason(snapshot)
	}
	b = generatedBinding(run, snapshot, env)
	recordPointing(b, nil, snapshot, false)
	w.createBinding = b
	return b, w, "", ""
}

// stepInto plans the step of run into env through binding (w holds its creation when it is
// generated): point it at snapshot and see whether every GitOpsDeployment runs it. It adds or
// updates the step's entry in st (a new one numbered number; see startStep).
func stepInto(run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot, env string, number int32,
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding, w bindingWrite, t target,
	st *appstudiov1alpha1.PromotionRunStatus, now metav1.Time) step {
	sp := step{write: w}
	if problem := snapshotProblem(run, snapshot, binding.Name); problem != "" {
		return step{problem: problem, problemReason: snapshotEventReason(snapshot)}
	}
	pointed := false
	if binding.Spec.Snapshot != run.Spec.Snapshot {
		pointing := pointAt(binding, snapshot, t.previous, now)
		sp.write.markBinding, sp.write.updateBinding = pointing.markBinding, pointing.updateBinding
		binding = pointing.updateBinding
		pointed = true
	}
	sp.binding, sp.bindingObject = binding.Name, binding
	var started bool
	sp.e, started = startStep(st, env, number, now)
	if started {
		sp.started = []event{{corev1.EventTypeNormal, EventStepStarted,
			fmt.Sprintf("Step %d started: promoting Snapshot %s into Environment %s through Binding %s", sp.e.Step, run.Spec.Snapshot, env, binding.Name)}}
	}
	sp.waiting, sp.onDeployments, sp.unreadable = waitingFor(binding, pointed || sp.write.createBinding != nil, run.Spec.Snapshot, t.deployments)
	return sp
}

// pointAt is the writes that point binding at snapshot (which exists), from previous, the
// Snapshot it points at now (nil when unknown or missing): marked first when the generator's
// answer could otherwise not be told apart (see repositoryGenerated), with the pointing recorded.
func pointAt(binding *appstudiov1alpha1.SnapshotEnvironmentBinding, snapshot, previous *appstudiov1alpha1.Snapshot, now metav1.Time) bindingWrite {
	var w bindingWrite
	before := imagesBefore(binding, previous)
	mark := before != "" && before == imagesDigest(snapshot, binding.Spec.Components) && !reportsGenerations(binding)
	if mark {
		w.markBinding = markedBinding(binding, snapshot.Name, now)
	}
	from := binding.Status.Components
	b := binding.DeepCopy()
	b.Spec.Snapshot = snapshot.Name
	recordPointing(b, from, snapshot, mark)
	w.updateBinding = b
	return w
}

// reportWaiting sets st's ErrorOccurred condition while sp waits: the reason it cannot see its
// repository generated when that is an unreadable pointing record (which may be of this very
// pointing, see repositoryGenerated: the run waits, until the timeout, for someone to mend it),
// with its Event the first time; else cleared.
func reportWaiting(st *appstudiov1alpha1.PromotionRunStatus, sp step, now metav1.Time) []event {
	if sp.unreadable == nil {
		clearErrorCondition(st, now)
		return nil
	}
	msg := msgPointingUnreadable(sp.binding, sp.unreadable)
	if !setErrorCondition(st, msg, now) {
		return nil
	}
	return []event{{corev1.EventTypeWarning, EventPointingUnreadable, msg}}
}

// end ends the step with status (Success or Failed) and displayStatus, and returns its Event.
func (sp step) end(status appstudiov1alpha1.PromotionRunEnvironmentStatusField, displayStatus string, now metav1.Time) []event {
	endStep(sp.e, status, displayStatus, now)
	if status == appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess {
		return []event{{corev1.EventTypeNormal, EventStepEnded, fmt.Sprintf("Step %d (Environment %s) succeeded: %s", sp.e.Step, sp.e.EnvironmentName, displayStatus)}}
	}
	return []event{{corev1.EventTypeWarning, EventStepEnded, fmt.Sprintf("Step %d (Environment %s) failed: %s", sp.e.Step, sp.e.EnvironmentName, displayStatus)}}
}

// earliestActive is the PromotionRun among siblings, not Complete, that was created before run
// (the earlier name first among those created in the same second), or nil.
func earliestActive(run *appstudiov1alpha1.PromotionRun, siblings []*appstudiov1alpha1.PromotionRun) *appstudiov1alpha1.PromotionRun {
	var first *appstudiov1alpha1.PromotionRun
	for _, o := range siblings {
		if o.Namespace != run.Namespace || o.Spec.Application != run.Spec.Application || o.Name == run.Name ||
			o.Status.State == appstudiov1alpha1.PromotionRunStateComplete || !createdBefore(o, run) {
			continue
		}
		if first == nil || createdBefore(o, first) {
			first = o
		}
	}
	return first
}

func createdBefore(a, b *appstudiov1alpha1.PromotionRun) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// snapshotProblem is why run cannot deploy snapshot through the binding named binding, or "".
func snapshotProblem(run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot, binding string) string {
	switch {
	case snapshot == nil:
		return msgSnapshotMissing(run.Spec.Snapshot, binding)
	case snapshot.Spec.Application != run.Spec.Application:
		return msgSnapshotOfOtherApplication(snapshot.Name, run.Spec.Application)
	case len(snapshot.Spec.Components) == 0:
		return msgSnapshotWithoutComponents(snapshot.Name)
	}
	return ""
}

func snapshotEventReason(snapshot *appstudiov1alpha1.Snapshot) string {
	if snapshot == nil {
		return EventSnapshotNotFound
	}
	return EventSnapshotNotDeployable
}

// generatedBinding is the binding that deploys run's Snapshot into its Environment: one
// component per component of the Snapshot, which is what is promoted. It has no owner: the
// deployment must outlive the run.
func generatedBinding(run *appstudiov1alpha1.PromotionRun, snapshot *appstudiov1alpha1.Snapshot, env string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	app := run.Spec.Application
	labels := map[string]string{}
	// A name too long for a label value cannot be a label; the original failed to create the
	// binding then.
	for k, v := range map[string]string{bindingApplicationLabel: app, bindingEnvironmentLabel: env} {
		if len(validation.IsValidLabelValue(v)) == 0 {
			labels[k] = v
		}
	}
	b := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BindingName(app, env), Namespace: run.Namespace, Labels: labels},
		Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{
			Application: app,
			Environment: env,
			Snapshot:    run.Spec.Snapshot,
			Components:  []appstudiov1alpha1.BindingComponent{},
		},
	}
	for _, c := range snapshot.Spec.Components {
		b.Spec.Components = append(b.Spec.Components, appstudiov1alpha1.BindingComponent{Name: c.Name})
	}
	return b
}

// waitingFor is what the promotion through binding still waits for, "" when every
// GitOpsDeployment of the binding runs snapshot; onDeployments tells whether it waits for
// GitOpsDeployments to sync; unreadable, why it waits for the repository when that is the
// binding's unreadable pointing record. pointed means binding is being pointed at snapshot now.
//
// A GitOpsDeployment runs the Snapshot when it is Synced and Healthy at the commit that
// application-service generated for its component from the Snapshot: its status.sync.revision
// equals the binding's status.components[component].gitopsRepository.commitID. Until the
// generator has answered the pointing (repositoryGenerated), those are the commits of the
// Snapshot deployed before, at which the GitOpsDeployments may well be Synced and Healthy.
// The GitOpsDeployments themselves are read, not the binding's copy of their status
// (status.gitopsDeployments), which lags them; the copy only names them.
func waitingFor(binding *appstudiov1alpha1.SnapshotEnvironmentBinding, pointed bool, snapshot string,
	deployments map[string]*managedv1alpha1.GitOpsDeployment) (waiting string, onDeployments bool, unreadable error) {
	byComponent := map[string]appstudiov1alpha1.BindingStatusGitOpsDeployment{}
	for _, d := range binding.Status.GitOpsDeployments {
		byComponent[d.ComponentName] = d
	}
	for _, c := range binding.Spec.Components {
		if _, ok := byComponent[c.Name]; !ok {
			return msgWaitingForDeployments, false, nil
		}
	}
	if len(binding.Status.GitOpsDeployments) != len(binding.Spec.Components) {
		return msgWaitingForDeployments, false, nil
	}
	if pointed {
		return msgWaitingForRepository(binding.Name, snapshot), false, nil
	}
	if generated, err := repositoryGenerated(binding); !generated {
		return msgWaitingForRepository(binding.Name, snapshot), false, err
	}
	commits := map[string]string{}
	for _, c := range binding.Status.Components {
		commits[c.Name] = c.GitOpsRepository.CommitID
	}
	var names []string
	why := map[string]string{}
	for _, d := range binding.Status.GitOpsDeployments {
		if !deployedAt(deployments[d.GitOpsDeployment], commits[d.ComponentName]) {
			names = append(names, d.GitOpsDeployment)
			// Its reason is quoted only once it deploys the Snapshot's commit: before, it is the
			// reason of what the Snapshot replaces.
			if gd := deployments[d.GitOpsDeployment]; gd != nil && gd.Status.Sync.Revision == commits[d.ComponentName] {
				why[d.GitOpsDeployment] = gd.Status.ResourcesNotReady()
			}
		}
	}
	if len(names) == 0 {
		return "", false, nil
	}
	sort.Strings(names)
	return msgWaitingFor(names) + reasonsOf(names, why), true, nil
}

// pointingAnnotation records, on a binding a PromotionRun pointed at a Snapshot, in the same
// write that pointed it, what the generator's answer must be told apart from: a pointing.
// It is an annotation, which clients built on application-api's structs keep when they update
// the binding, unlike a field of its status they do not know.
const pointingAnnotation = "promotionrun.managed-gitops.redhat.com/pointing"

// pointing is the value of pointingAnnotation, in JSON. Its fields are only added to: a record
// written by an earlier version (without images) is read as it was meant.
type pointing struct {
	// Snapshot is the Snapshot the binding was pointed at; the record holds while the binding
	// points there.
	Snapshot string `json:"snapshot"`
	// Components is componentsHash of the binding's status.components when it was pointed.
	Components string `json:"components"`
	// Images is imagesDigest of Snapshot for the binding's components: what the next pointing
	// compares its Snapshot's with, whether or not this Snapshot still exists then. "" when
	// unknown (a component without an image, or a record written before the field).
	Images string `json:"images,omitempty"`
	// Marked tells that the binding's last gitopsRepoCondition was set Unknown just before it was
	// pointed (markedBinding), and that the new Snapshot's images are those of the one before.
	Marked bool `json:"marked,omitempty"`
}

// maxPointingSize bounds the annotation read: the records written are under 500 bytes (a
// Snapshot's name is at most 253), so anything longer is not one.
const maxPointingSize = 1024

// recordPointing records on b, about to be written pointed at snapshot (its spec.snapshot), the
// status.components it had when pointed, the images it is pointed at, and whether it was marked.
func recordPointing(b *appstudiov1alpha1.SnapshotEnvironmentBinding, components []appstudiov1alpha1.BindingComponentStatus,
	snapshot *appstudiov1alpha1.Snapshot, marked bool) {
	value, _ := json.Marshal(pointing{Snapshot: b.Spec.Snapshot, Components: componentsHash(components),
		Images: imagesDigest(snapshot, b.Spec.Components), Marked: marked})
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[pointingAnnotation] = string(value)
}

// pointingOf is the record of b's pointing at its current Snapshot, if a PromotionRun pointed
// it (ok); err when b carries an annotation that is no record: for all anyone knows, of this
// pointing.
func pointingOf(b *appstudiov1alpha1.SnapshotEnvironmentBinding) (rec pointing, ok bool, err error) {
	value, found := b.Annotations[pointingAnnotation]
	if !found {
		return pointing{}, false, nil
	}
	if len(value) > maxPointingSize {
		return pointing{}, false, fmt.Errorf("%d bytes, more than the %d of a record", len(value), maxPointingSize)
	}
	if err := json.Unmarshal([]byte(value), &rec); err != nil {
		return pointing{}, false, fmt.Errorf("not a record: %v", err)
	}
	if rec.Snapshot == "" || !isDigest(rec.Components) || (rec.Images != "" && !isDigest(rec.Images)) {
		return pointing{}, false, fmt.Errorf("not a record: a snapshot and sha256 digests expected")
	}
	if rec.Snapshot != b.Spec.Snapshot {
		return pointing{}, false, nil
	}
	return rec, true, nil
}

func componentsHash(components []appstudiov1alpha1.BindingComponentStatus) string {
	if len(components) == 0 {
		components = nil // what the server gives back for an empty list
	}
	data, _ := json.Marshal(components)
	return digest(data)
}

// imagesDigest is the digest of the images snapshot gives components, as a JSON object by
// component name (encoding/json sorts its keys, so equal images give equal digests): "" when
// there is no Snapshot or component, or one of components has no image in snapshot.
func imagesDigest(snapshot *appstudiov1alpha1.Snapshot, components []appstudiov1alpha1.BindingComponent) string {
	if snapshot == nil || len(components) == 0 {
		return ""
	}
	all := map[string]string{}
	for _, c := range snapshot.Spec.Components {
		all[c.Name] = c.ContainerImage
	}
	bound := map[string]string{}
	for _, c := range components {
		if all[c.Name] == "" {
			return ""
		}
		bound[c.Name] = all[c.Name]
	}
	data, _ := json.Marshal(bound)
	return digest(data)
}

// imagesBefore is imagesDigest of what b deploys now: as recorded when a PromotionRun pointed it
// there, else of previous, the Snapshot it points at, when that still exists (b pointed by
// someone else, or by a version that did not record images); "" when unknown.
func imagesBefore(b *appstudiov1alpha1.SnapshotEnvironmentBinding, previous *appstudiov1alpha1.Snapshot) string {
	if rec, ok, _ := pointingOf(b); ok && rec.Images != "" {
		return rec.Images
	}
	return imagesDigest(previous, b.Spec.Components)
}

// digest is the sha256 of data, in hex.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func isDigest(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == sha256.Size*2 && err == nil
}

// reportsGenerations tells whether the generator of b's GitOps repository sets observedGeneration
// on the conditions it writes, which application-service does not.
func reportsGenerations(b *appstudiov1alpha1.SnapshotEnvironmentBinding) bool {
	conds := b.Status.GitOpsRepoConditions
	return len(conds) > 0 && conds[len(conds)-1].ObservedGeneration > 0
}

// repositoryGenerated tells whether b's status.components are the GitOps repository generated
// for b's current Snapshot: the last of b's gitopsRepoConditions is True, and
//
//   - it has an observedGeneration, at least b's generation: a generator that sets it says so;
//   - else, when a PromotionRun pointed b (pointingOf), the status.components changed since. That
//     is what application-service does (it writes status.components with an Update of the status,
//     whose resourceVersion makes one that read b before the pointing fail, and then the
//     condition, True or False, with a merge patch), never observedGeneration. A reconcile of the
//     binding as it was before, still under way when it was pointed, can write no components
//     after the pointing but with a False condition: it may set True after it only the components
//     it had written before;
//   - or, when the run marked b before pointing it (the new Snapshot's images are the previous
//     one's, so the generated commits may well be the same, and application-service's writes of
//     them change nothing the server stores), the condition is True again: it was Unknown when b
//     was pointed, and whoever set it True after, application-service of the new generation or
//     of the previous one, wrote the commits of those same images;
//   - else (b was pointed by someone else, or by a run before this record existed) the condition
//     alone, as the original service had it: nothing tells when the generator answered a pointing
//     nobody recorded;
//   - but never when b's annotation is unreadable (pointingOf, the error): it may be this
//     pointing's record.
//
// A new Snapshot whose images differ from the previous one's always gives new commits: the
// generator writes the images into the repository, and commits and pushes when it changed.
func repositoryGenerated(b *appstudiov1alpha1.SnapshotEnvironmentBinding) (bool, error) {
	conds := b.Status.GitOpsRepoConditions
	if len(conds) == 0 || conds[len(conds)-1].Status != metav1.ConditionTrue {
		return false, nil
	}
	if reportsGenerations(b) {
		return conds[len(conds)-1].ObservedGeneration >= b.Generation, nil
	}
	rec, ok, err := pointingOf(b)
	switch {
	case err != nil:
		return false, err
	case !ok || rec.Marked:
		return true, nil
	}
	return componentsHash(b.Status.Components) != rec.Components, nil
}

// markedBinding is b with its last gitopsRepoCondition (application-service's
// GitOpsResourcesGenerated when there is none) Unknown, as it is until the generator has seen
// snapshot: written just before b is pointed at snapshot, when the generator's answer may
// otherwise be invisible (see repositoryGenerated). application-service sets its condition with
// meta.SetStatusCondition, which makes Unknown True again.
func markedBinding(b *appstudiov1alpha1.SnapshotEnvironmentBinding, snapshot string, now metav1.Time) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b = b.DeepCopy()
	conds := b.Status.GitOpsRepoConditions
	condType := conditionGitOpsResourcesGenerated
	if len(conds) > 0 {
		condType = conds[len(conds)-1].Type
	}
	mark := metav1.Condition{Type: condType, Status: metav1.ConditionUnknown, Reason: reasonSnapshotChanged,
		Message: "Waiting for the GitOps repository to be generated for Snapshot: " + snapshot, LastTransitionTime: now}
	for i := range conds {
		if conds[i].Type == condType {
			if conds[i].Status == metav1.ConditionUnknown {
				mark.LastTransitionTime = conds[i].LastTransitionTime
			}
			conds[i] = mark
			return b
		}
	}
	b.Status.GitOpsRepoConditions = append(conds, mark)
	return b
}

// application-service's condition of the binding's GitOps repository, and our reason for
// Unknown.
const (
	conditionGitOpsResourcesGenerated = "GitOpsResourcesGenerated"
	reasonSnapshotChanged             = "SnapshotChanged"
)

// deployedAt tells whether gd is Synced and Healthy at commit. OutOfSync is not deployed,
// whatever its health.
func deployedAt(gd *managedv1alpha1.GitOpsDeployment, commit string) bool {
	return gd != nil && commit != "" &&
		gd.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced &&
		gd.Status.Health.Status == managedv1alpha1.HealthStatusCodeHealthy &&
		gd.Status.Sync.Revision == commit
}

// startStep returns env's step in st, In Progress, and whether it is new: a new one is
// numbered number, or after the highest when number is 0, and starts now. A step that was written before startTime existed
// gets the promotion's start time, which is when it started (the pass that set
// promotionStartTime wrote it, and its displayStatus said so).
func startStep(st *appstudiov1alpha1.PromotionRunStatus, env string, number int32, now metav1.Time) (e *appstudiov1alpha1.PromotionRunEnvironmentStatus, started bool) {
	for i := range st.EnvironmentStatus {
		if e := &st.EnvironmentStatus[i]; e.EnvironmentName == env {
			e.Status, e.CompletionTime = appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, nil
			if e.StartTime == nil {
				e.StartTime = st.PromotionStartTime.DeepCopy()
			}
			return e, false
		}
	}
	if number == 0 {
		for _, e := range st.EnvironmentStatus {
			number = max(number, e.Step)
		}
		number++
	}
	st.EnvironmentStatus = append(st.EnvironmentStatus, appstudiov1alpha1.PromotionRunEnvironmentStatus{
		Step: number, EnvironmentName: env, Status: appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, StartTime: now.DeepCopy(),
	})
	return &st.EnvironmentStatus[len(st.EnvironmentStatus)-1], true
}

// endStep ends step e with status (Success or Failed) and displayStatus now. The times are in
// startTime and completionTime, so displayStatus is the original's message alone. The API
// refuses a completionTime before the startTime, which a clock behind the one that started the
// step (another agent's, after a change of leader) would give: the step then ends when it
// started.
func endStep(e *appstudiov1alpha1.PromotionRunEnvironmentStatus, status appstudiov1alpha1.PromotionRunEnvironmentStatusField,
	displayStatus string, now metav1.Time) {
	e.Status, e.DisplayStatus = status, displayStatus
	e.CompletionTime = now.DeepCopy()
	if e.StartTime != nil && now.Before(e.StartTime) {
		e.CompletionTime = e.StartTime.DeepCopy()
	}
}

// setErrorCondition reports message in st's ErrorOccurred condition; false when it already
// did.
func setErrorCondition(st *appstudiov1alpha1.PromotionRunStatus, message string, now metav1.Time) bool {
	return setCondition(st, appstudiov1alpha1.PromotionRunConditionStatusTrue, appstudiov1alpha1.PromotionRunReasonErrorOccurred, message, now)
}

// clearErrorCondition sets st's ErrorOccurred condition False, with no reason or message, as
// the original did once a run proceeded.
func clearErrorCondition(st *appstudiov1alpha1.PromotionRunStatus, now metav1.Time) {
	setCondition(st, appstudiov1alpha1.PromotionRunConditionStatusFalse, "", "", now)
}

// setCondition sets st's ErrorOccurred condition; false when it already was so. Its probe
// time moves only with a change: refreshing it on every look would write the status forever.
func setCondition(st *appstudiov1alpha1.PromotionRunStatus, status appstudiov1alpha1.PromotionRunConditionStatus,
	reason appstudiov1alpha1.PromotionRunReasonType, message string, now metav1.Time) bool {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != appstudiov1alpha1.PromotionRunConditionErrorOccurred {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime, c.LastTransitionTime = status, reason, message, now, now.DeepCopy()
		return true
	}
	st.Conditions = append(st.Conditions, appstudiov1alpha1.PromotionRunCondition{
		Type: appstudiov1alpha1.PromotionRunConditionErrorOccurred, Status: status, Reason: reason, Message: message,
		LastProbeTime: now, LastTransitionTime: now.DeepCopy(),
	})
	return true
}
