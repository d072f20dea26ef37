package deploymenttargetbinder

import (
	"reflect"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/dump"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// The tables below follow Kubernetes' PersistentVolume binder tests (binder_test.go): each
// case is the objects before one sync of the claim, and the objects and Events after it. The
// objects after are what the server would hold once the plan's writes are applied in order.

const ns = "tenant"

var (
	now     = metav1.NewTime(time.Unix(2000, 0))
	earlier = metav1.NewTime(time.Unix(1000, 0))
)

const (
	gold   = "gold"   // class with reclaimPolicy Retain
	bronze = "bronze" // class with reclaimPolicy Delete
)

const (
	annBound      = appstudiov1alpha1.AnnBindCompleted
	annByCtrl     = appstudiov1alpha1.AnnBoundByController
	annProv       = appstudiov1alpha1.AnnTargetProvisioner
	annProvBy     = appstudiov1alpha1.AnnDynamicallyProvisioned
	finBinder     = appstudiov1alpha1.FinalizerBinder
	finTarget     = appstudiov1alpha1.DeploymentTargetFinalizer
	nsProvisioner = "managed-gitops.redhat.com/namespace"
)

const (
	claimPending = appstudiov1alpha1.DeploymentTargetClaimPhasePending
	claimBound   = appstudiov1alpha1.DeploymentTargetClaimPhaseBound
	claimLost    = appstudiov1alpha1.DeploymentTargetClaimPhaseLost

	targetAvailable = appstudiov1alpha1.DeploymentTargetPhaseAvailable
	targetBound     = appstudiov1alpha1.DeploymentTargetPhaseBound
	targetReleased  = appstudiov1alpha1.DeploymentTargetPhaseReleased
	targetFailed    = appstudiov1alpha1.DeploymentTargetPhaseFailed
	targetPending   = appstudiov1alpha1.DeploymentTargetPhasePending
)

type claimOpt func(*claimT)

// newClaim is claim "c1" of class gold, with the binder's finalizer, and the options applied.
func newClaim(opts ...claimOpt) *claimT {
	c := &claimT{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns, UID: "c1-uid", Finalizers: []string{finBinder}},
		Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: gold},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func named(n string) claimOpt { return func(c *claimT) { c.Name, c.UID = n, types.UID(n+"-uid") } }
func ofClass(cl string) claimOpt {
	return func(c *claimT) { c.Spec.DeploymentTargetClassName = appstudiov1alpha1.DeploymentTargetClassName(cl) }
}
func targeting(t string) claimOpt { return func(c *claimT) { c.Spec.TargetName = t } }
func inPhase(p appstudiov1alpha1.DeploymentTargetClaimPhase) claimOpt {
	return func(c *claimT) { c.Status.Phase = p }
}
func annotated(kv ...string) claimOpt {
	return func(c *claimT) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			c.Annotations[kv[i]] = kv[i+1]
		}
	}
}
func noFinalizer(c *claimT) { c.Finalizers = nil }
func deleting(c *claimT)    { c.DeletionTimestamp = &earlier }

// bound is a claim whose binding completed, by the controller, to t.
func bound(t string) claimOpt {
	return func(c *claimT) {
		targeting(t)(c)
		annotated(annBound, "true", annByCtrl, "true")(c)
		inPhase(claimBound)(c)
	}
}

// ok is the condition of a sync without a problem; failed one with.
func ok(c *claimT) { setErrorOccurred(&c.Status.Conditions, nil, now) }
func failed(msg string) claimOpt {
	return func(c *claimT) { setErrorOccurred(&c.Status.Conditions, &problem{message: msg}, now) }
}

type targetOpt func(*targetT)

// newTarget is an Available target of class gold with credentials.
func newTarget(name string, opts ...targetOpt) *targetT {
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid")},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: gold,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: name, APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: name + "-secret",
			},
		},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: targetAvailable},
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

func claiming(c string) targetOpt { return func(t *targetT) { t.Spec.ClaimRef = c } }
func targetPhase(p appstudiov1alpha1.DeploymentTargetPhase) targetOpt {
	return func(t *targetT) { t.Status.Phase = p }
}
func targetClass(cl string) targetOpt {
	return func(t *targetT) { t.Spec.DeploymentTargetClassName = appstudiov1alpha1.DeploymentTargetClassName(cl) }
}
func targetFinalizers(f ...string) targetOpt { return func(t *targetT) { t.Finalizers = f } }
func targetDeleting(t *targetT)              { t.DeletionTimestamp = &earlier }
func targetDeleted(t *targetT)               { t.DeletionTimestamp = &now }
func noCredentials(t *targetT) {
	t.Spec.KubernetesClusterCredentials = appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{}
}
func provisioned(t *targetT) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[annProvBy] = nsProvisioner
}

// boundTo is a target the binder bound to claim c (named(c)): its claimRef and UID.
func boundTo(c string) targetOpt {
	return func(t *targetT) { claiming(c)(t); ofClaimUID(c + "-uid")(t); targetPhase(targetBound)(t) }
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

func newClass(name string, policy appstudiov1alpha1.ReclaimPolicy) *classT {
	return &classT{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: nsProvisioner, ReclaimPolicy: policy},
	}
}

var bothClasses = []*classT{newClass(gold, appstudiov1alpha1.ReclaimPolicyRetain), newClass(bronze, appstudiov1alpha1.ReclaimPolicyDelete)}

func targets(t ...*targetT) []*targetT { return t }

func stateOf(claim *claimT, ts []*targetT, classes []*classT) state {
	s := state{claim: claim, classes: map[appstudiov1alpha1.DeploymentTargetClassName]*classT{}}
	for _, t := range ts {
		s.targets = append(s.targets, t.DeepCopy())
	}
	for _, c := range classes {
		s.classes[appstudiov1alpha1.DeploymentTargetClassName(c.Name)] = c
	}
	return s
}

// apply is what the server holds after p's writes: an update writes metadata and spec, a
// status update the status, a delete marks an object with finalizers deleted and removes one
// without, and an object marked deleted goes once its last finalizer does.
func apply(t *testing.T, s state, p plan) (*claimT, []*targetT) {
	t.Helper()
	claim := s.claim.DeepCopy()
	byName := map[string]*targetT{}
	var order []string
	for _, tg := range s.targets {
		byName[tg.Name] = tg.DeepCopy()
		order = append(order, tg.Name)
	}
	for _, a := range p.actions {
		if a.target != nil {
			cur := byName[a.target.Name]
			if cur == nil {
				continue // gone: the controller leaves it
			}
			switch a.verb {
			case verbUpdate:
				cur.Finalizers, cur.Annotations, cur.Labels = a.target.Finalizers, a.target.Annotations, a.target.Labels
				cur.Spec = a.target.Spec
				if cur.DeletionTimestamp != nil && len(cur.Finalizers) == 0 {
					delete(byName, cur.Name)
				}
			case verbUpdateStatus:
				cur.Status = a.target.Status
			case verbDelete:
				if len(cur.Finalizers) == 0 {
					delete(byName, cur.Name)
				} else if cur.DeletionTimestamp == nil {
					cur.DeletionTimestamp = &now
				}
			}
			continue
		}
		if claim == nil {
			t.Fatalf("write of a claim that is gone: %v", a.verb)
		}
		switch a.verb {
		case verbUpdate:
			claim.Finalizers, claim.Annotations, claim.Labels = a.claim.Finalizers, a.claim.Annotations, a.claim.Labels
			claim.Spec = a.claim.Spec
			if claim.DeletionTimestamp != nil && len(claim.Finalizers) == 0 {
				claim = nil
			}
		case verbUpdateStatus:
			claim.Status = a.claim.Status
		default:
			t.Fatalf("%s of a claim", a.verb)
		}
	}
	var out []*targetT
	for _, n := range order {
		if tg := byName[n]; tg != nil {
			out = append(out, tg)
		}
	}
	return claim, out
}

type binderCase struct {
	name         string
	claim        *claimT
	targets      []*targetT
	classes      []*classT
	wantClaim    *claimT // nil: the claim is gone
	wantTargets  []*targetT
	wantEvents   []string
	wantNoWrites bool
}

func runBinderCases(t *testing.T, cases []binderCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			classes := tc.classes
			if classes == nil {
				classes = bothClasses
			}
			s := stateOf(tc.claim, tc.targets, classes)
			p := planClaim(s, now)
			gotClaim, gotTargets := apply(t, s, p)
			if !apiequality.Semantic.DeepEqual(gotClaim, tc.wantClaim) {
				t.Errorf("claim:\n%s\nwant:\n%s", dump.Pretty(gotClaim), dump.Pretty(tc.wantClaim))
			}
			if !apiequality.Semantic.DeepEqual(gotTargets, tc.wantTargets) {
				t.Errorf("targets:\n%s\nwant:\n%s", dump.Pretty(gotTargets), dump.Pretty(tc.wantTargets))
			}
			var events []string
			for _, e := range p.events {
				events = append(events, e.String())
			}
			if strings.Join(events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
			if tc.wantNoWrites && len(p.actions) > 0 {
				t.Errorf("%d writes, want none", len(p.actions))
			}
		})
	}
}

func mismatchMsg(target, why string) string {
	return "DeploymentTarget does not match the specified DeploymentTargetClaim: DeploymentTarget " + target +
		" does not match DeploymentTargetClaim c1 in namespace tenant: " + why
}

const lostMsg = "failed to process bound DeploymentTargetClaim: DeploymentTarget not found for a bounded DeploymentTargetClaim c1 in namespace tenant"

// Set 1: a claim that names no target (reference: findMatchingDTForDTC, dynamic provisioning;
// PV: syncUnboundClaim, volumeName empty).
func TestSyncUnboundClaimWithoutTarget(t *testing.T) {
	runBinderCases(t, []binderCase{
		{
			name:       "1-1 a new claim gets the binder's finalizer; no class, no target: Pending",
			claim:      newClaim(noFinalizer, ofClass("")),
			wantClaim:  newClaim(ofClass(""), inPhase(claimPending), ok),
			wantEvents: nil,
		},
		{
			name:        "1-2 best match: the only Available target of the class is bound, by the controller",
			claim:       newClaim(),
			targets:     targets(newTarget("dt1")),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "1-3 best match: the first by name of several Available targets",
			claim:       newClaim(),
			targets:     targets(newTarget("dt-b"), newTarget("dt-a"), newTarget("dt-c")),
			wantClaim:   newClaim(bound("dt-a"), ok),
			wantTargets: targets(newTarget("dt-b"), newTarget("dt-a", boundTo("c1")), newTarget("dt-c")),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt-a"},
		},
		{
			name:        "1-4 best match: a target that already claims the claim (binder stopped between its writes) wins over the first by name",
			claim:       newClaim(),
			targets:     targets(newTarget("dt-a"), newTarget("dt-z", boundTo("c1"))),
			wantClaim:   newClaim(bound("dt-z"), ok),
			wantTargets: targets(newTarget("dt-a"), newTarget("dt-z", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt-z"},
		},
		{
			name:        "1-5 a target with no phase yet matches",
			claim:       newClaim(),
			targets:     targets(newTarget("dt1", targetPhase(""))),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "1-6 a Released target whose claimRef is cleared (Retain) is bound again",
			claim:       newClaim(),
			targets:     targets(newTarget("dt1", targetPhase(targetReleased))),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:  "1-7 no target matches (another class, claimed, Bound, Released with a claimRef, Failed, Pending, deleting, no credentials, bound to an earlier claim of the name): the claim waits for its class's provisioner",
			claim: newClaim(),
			targets: targets(
				newTarget("a-other-class", targetClass(bronze)),
				newTarget("b-claimed", claiming("c2")),
				newTarget("c-bound", boundTo("c2")),
				newTarget("d-released", claiming("c2"), targetPhase(targetReleased)),
				newTarget("e-failed", targetPhase(targetFailed)),
				newTarget("f-pending", targetPhase(targetPending)),
				newTarget("g-deleting", targetDeleting, targetFinalizers(finTarget)),
				newTarget("h-no-credentials", noCredentials),
				newTarget("i-earlier-claim-of-the-name", boundTo("c1"), ofClaimUID("deleted-uid")),
			),
			wantClaim: newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			wantTargets: targets(
				newTarget("a-other-class", targetClass(bronze)),
				newTarget("b-claimed", claiming("c2")),
				newTarget("c-bound", boundTo("c2")),
				newTarget("d-released", claiming("c2"), targetPhase(targetReleased)),
				newTarget("e-failed", targetPhase(targetFailed)),
				newTarget("f-pending", targetPhase(targetPending)),
				newTarget("g-deleting", targetDeleting, targetFinalizers(finTarget)),
				newTarget("h-no-credentials", noCredentials),
				newTarget("i-earlier-claim-of-the-name", boundTo("c1"), ofClaimUID("deleted-uid")),
			),
			wantEvents: []string{"Normal WaitingForProvisioner Waiting for a DeploymentTarget of class gold to be provisioned by " + nsProvisioner},
		},
		{
			name:       "1-8 dynamic provisioning: no target at all, the class has a provisioner: the provisioner annotation, Pending",
			claim:      newClaim(inPhase(claimPending)),
			wantClaim:  newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			wantEvents: []string{"Normal WaitingForProvisioner Waiting for a DeploymentTarget of class gold to be provisioned by " + nsProvisioner},
		},
		{
			name:         "1-9 dynamic provisioning: an annotated claim waits for its provisioner and ignores an Available target that does not claim it",
			claim:        newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			targets:      targets(newTarget("dt1")),
			wantClaim:    newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			wantTargets:  targets(newTarget("dt1")),
			wantNoWrites: true,
		},
		{
			name:        "1-10 dynamic provisioning: the target the provisioner made for the claim is bound",
			claim:       newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			targets:     targets(newTarget("dt1"), newTarget("c1-dt", claiming("c1"), provisioned)),
			wantClaim:   newClaim(annotated(annProv, gold), bound("c1-dt"), ok),
			wantTargets: targets(newTarget("dt1"), newTarget("c1-dt", boundTo("c1"), provisioned)),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget c1-dt"},
		},
		{
			name:       "1-11 missing class: Pending and the reference's error",
			claim:      newClaim(ofClass("missing")),
			wantClaim:  newClaim(ofClass("missing"), inPhase(claimPending), failed("DeploymentTargetClaim c1 does not have a matching DeploymentTargetClass missing: the resource could not be found on the cluster")),
			wantEvents: []string{"Warning ClassNotFound DeploymentTargetClaim c1 does not have a matching DeploymentTargetClass missing: the resource could not be found on the cluster"},
		},
		{
			name:         "1-12 missing class already reported: nothing written, no second Event",
			claim:        newClaim(ofClass("missing"), inPhase(claimPending), failed("DeploymentTargetClaim c1 does not have a matching DeploymentTargetClass missing: the resource could not be found on the cluster")),
			wantClaim:    newClaim(ofClass("missing"), inPhase(claimPending), failed("DeploymentTargetClaim c1 does not have a matching DeploymentTargetClass missing: the resource could not be found on the cluster")),
			wantNoWrites: true,
		},
		{
			name:        "1-13 missing class: a matching target is bound all the same (the class is needed only to provision)",
			claim:       newClaim(ofClass("missing")),
			targets:     targets(newTarget("dt1", targetClass("missing"))),
			classes:     []*classT{},
			wantClaim:   newClaim(ofClass("missing"), bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", targetClass("missing"), boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name: "1-14 the class is back: the problem is resolved",
			claim: newClaim(inPhase(claimPending), func(c *claimT) {
				setErrorOccurred(&c.Status.Conditions, &problem{message: "x"}, earlier)
			}),
			wantClaim:  newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			wantEvents: []string{"Normal WaitingForProvisioner Waiting for a DeploymentTarget of class gold to be provisioned by " + nsProvisioner},
		},
	})
}

// Set 2: a claim that names its target (PV: syncUnboundClaim, volumeName set).
func TestSyncUnboundClaimWithTarget(t *testing.T) {
	runBinderCases(t, []binderCase{
		{
			name:      "2-1 the named target does not exist: Pending, no problem",
			claim:     newClaim(targeting("dt1")),
			targets:   targets(newTarget("dt2")),
			wantClaim: newClaim(targeting("dt1"), inPhase(claimPending), ok),
			// dt2 is not looked at for a claim that names dt1.
			wantTargets: targets(newTarget("dt2")),
		},
		{
			name:        "2-2 the named target is unclaimed and matches: bound, not by the controller",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1")),
			wantClaim:   newClaim(targeting("dt1"), annotated(annBound, "true"), inPhase(claimBound), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "2-3 the named target claims the claim (pre-bound by its maker): bound",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", claiming("c1"))),
			wantClaim:   newClaim(targeting("dt1"), annotated(annBound, "true"), inPhase(claimBound), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "2-4 the named target is claimed by another claim: Pending and the reference's error",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", boundTo("c2"))),
			wantClaim:   newClaim(targeting("dt1"), inPhase(claimPending), failed(msgAlreadyClaimed)),
			wantTargets: targets(newTarget("dt1", boundTo("c2"))),
			wantEvents:  []string{"Warning AlreadyClaimed " + msgAlreadyClaimed},
		},
		{
			name:        "2-4b the named target is bound to an earlier claim of this name (another UID): claimed by another, Pending",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", boundTo("c1"), ofClaimUID("deleted-uid"))),
			wantClaim:   newClaim(targeting("dt1"), inPhase(claimPending), failed(msgAlreadyClaimed)),
			wantTargets: targets(newTarget("dt1", boundTo("c1"), ofClaimUID("deleted-uid"))),
			wantEvents:  []string{"Warning AlreadyClaimed " + msgAlreadyClaimed},
		},
		{
			name:        "2-5 the named target is of another class: Pending, does not match",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", targetClass(bronze))),
			wantClaim:   newClaim(targeting("dt1"), inPhase(claimPending), failed(mismatchMsg("dt1", mismatchClass))),
			wantTargets: targets(newTarget("dt1", targetClass(bronze))),
			wantEvents:  []string{"Warning TargetMismatch " + mismatchMsg("dt1", mismatchClass)},
		},
		{
			name:        "2-6 the named target is Failed: Pending, not Available",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", targetPhase(targetFailed))),
			wantClaim:   newClaim(targeting("dt1"), inPhase(claimPending), failed(mismatchMsg("dt1", mismatchPhase))),
			wantTargets: targets(newTarget("dt1", targetPhase(targetFailed))),
			wantEvents:  []string{"Warning TargetMismatch " + mismatchMsg("dt1", mismatchPhase)},
		},
		{
			name:        "2-7 the named target has no credentials: Pending, does not match",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1", noCredentials)),
			wantClaim:   newClaim(targeting("dt1"), inPhase(claimPending), failed(mismatchMsg("dt1", mismatchCredentials))),
			wantTargets: targets(newTarget("dt1", noCredentials)),
			wantEvents:  []string{"Warning TargetMismatch " + mismatchMsg("dt1", mismatchCredentials)},
		},
		{
			name:        "2-8 the binder stopped after writing the named target: the binding completes",
			claim:       newClaim(targeting("dt1"), inPhase(claimPending)),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(targeting("dt1"), annotated(annBound, "true"), inPhase(claimBound), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "2-9 a target that claims the claim while the claim names another is left to the reclaim controller; the named one is bound",
			claim:       newClaim(targeting("dt1")),
			targets:     targets(newTarget("dt1"), newTarget("dt0", boundTo("c1"))),
			wantClaim:   newClaim(targeting("dt1"), annotated(annBound, "true"), inPhase(claimBound), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1")), newTarget("dt0", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
	})
}

// Set 3: a claim whose binding completed (reference: handleBoundedDeploymentTargetClaim; PV:
// syncBoundClaim).
func TestSyncBoundClaim(t *testing.T) {
	runBinderCases(t, []binderCase{
		{
			name:         "3-1 all is bound: nothing written",
			claim:        newClaim(bound("dt1"), ok),
			targets:      targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:    newClaim(bound("dt1"), ok),
			wantTargets:  targets(newTarget("dt1", boundTo("c1"))),
			wantNoWrites: true,
		},
		{
			name:        "3-2 the binder stopped before the claim's status: Bound",
			claim:       newClaim(bound("dt1"), inPhase(claimPending)),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:       "3-3 Lost: the bound target is gone",
			claim:      newClaim(bound("dt1"), ok),
			wantClaim:  newClaim(bound("dt1"), inPhase(claimLost), failed(lostMsg)),
			wantEvents: []string{"Warning ClaimLost " + lostMsg},
		},
		{
			name:         "3-4 Lost already: nothing written, no second Event",
			claim:        newClaim(bound("dt1"), inPhase(claimLost), failed(lostMsg)),
			wantClaim:    newClaim(bound("dt1"), inPhase(claimLost), failed(lostMsg)),
			wantNoWrites: true,
		},
		{
			name:        "3-5 a Lost claim whose target is back is Bound again (the original's rule)",
			claim:       newClaim(bound("dt1"), inPhase(claimLost), failed(lostMsg)),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "3-6 the bound target lost its claimRef: bound again",
			claim:       newClaim(bound("dt1"), ok),
			targets:     targets(newTarget("dt1")),
			wantClaim:   newClaim(bound("dt1"), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
		},
		{
			name:    "3-7 the bound target claims another claim: the reference's error, the phase stays",
			claim:   newClaim(bound("dt1"), ok),
			targets: targets(newTarget("dt1", boundTo("c2"))),
			wantClaim: newClaim(bound("dt1"), failed(msgBoundFailed+
				`cannot bind DeploymentTargetClaim c1 with target "dt1" to DeploymentTarget dt1 with claim ref "c2": `+conflictClaimedByOther)),
			wantTargets: targets(newTarget("dt1", boundTo("c2"))),
			wantEvents: []string{"Warning BindingConflict " + msgBoundFailed +
				`cannot bind DeploymentTargetClaim c1 with target "dt1" to DeploymentTarget dt1 with claim ref "c2": ` + conflictClaimedByOther},
		},
		{
			name:        "3-8 no targetName: the one target that claims the claim is its target",
			claim:       newClaim(annotated(annBound, "true"), inPhase(claimPending)),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(annotated(annBound, "true"), inPhase(claimBound), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
			wantEvents:  []string{"Normal Bound Bound to DeploymentTarget dt1"},
		},
		{
			name:        "3-9 no targetName: two targets claim the claim",
			claim:       newClaim(annotated(annBound, "true"), inPhase(claimBound)),
			targets:     targets(newTarget("dt1", boundTo("c1")), newTarget("dt2", boundTo("c1"))),
			wantClaim:   newClaim(annotated(annBound, "true"), inPhase(claimBound), failed(msgBoundFailed+"multiple DeploymentTargets found for a bounded DeploymentTargetClaim c1")),
			wantTargets: targets(newTarget("dt1", boundTo("c1")), newTarget("dt2", boundTo("c1"))),
			wantEvents:  []string{"Warning BindingConflict " + msgBoundFailed + "multiple DeploymentTargets found for a bounded DeploymentTargetClaim c1"},
		},
		{
			name:        "3-10 the provisioner annotation follows a changed class name",
			claim:       newClaim(bound("dt1"), annotated(annProv, "old"), ok),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(bound("dt1"), annotated(annProv, gold), ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
		},
		{
			name:        "3-11 the provisioner annotation goes with the class name",
			claim:       newClaim(ofClass(""), bound("dt1"), annotated(annProv, gold), ok),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:   newClaim(ofClass(""), bound("dt1"), func(c *claimT) { delete(c.Annotations, annProv) }, ok),
			wantTargets: targets(newTarget("dt1", boundTo("c1"))),
		},
	})
}

// Set 4: a deleted claim (reference: handleDTCDeletion; PV: the claim side of reclaim).
func TestSyncDeletedClaim(t *testing.T) {
	runBinderCases(t, []binderCase{
		{
			name:  "4-1 a Pending claim: its finalizer goes",
			claim: newClaim(deleting, inPhase(claimPending)),
			// The target of the class is none of its business.
			targets:     targets(newTarget("dt1")),
			wantTargets: targets(newTarget("dt1")),
		},
		{
			name:        "4-2 a bound claim, class Retain: the target is kept, with the DT finalizer, claimRef cleared, Released",
			claim:       newClaim(deleting, bound("dt1"), ok),
			targets:     targets(newTarget("dt1", boundTo("c1"))),
			wantTargets: targets(newTarget("dt1", targetFinalizers(finTarget), targetPhase(targetReleased))),
			wantEvents:  []string{"Normal TargetReleased Released DeploymentTarget dt1"},
		},
		{
			name:        "4-3 a bound claim, class Delete: the target is deleted, then its claimRef cleared and Released",
			claim:       newClaim(ofClass(bronze), deleting, bound("dt1"), ok),
			targets:     targets(newTarget("dt1", targetClass(bronze), boundTo("c1"))),
			wantTargets: targets(newTarget("dt1", targetClass(bronze), targetFinalizers(finTarget), targetDeleted, targetPhase(targetReleased))),
			wantEvents: []string{
				"Normal TargetDeleted Deleted DeploymentTarget dt1: its class bronze has reclaimPolicy Delete",
				"Normal TargetReleased Released DeploymentTarget dt1",
			},
		},
		{
			name:        "4-4 a bound claim whose target is already being deleted: not deleted again, no finalizer added, released",
			claim:       newClaim(ofClass(bronze), deleting, bound("dt1"), ok),
			targets:     targets(newTarget("dt1", targetClass(bronze), boundTo("c1"), targetDeleting, targetFinalizers("other"))),
			wantTargets: targets(newTarget("dt1", targetClass(bronze), targetDeleting, targetFinalizers("other"), targetPhase(targetReleased))),
			wantEvents:  []string{"Normal TargetReleased Released DeploymentTarget dt1"},
		},
		{
			name:        "4-5 a bound claim whose target's class is missing: the reference's error, the finalizer stays",
			claim:       newClaim(deleting, bound("dt1"), ok),
			targets:     targets(newTarget("dt1", boundTo("c1"), targetClass("missing"))),
			wantClaim:   newClaim(deleting, bound("dt1"), failed(msgClassOfTargetAbsent)),
			wantTargets: targets(newTarget("dt1", boundTo("c1"), targetClass("missing"))),
			wantEvents:  []string{"Warning ClassNotFound " + msgClassOfTargetAbsent},
		},
		{
			name:  "4-6 a bound claim whose target is gone: its finalizer goes",
			claim: newClaim(deleting, bound("dt1"), inPhase(claimBound)),
		},
		{
			name:        "4-7 a bound claim whose target claims another claim: the target is left alone",
			claim:       newClaim(deleting, bound("dt1"), ok),
			targets:     targets(newTarget("dt1", boundTo("c2"))),
			wantTargets: targets(newTarget("dt1", boundTo("c2"))),
		},
		{
			name:         "4-8 a deleted claim without the binder's finalizer: nothing written",
			claim:        newClaim(deleting, noFinalizer, func(c *claimT) { c.Finalizers = []string{"other"} }, bound("dt1")),
			targets:      targets(newTarget("dt1", boundTo("c1"))),
			wantClaim:    newClaim(deleting, noFinalizer, func(c *claimT) { c.Finalizers = []string{"other"} }, bound("dt1")),
			wantTargets:  targets(newTarget("dt1", boundTo("c1"))),
			wantNoWrites: true,
		},
	})
}

// Set 5: the four binding conflicts of checkForBindingConflict.
func TestBindingConflict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claim  *claimT
		target *targetT
		want   string
	}{
		{"conflict 1: the claim names the target, which claims another claim", newClaim(targeting("dt1")), newTarget("dt1", claiming("c2")),
			`cannot bind DeploymentTargetClaim c1 with target "dt1" to DeploymentTarget dt1 with claim ref "c2": ` + conflictClaimedByOther},
		{"conflict 2: the claim names no target, the target claims another claim", newClaim(), newTarget("dt1", claiming("c2")),
			`cannot bind DeploymentTargetClaim c1 with target "" to DeploymentTarget dt1 with claim ref "c2": ` + conflictClaimedByOther},
		{"conflict 3: the target claims the claim, which names another target", newClaim(targeting("dt2")), newTarget("dt1", claiming("c1")),
			`cannot bind DeploymentTargetClaim c1 with target "dt2" to DeploymentTarget dt1 with claim ref "c1": ` + conflictTargetsOther},
		{"conflict 4: the target claims nothing, the claim names another target", newClaim(targeting("dt2")), newTarget("dt1"),
			`cannot bind DeploymentTargetClaim c1 with target "dt2" to DeploymentTarget dt1 with claim ref "": ` + conflictTargetsOther},
		{"no conflict: each names the other", newClaim(targeting("dt1")), newTarget("dt1", claiming("c1")), ""},
		{"no conflict: neither names anything", newClaim(), newTarget("dt1"), ""},
		{"no conflict: the claim names the target, which claims nothing", newClaim(targeting("dt1")), newTarget("dt1"), ""},
	} {
		if got := bindingConflict(tc.claim, tc.target); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		// A conflict is a mismatch too: such a target is never bound.
		if got := doesTargetMatchClaim(tc.target, tc.claim); (got == "") != (tc.want == "") {
			t.Errorf("%s: match %q", tc.name, got)
		}
	}
}

// The binding writes the target first, then the claim, as the PV binder does: the order the
// crash test of controller_test.go relies on.
func TestBindWritesTargetThenClaim(t *testing.T) {
	p := planClaim(stateOf(newClaim(noFinalizer), targets(newTarget("dt1")), bothClasses), now)
	var got []string
	for _, a := range p.actions {
		kind := "claim"
		if a.target != nil {
			kind = "target"
		}
		got = append(got, string(a.verb)+" "+kind)
	}
	want := []string{"update claim", "update target", "updateStatus target", "update claim", "updateStatus claim"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writes %v, want %v (the finalizer first, then the target, then the claim)", got, want)
	}
}

// A claim of a Dev Sandbox class waits for a target made through a SpaceRequest: where the
// cluster does not serve that API, the claim says so (and looks again), instead of waiting in
// silence; where it does, it waits for the sandbox operator like any provisioner.
func TestDevSandboxClass(t *testing.T) {
	sandbox := newClass(gold, appstudiov1alpha1.ReclaimPolicyDelete)
	sandbox.Spec.Provisioner = appstudiov1alpha1.ProvisionerDevSandbox
	msg := "DeploymentTargetClaim c1 has class gold of provisioner appstudio.redhat.com/devsandbox, which makes targets through " +
		"SpaceRequests (toolchain.dev.openshift.com/v1alpha1), and this cluster does not serve that API: no DeploymentTarget " +
		"will be provisioned until a Dev Sandbox operator is installed; use a class of provisioner managed-gitops.redhat.com/namespace, or name a target"
	for _, tc := range []struct {
		name        string
		served      bool
		wantClaim   *claimT
		wantEvents  []string
		wantRequeue time.Duration
	}{
		{name: "not served: the reason, and a look again in a minute", served: false,
			wantClaim: newClaim(annotated(annProv, gold), inPhase(claimPending), failed(msg)),
			wantEvents: []string{
				"Normal WaitingForProvisioner Waiting for a DeploymentTarget of class gold to be provisioned by appstudio.redhat.com/devsandbox",
				"Warning SpaceRequestAPINotServed " + msg},
			wantRequeue: SpaceRequestRecheck},
		{name: "served: waits for the sandbox operator", served: true,
			wantClaim:  newClaim(annotated(annProv, gold), inPhase(claimPending), ok),
			wantEvents: []string{"Normal WaitingForProvisioner Waiting for a DeploymentTarget of class gold to be provisioned by appstudio.redhat.com/devsandbox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stateOf(newClaim(inPhase(claimPending)), nil, []*classT{sandbox})
			s.spaceRequestsServed = tc.served
			p := planClaim(s, now)
			gotClaim, _ := apply(t, s, p)
			if !apiequality.Semantic.DeepEqual(gotClaim, tc.wantClaim) {
				t.Errorf("claim:\n%s\nwant:\n%s", dump.Pretty(gotClaim), dump.Pretty(tc.wantClaim))
			}
			var events []string
			for _, e := range p.events {
				events = append(events, e.String())
			}
			if strings.Join(events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
			if p.requeueAfter != tc.wantRequeue {
				t.Errorf("requeueAfter %v, want %v", p.requeueAfter, tc.wantRequeue)
			}
		})
	}
}
