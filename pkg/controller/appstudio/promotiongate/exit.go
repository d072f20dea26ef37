package promotiongate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/validation"
)

// DefaultVerificationTimeout is how long a verification Job may take when its gate sets none.
const DefaultVerificationTimeout = 10 * time.Minute

// JobPollInterval is how often a verification Job is looked at while it runs: the agent reads
// it as the namespace's deployer, by name, rather than watching every namespace's Jobs.
const JobPollInterval = 5 * time.Second

// Verification results.
const (
	ResultSucceeded = "Succeeded"
	ResultFailed    = "Failed"
)

// HasExitGates tells whether gate holds a promotion after it is deployed.
func HasExitGates(gate *appstudiov1alpha1.PromotionGate) bool {
	return gate != nil && (gate.Spec.Verification != nil || (gate.Spec.SoakTime != nil && gate.Spec.SoakTime.Duration > 0))
}

// Deployed is what the controller saw of the promotion's GitOpsDeployments.
type Deployed struct {
	// Running: every GitOpsDeployment of the binding is Synced and Healthy at the Snapshot's
	// commits.
	Running bool
	// Degraded names those whose health is Degraded, sorted.
	Degraded []string
}

// Exit is the decision on a deployed promotion at its Environment's exit gates.
type Exit struct {
	// Entry is the promotion's entry in the gate's status, updated.
	Entry appstudiov1alpha1.GatedPromotion
	// Wait, when set, is what the promotion waits for, to look again after RecheckAfter.
	Wait         string
	RecheckAfter time.Duration
	// CreateJob tells to create the verification Job (Entry.Verification names it).
	CreateJob bool
	// RollBack, when set, is why the Environment goes back to Entry.PreviousSnapshot.
	RollBack string
	// Passed: the promotion may leave the Environment.
	Passed bool
}

// DecideExit decides where the promotion of entry stands at gate's soak time and verification,
// given what its GitOpsDeployments and its verification Job (nil when there is none) are, at
// now. It is called once the promotion was deployed (Running) at least once: the soak counts
// from the first time (entry.HealthyTime); a deployment that becomes Degraded before the
// promotion passed rolls it back, one that is otherwise not Healthy is waited for.
//
// jobErr is why the Job could not be read (as the namespace's deployer), other than its
// absence: the verification fails with it. A verification recorded Failed (its Job could not be
// created) rolls back. A promotion that has not passed its gates ExitTimeout after its soak and
// verification could have ended (its deployment no longer Synced and Healthy, and never again)
// is rolled back too: a step never waits for ever.
func DecideExit(gate *appstudiov1alpha1.PromotionGate, entry appstudiov1alpha1.GatedPromotion, d Deployed,
	job *batchv1.Job, jobErr error, jobNamespace string, now time.Time) Exit {
	x := Exit{Entry: entry}
	e := &x.Entry
	if e.HealthyTime == nil {
		if !d.Running {
			return x // not deployed yet: the caller waits for the deployments
		}
		t := metav1.NewTime(now)
		e.HealthyTime = &t
	}
	e.Phase = appstudiov1alpha1.GatePhaseVerifying
	if len(d.Degraded) > 0 {
		x.RollBack = fmt.Sprintf("GitOpsDeployment %s became Degraded before Snapshot %s passed Environment %s's gates",
			strings.Join(d.Degraded, ", "), e.Snapshot, gate.Name)
		return x
	}
	var waits []string
	var recheck time.Duration
	later := func(after time.Duration) {
		if after > 0 && (recheck == 0 || after < recheck) {
			recheck = after
		}
	}
	if v := gate.Spec.Verification; v != nil {
		switch {
		case e.Verification == nil:
			name := JobName(e.PromotionRun, e.PromotionRunUID, gate.Name)
			e.Verification = &appstudiov1alpha1.VerificationStatus{Job: name, Namespace: jobNamespace,
				Logs: fmt.Sprintf("kubectl -n %s logs job/%s", jobNamespace, name), StartTime: metav1.NewTime(now)}
			x.CreateJob = true
		case e.Verification.Result == ResultFailed:
			x.RollBack = "verification failed: " + e.Message
			return x
		case e.Verification.Result != "":
		case jobErr != nil:
			e.Verification.Result = ResultFailed
			x.RollBack = fmt.Sprintf("verification Job %s in namespace %s cannot be read as the namespace's deployer: %v",
				e.Verification.Job, e.Verification.Namespace, jobErr)
			return x
		case job == nil:
			e.Verification.Result = ResultFailed
			x.RollBack = fmt.Sprintf("verification Job %s in namespace %s was deleted before it ended", e.Verification.Job, e.Verification.Namespace)
			return x
		default:
			if ok, msg, ended := jobEnded(job); ended {
				if !ok {
					e.Verification.Result = ResultFailed
					x.RollBack = fmt.Sprintf("verification Job %s in namespace %s failed: %s (%s)", job.Name, job.Namespace, msg, e.Verification.Logs)
					return x
				}
				e.Verification.Result = ResultSucceeded
			} else if deadline := e.Verification.StartTime.Add(verificationTimeout(v)); !now.Before(deadline) {
				e.Verification.Result = ResultFailed
				x.RollBack = fmt.Sprintf("verification Job %s in namespace %s did not finish in %s (%s)", job.Name, job.Namespace,
					verificationTimeout(v), e.Verification.Logs)
				return x
			} else {
				later(min(JobPollInterval, deadline.Sub(now)))
			}
		}
		if e.Verification.Result == "" {
			later(JobPollInterval)
			waits = append(waits, fmt.Sprintf("Verifying: Job %s in namespace %s (%s)", e.Verification.Job, e.Verification.Namespace, e.Verification.Logs))
		}
	}
	if s := gate.Spec.SoakTime; s != nil && s.Duration > 0 {
		if until := e.HealthyTime.Add(s.Duration); now.Before(until) {
			later(until.Sub(now))
			waits = append(waits, "Soaking until "+until.UTC().Format(time.RFC3339))
		}
	}
	if !d.Running {
		waits = append(waits, "Waiting for the GitOpsDeployments to be Synced and Healthy again")
	}
	if len(waits) > 0 {
		deadline := e.HealthyTime.Add(exitBound(gate))
		if !now.Before(deadline) {
			x.RollBack = fmt.Sprintf("Snapshot %s did not pass the gates of Environment %s in the %s after it was deployed (%s)",
				e.Snapshot, gate.Name, exitBound(gate), strings.Join(waits, "; "))
			return x
		}
		later(deadline.Sub(now))
		x.Wait, x.RecheckAfter = strings.Join(waits, "; "), recheck
		return x
	}
	x.Passed = true
	e.Phase = appstudiov1alpha1.GatePhasePassed
	return x
}

// ExitTimeout is how long a deployed promotion may wait, beyond its soak time and verification
// timeout, for its GitOpsDeployments to be Synced and Healthy again.
const ExitTimeout = 10 * time.Minute

// exitBound is how long after its deployment a promotion may take to pass gate's exit gates.
func exitBound(gate *appstudiov1alpha1.PromotionGate) time.Duration {
	d := ExitTimeout
	if s := gate.Spec.SoakTime; s != nil {
		d += s.Duration
	}
	if v := gate.Spec.Verification; v != nil {
		d += verificationTimeout(v)
	}
	return d
}

// verificationTimeout is v's timeout, or the default.
func verificationTimeout(v *appstudiov1alpha1.Verification) time.Duration {
	if v.Timeout != nil && v.Timeout.Duration > 0 {
		return v.Timeout.Duration
	}
	return DefaultVerificationTimeout
}

// jobEnded tells whether job ended (its Complete or Failed condition True), and how.
func jobEnded(job *batchv1.Job) (succeeded bool, message string, ended bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, "", true
		case batchv1.JobFailed:
			msg := c.Reason
			if c.Message != "" {
				msg += ": " + c.Message
			}
			return false, msg, true
		}
	}
	return false, "", false
}

// JobName is the name of the verification Job of the run of that name and UID in env: a label
// value (pods carry it in job-name), so at most 63 characters, and one per run and Environment
// (a run made again under the same name has Jobs of its own).
func JobName(run string, uid types.UID, env string) string {
	sum := sha256.Sum256([]byte(run + "/" + string(uid) + "/" + env))
	prefix := env
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-.")
	}
	return strings.ReplaceAll(prefix, ".", "-") + "-verify-" + hex.EncodeToString(sum[:])[:10]
}

// Labels and annotations of a verification Job.
const (
	LabelVerification      = "appstudio.redhat.com/verification"
	AnnotationPromotionRun = "appstudio.redhat.com/promotion-run"
	AnnotationEnvironment  = "appstudio.redhat.com/environment"
	AnnotationSnapshot     = "appstudio.redhat.com/snapshot"
)

// Job is the verification Job of gate for entry, in namespace: the gate's template, its pods
// run as the namespace's deployer, never restarted unless the template says OnFailure, not
// retried unless it sets a backoffLimit, and stopped by the Job controller at the timeout.
// Each container gets the promotion in its environment (GITOPS_SNAPSHOT, GITOPS_ENVIRONMENT,
// GITOPS_PROMOTION_RUN).
func Job(gate *appstudiov1alpha1.PromotionGate, entry appstudiov1alpha1.GatedPromotion, namespace string) *batchv1.Job {
	v := gate.Spec.Verification
	t := v.JobTemplate.DeepCopy()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: entry.Verification.Job, Namespace: namespace,
			Labels:      map[string]string{},
			Annotations: map[string]string{AnnotationPromotionRun: entry.PromotionRun, AnnotationEnvironment: gate.Name, AnnotationSnapshot: entry.Snapshot},
		},
		Spec: t.Spec,
	}
	for k, val := range t.Labels {
		job.Labels[k] = val
	}
	job.Labels[LabelVerification] = "true"
	for k, val := range t.Annotations {
		if _, ours := job.Annotations[k]; !ours {
			job.Annotations[k] = val
		}
	}
	if job.Spec.BackoffLimit == nil {
		job.Spec.BackoffLimit = new(int32)
	}
	if job.Spec.ActiveDeadlineSeconds == nil {
		secs := int64(verificationTimeout(v).Seconds())
		job.Spec.ActiveDeadlineSeconds = &secs
	}
	pod := &job.Spec.Template.Spec
	pod.ServiceAccountName = validation.VerificationServiceAccount
	if pod.RestartPolicy == "" {
		pod.RestartPolicy = corev1.RestartPolicyNever
	}
	env := []corev1.EnvVar{
		{Name: "GITOPS_SNAPSHOT", Value: entry.Snapshot},
		{Name: "GITOPS_ENVIRONMENT", Value: gate.Name},
		{Name: "GITOPS_PROMOTION_RUN", Value: entry.PromotionRun},
	}
	for i := range pod.Containers {
		pod.Containers[i].Env = append(pod.Containers[i].Env, env...)
	}
	return job
}

// Record returns status with entry recorded as the latest (replacing the run's earlier entry).
// It keeps every entry in progress (one holds what its run needs to go on: when it entered,
// what ran before, its Job) and the latest ended ones, ten entries in all when no more are in
// progress.
func Record(status appstudiov1alpha1.PromotionGateStatus, entry appstudiov1alpha1.GatedPromotion) appstudiov1alpha1.PromotionGateStatus {
	out := appstudiov1alpha1.PromotionGateStatus{Promotions: []appstudiov1alpha1.GatedPromotion{entry}}
	for _, p := range status.Promotions {
		if p.PromotionRun == entry.PromotionRun && p.PromotionRunUID == entry.PromotionRunUID {
			continue
		}
		if !Final(p.Phase) || len(out.Promotions) < MaxEnded {
			out.Promotions = append(out.Promotions, p)
		}
	}
	return out
}

// Prune drops from status the entries in progress of runs that are gone (live tells which
// are not, by name and UID): a run deleted while it waited at the gate, whose passage nobody
// ends. Nil live prunes nothing.
func Prune(status appstudiov1alpha1.PromotionGateStatus, live func(run string, uid types.UID) bool) appstudiov1alpha1.PromotionGateStatus {
	if live == nil {
		return status
	}
	out := appstudiov1alpha1.PromotionGateStatus{}
	for _, p := range status.Promotions {
		if Final(p.Phase) || live(p.PromotionRun, p.PromotionRunUID) {
			out.Promotions = append(out.Promotions, p)
		}
	}
	return out
}

// MaxEnded is how many entries a gate's status keeps when no more are in progress.
const MaxEnded = 10

// RollbackTarget is the Snapshot the Environment of status goes back to when the promotion of
// entry is rolled back: the latest Snapshot of its Application that passed the gate, or, when
// none did (in the entries kept), the one the Environment ran before entry entered.
func RollbackTarget(status appstudiov1alpha1.PromotionGateStatus, entry appstudiov1alpha1.GatedPromotion) string {
	for _, p := range status.Promotions {
		if p.Phase == appstudiov1alpha1.GatePhasePassed && p.Application == entry.Application && p.Application != "" &&
			p.PromotionRunUID != entry.PromotionRunUID {
			return p.Snapshot
		}
	}
	return entry.PreviousSnapshot
}

// EntryOf is the entry in status of the run of that name and UID, if there is one. An entry
// without a UID (written before entries had one) is the run's if its name is.
func EntryOf(status appstudiov1alpha1.PromotionGateStatus, run string, uid types.UID) (appstudiov1alpha1.GatedPromotion, bool) {
	for _, p := range status.Promotions {
		if p.PromotionRun == run && (p.PromotionRunUID == uid || p.PromotionRunUID == "") {
			return p, true
		}
	}
	return appstudiov1alpha1.GatedPromotion{}, false
}

// Final tells whether phase ends a promotion's passage.
func Final(phase appstudiov1alpha1.GatePhase) bool {
	switch phase {
	case appstudiov1alpha1.GatePhasePassed, appstudiov1alpha1.GatePhaseRejected, appstudiov1alpha1.GatePhaseRolledBack, appstudiov1alpha1.GatePhaseStopped:
		return true
	}
	return false
}
