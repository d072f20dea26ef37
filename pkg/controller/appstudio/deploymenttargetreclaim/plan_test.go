package deploymenttargetreclaim

import (
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// The tables below follow Kubernetes' PersistentVolume controller tests (binder_test.go,
// recycle/delete tests): each case is the objects before one sync of the target, and the
// target and Events after it. The target after is what the server would hold once the plan's
// writes are applied in order.

const ns = "tenant"

var (
	now = metav1.NewTime(time.Unix(2000, 0))
	// deletedAt is a deletion 30 s before now; longAgo one 3 min before.
	deletedAt = metav1.NewTime(now.Add(-30 * time.Second))
	longAgo   = metav1.NewTime(now.Add(-3 * time.Minute))
)

const (
	retain  = "gold"   // class with reclaimPolicy Retain
	del     = "bronze" // class with reclaimPolicy Delete
	finDT   = appstudiov1alpha1.DeploymentTargetFinalizer
	finProv = "managed-gitops.redhat.com/namespace-provisioner"
	annProv = appstudiov1alpha1.AnnDynamicallyProvisioned
)

const (
	available = appstudiov1alpha1.DeploymentTargetPhaseAvailable
	bound     = appstudiov1alpha1.DeploymentTargetPhaseBound
	released  = appstudiov1alpha1.DeploymentTargetPhaseReleased
	failed    = appstudiov1alpha1.DeploymentTargetPhaseFailed
)

type targetOpt func(*targetT)

// newTarget is target dt1 of class gold, with the controller's finalizer and a Success
// condition, and the options applied.
func newTarget(opts ...targetOpt) *targetT {
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: "dt1", Namespace: ns, UID: "dt1-uid", Finalizers: []string{finDT}},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: retain,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "ns1", APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "s1",
			},
		},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: available},
	}
	setErrorOccurred(&t.Status.Conditions, "", now)
	for _, o := range opts {
		o(t)
	}
	return t
}

func ofClass(c string) targetOpt {
	return func(t *targetT) { t.Spec.DeploymentTargetClassName = appstudiov1alpha1.DeploymentTargetClassName(c) }
}
func claiming(c string) targetOpt { return func(t *targetT) { t.Spec.ClaimRef = c } }
func inPhase(p appstudiov1alpha1.DeploymentTargetPhase) targetOpt {
	return func(t *targetT) { t.Status.Phase = p }
}

// boundTo is a target the binder bound to claim c (newClaim(c)): its claimRef and UID.
func boundTo(c string) targetOpt {
	return func(t *targetT) { claiming(c)(t); ofClaimUID(c + "-uid")(t); inPhase(bound)(t) }
}

// ofClaimUID is a target that records the UID of the claim it was bound to.
func ofClaimUID(uid string) targetOpt {
	return func(t *targetT) {
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		t.Annotations[appstudiov1alpha1.AnnClaimUID] = uid
	}
}
func withFinalizers(f ...string) targetOpt {
	return func(t *targetT) { t.Finalizers = f }
}
func noConditions(t *targetT) { t.Status.Conditions = nil }
func failedWith(msg string) targetOpt {
	return func(t *targetT) { setErrorOccurred(&t.Status.Conditions, msg, now) }
}
func deletedSince(ts metav1.Time) targetOpt { return func(t *targetT) { t.DeletionTimestamp = &ts } }
func provisioned(t *targetT) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[annProv] = "managed-gitops.redhat.com/namespace"
}

func newClaim(name string, opts ...func(*claimT)) *claimT {
	c := &claimT{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid")},
		Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: retain},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// boundClaim is a claim whose binding to t completed.
func boundClaim(t string) func(*claimT) {
	return func(c *claimT) {
		c.Spec.TargetName = t
		c.Annotations = map[string]string{appstudiov1alpha1.AnnBindCompleted: "true"}
		c.Status.Phase = appstudiov1alpha1.DeploymentTargetClaimPhaseBound
	}
}

func newClass(name string, policy appstudiov1alpha1.ReclaimPolicy) *classT {
	return &classT{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: "managed-gitops.redhat.com/namespace", ReclaimPolicy: policy},
	}
}

var (
	retainClass = newClass(retain, appstudiov1alpha1.ReclaimPolicyRetain)
	deleteClass = newClass(del, appstudiov1alpha1.ReclaimPolicyDelete)
)

// apply is what the server holds after p's writes (nil: the target is gone).
func apply(t *testing.T, target *targetT, p plan) *targetT {
	t.Helper()
	cur := target.DeepCopy()
	for _, a := range p.actions {
		if cur == nil {
			t.Fatalf("%s after the target is gone", a.verb)
		}
		switch a.verb {
		case verbUpdate:
			cur.Finalizers, cur.Annotations, cur.Labels = a.target.Finalizers, a.target.Annotations, a.target.Labels
			cur.Spec = a.target.Spec
			if cur.DeletionTimestamp != nil && len(cur.Finalizers) == 0 {
				cur = nil
			}
		case verbUpdateStatus:
			cur.Status = a.target.Status
		case verbDelete:
			if len(cur.Finalizers) == 0 {
				cur = nil
			} else if cur.DeletionTimestamp == nil {
				cur.DeletionTimestamp = &now
			}
		}
	}
	return cur
}

type reclaimCase struct {
	name         string
	target       *targetT
	class        *classT
	claim        *claimT
	want         *targetT // nil: gone
	wantEvents   []string
	wantRequeue  time.Duration
	wantNoWrites bool
}

func runReclaimCases(t *testing.T, cases []reclaimCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := state{target: tc.target, class: tc.class, claim: tc.claim}
			p := planTarget(s, now)
			if got := apply(t, tc.target, p); !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("target:\n%s\nwant:\n%s", dump.Pretty(got), dump.Pretty(tc.want))
			}
			var events []string
			for _, e := range p.events {
				events = append(events, e.String())
			}
			if strings.Join(events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
			if p.requeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.requeueAfter, tc.wantRequeue)
			}
			if tc.wantNoWrites && len(p.actions) > 0 {
				t.Errorf("%d writes, want none", len(p.actions))
			}
		})
	}
}

// Set 1: a live target.
func TestSyncLiveTarget(t *testing.T) {
	runReclaimCases(t, []reclaimCase{
		{
			name:   "1-1 a new target gets the DT finalizer and the Success condition",
			target: newTarget(withFinalizers(), noConditions),
			class:  retainClass,
			want:   newTarget(),
		},
		{
			name:         "1-2 an unclaimed target: nothing to write",
			target:       newTarget(),
			class:        retainClass,
			want:         newTarget(),
			wantNoWrites: true,
		},
		{
			name:   "1-3 missing class: nothing is reclaimed (the original returned silently)",
			target: newTarget(ofClass("missing"), boundTo("c1")),
			want:   newTarget(ofClass("missing"), boundTo("c1")),
		},
		{
			name:   "1-4 a reclaim policy neither Delete nor Retain: the reference's error",
			target: newTarget(ofClass("odd"), boundTo("c1")),
			class:  newClass("odd", "Recycle"),
			want:   newTarget(ofClass("odd"), boundTo("c1"), failedWith(msgUnexpectedReclaimPolicy)),
			wantEvents: []string{
				`Warning UnexpectedReclaimPolicy unexpected reclaim policy value on DeploymentTargetClass odd: "Recycle"`,
			},
		},
		{
			name:       "1-5 Retain: the claim is gone: the target is released (claimRef cleared, Released)",
			target:     newTarget(boundTo("c1")),
			class:      retainClass,
			want:       newTarget(inPhase(released)),
			wantEvents: []string{"Normal Released Released: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass gold has reclaimPolicy Retain"},
		},
		{
			name:       "1-6 Delete: the claim is gone: the target is marked Released and deleted",
			target:     newTarget(ofClass(del), boundTo("c1")),
			class:      deleteClass,
			want:       newTarget(ofClass(del), boundTo("c1"), inPhase(released), deletedSince(now)),
			wantEvents: []string{"Normal Deleted Deleting: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
		{
			name:       "1-6b Retain: the claim of the name is a later one (another UID): the target's claim is gone, it is released",
			target:     newTarget(boundTo("c1"), ofClaimUID("deleted-uid")),
			class:      retainClass,
			claim:      newClaim("c1"),
			want:       newTarget(inPhase(released)),
			wantEvents: []string{"Normal Released Released: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass gold has reclaimPolicy Retain"},
		},
		{
			name:       "1-6c Delete: the claim of the name is a later one (another UID): the user's target is deleted, as for a claim gone",
			target:     newTarget(ofClass(del), boundTo("c1"), ofClaimUID("deleted-uid")),
			class:      deleteClass,
			claim:      newClaim("c1"),
			want:       newTarget(ofClass(del), boundTo("c1"), ofClaimUID("deleted-uid"), inPhase(released), deletedSince(now)),
			wantEvents: []string{"Normal Deleted Deleting: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
		{
			name:       "1-7 Delete: a target provisioned for a claim that went before binding it is deleted",
			target:     newTarget(ofClass(del), claiming("c1"), provisioned),
			class:      deleteClass,
			want:       newTarget(ofClass(del), claiming("c1"), provisioned, inPhase(released), deletedSince(now)),
			wantEvents: []string{"Normal Deleted Deleting: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
		{
			name:         "1-8 Retain: a user's target pre-bound to a claim still to come waits for it",
			target:       newTarget(claiming("c1")),
			class:        retainClass,
			want:         newTarget(claiming("c1")),
			wantNoWrites: true,
		},
		{
			name:         "1-9 Delete: a user's target pre-bound to a claim still to come is not deleted",
			target:       newTarget(ofClass(del), claiming("c1")),
			class:        deleteClass,
			want:         newTarget(ofClass(del), claiming("c1")),
			wantNoWrites: true,
		},
		{
			name:         "1-10 the claim exists and is not bound yet: the binder's business",
			target:       newTarget(boundTo("c1")),
			class:        retainClass,
			claim:        newClaim("c1"),
			want:         newTarget(boundTo("c1")),
			wantNoWrites: true,
		},
		{
			name:         "1-11 the claim is bound to the target: nothing to do",
			target:       newTarget(boundTo("c1")),
			class:        retainClass,
			claim:        newClaim("c1", boundClaim("dt1")),
			want:         newTarget(boundTo("c1")),
			wantNoWrites: true,
		},
		{
			name:       "1-12 Retain: the claim is bound to another target: released",
			target:     newTarget(boundTo("c1")),
			class:      retainClass,
			claim:      newClaim("c1", boundClaim("dt2")),
			want:       newTarget(inPhase(released)),
			wantEvents: []string{"Normal Released Released: its DeploymentTargetClaim c1 is bound to DeploymentTarget dt2 and DeploymentTargetClass gold has reclaimPolicy Retain"},
		},
		{
			name:       "1-13 Delete: the claim is bound to another target: a user's target is released, not deleted",
			target:     newTarget(ofClass(del), boundTo("c1")),
			class:      deleteClass,
			claim:      newClaim("c1", boundClaim("dt2")),
			want:       newTarget(ofClass(del), inPhase(released)),
			wantEvents: []string{"Normal Released Released: its DeploymentTargetClaim c1 is bound to DeploymentTarget dt2 and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
		{
			name:       "1-14 Delete: the claim is bound to another target: a provisioned target is deleted",
			target:     newTarget(ofClass(del), claiming("c1"), provisioned),
			class:      deleteClass,
			claim:      newClaim("c1", boundClaim("dt2")),
			want:       newTarget(ofClass(del), claiming("c1"), provisioned, inPhase(released), deletedSince(now)),
			wantEvents: []string{"Normal Deleted Deleting: its DeploymentTargetClaim c1 is bound to DeploymentTarget dt2 and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
		{
			name:         "1-15 the claim is being deleted: the binder hands the target back",
			target:       newTarget(ofClass(del), boundTo("c1")),
			class:        deleteClass,
			claim:        newClaim("c1", boundClaim("dt1"), func(c *claimT) { c.DeletionTimestamp = &deletedAt }),
			want:         newTarget(ofClass(del), boundTo("c1")),
			wantNoWrites: true,
		},
		{
			name:         "1-16 a released target stays Released, free to be bound again",
			target:       newTarget(inPhase(released)),
			class:        retainClass,
			want:         newTarget(inPhase(released)),
			wantNoWrites: true,
		},
		{
			name:       "1-17 Delete: a Released target whose deletion did not go through is deleted",
			target:     newTarget(ofClass(del), claiming("c1"), inPhase(released)),
			class:      deleteClass,
			want:       newTarget(ofClass(del), claiming("c1"), inPhase(released), deletedSince(now)),
			wantEvents: []string{"Normal Deleted Deleting: its DeploymentTargetClaim c1 is gone and DeploymentTargetClass bronze has reclaimPolicy Delete"},
		},
	})
}

// Set 2: a target being deleted.
func TestSyncDeletedTarget(t *testing.T) {
	timedOut := msgDeletionTimedOut([]string{finProv})
	runReclaimCases(t, []reclaimCase{
		{
			name:   "2-1 only the DT finalizer: it goes, and the target with it",
			target: newTarget(ofClass(del), deletedSince(deletedAt)),
			class:  deleteClass,
		},
		{
			name:   "2-2 the class is missing: the finalizer goes all the same",
			target: newTarget(ofClass("missing"), deletedSince(deletedAt)),
		},
		{
			name:        "2-3 the provisioner still holds it: the DT finalizer goes; looked at again when the timeout is up",
			target:      newTarget(ofClass(del), withFinalizers(finDT, finProv), deletedSince(deletedAt)),
			class:       deleteClass,
			want:        newTarget(ofClass(del), withFinalizers(finProv), deletedSince(deletedAt)),
			wantRequeue: 90 * time.Second,
		},
		{
			name:       "2-4 still held 2 minutes after its deletion: Failed",
			target:     newTarget(ofClass(del), withFinalizers(finProv), deletedSince(longAgo)),
			class:      deleteClass,
			want:       newTarget(ofClass(del), withFinalizers(finProv), deletedSince(longAgo), inPhase(failed), failedWith(timedOut)),
			wantEvents: []string{"Warning DeletionTimedOut " + timedOut},
		},
		{
			name:         "2-5 Failed already: nothing more",
			target:       newTarget(ofClass(del), withFinalizers(finProv), deletedSince(longAgo), inPhase(failed), failedWith(timedOut)),
			class:        deleteClass,
			want:         newTarget(ofClass(del), withFinalizers(finProv), deletedSince(longAgo), inPhase(failed), failedWith(timedOut)),
			wantNoWrites: true,
		},
	})
}
