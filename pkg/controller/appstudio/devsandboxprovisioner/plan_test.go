package devsandboxprovisioner

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
)

const (
	ns        = "tenant"
	claimName = "preview"
	className = "sandbox"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func class(policy appstudiov1alpha1.ReclaimPolicy) *classT {
	return &classT{ObjectMeta: metav1.ObjectMeta{Name: className},
		Spec: appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: ProvisionerName, ReclaimPolicy: policy}}
}

// pendingClaim is a claim the binder marked for provisioning.
func pendingClaim() *claimT {
	return &claimT{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: ns, UID: "claim-uid", Generation: 1,
			Annotations: map[string]string{appstudiov1alpha1.AnnTargetProvisioner: className}},
		Spec:   appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: className},
		Status: appstudiov1alpha1.DeploymentTargetClaimStatus{Phase: appstudiov1alpha1.DeploymentTargetClaimPhasePending},
	}
}

// spaceRequest is a SpaceRequest labelled for the claim, with mutations.
func spaceRequest(name string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	sr := spacerequest.New(ns, "", spacerequest.TierAppStudioEnv, map[string]string{spacerequest.LabelClaim: claimName},
		map[string]string{AnnClass: className})
	sr.SetName(name)
	sr.SetUID(types.UID(name + "-uid"))
	for _, m := range mutate {
		m(sr)
	}
	return sr
}

func ready(access ...string) func(*unstructured.Unstructured) {
	return readyWith("True", "Ready", access...)
}

func readyWith(status, reason string, access ...string) func(*unstructured.Unstructured) {
	return func(sr *unstructured.Unstructured) {
		var list []interface{}
		for _, a := range access {
			list = append(list, map[string]interface{}{"name": a, "secretRef": a + "-secret"})
		}
		sr.Object["status"] = map[string]interface{}{
			"targetClusterURL": "https://sandbox.example.com:6443",
			"namespaceAccess":  list,
			"conditions":       []interface{}{map[string]interface{}{"type": "Ready", "status": status, "reason": reason, "message": "m"}},
		}
	}
}

func labelledTarget(sr *unstructured.Unstructured) {
	l := sr.GetLabels()
	l[spacerequest.LabelTarget] = TargetName(claimName)
	sr.SetLabels(l)
}

func tier(name string) func(*unstructured.Unstructured) {
	return func(sr *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(sr.Object, name, "spec", "tierName")
	}
}

func deletedAt(t time.Time) func(*unstructured.Unstructured) {
	return func(sr *unstructured.Unstructured) {
		d := metav1.NewTime(t)
		sr.SetDeletionTimestamp(&d)
		sr.SetFinalizers([]string{spacerequest.Finalizer})
	}
}

// ourTarget is the target this provisioner made for the claim.
func ourTarget(mutate ...func(*targetT)) *targetT {
	t := &targetT{
		ObjectMeta: metav1.ObjectMeta{Name: TargetName(claimName), Namespace: ns, UID: "dt-uid",
			Annotations: map[string]string{appstudiov1alpha1.AnnDynamicallyProvisioned: string(ProvisionerName)},
			Finalizers:  []string{Finalizer}},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{DeploymentTargetClassName: className, ClaimRef: claimName,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "space", APIURL: "https://sandbox.example.com:6443", ClusterCredentialsSecret: "space-secret"}},
		Status: appstudiov1alpha1.DeploymentTargetStatus{Phase: appstudiov1alpha1.DeploymentTargetPhaseBound},
	}
	for _, m := range mutate {
		m(t)
	}
	return t
}

func deleting(t *targetT) {
	d := metav1.NewTime(now.Add(-time.Minute))
	t.DeletionTimestamp = &d
}

func names(list []*unstructured.Unstructured) string {
	var out []string
	for _, sr := range list {
		out = append(out, sr.GetName())
	}
	return strings.Join(out, ",")
}

func TestPlanUnit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     state
		check func(t *testing.T, p plan)
	}{
		{
			name: "a claim marked for provisioning gets a SpaceRequest",
			s:    state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete)},
			check: func(t *testing.T, p plan) {
				sr := p.createSpaceRequest
				if sr == nil {
					t.Fatal("no SpaceRequest")
				}
				if sr.GetGenerateName() != claimName+"-" || sr.GetNamespace() != ns || spacerequest.TierName(sr) != "appstudio-env" ||
					sr.GetLabels()[spacerequest.LabelClaim] != claimName || sr.GetAnnotations()[AnnClass] != className ||
					sr.GetAPIVersion() != "toolchain.dev.openshift.com/v1alpha1" || sr.GetKind() != "SpaceRequest" {
					t.Errorf("SpaceRequest %v", sr.Object)
				}
				if p.condition == nil || p.condition.Reason != ReasonProvisioning {
					t.Errorf("condition %v", p.condition)
				}
				if len(p.events) != 1 || p.events[0].Reason != EventSpaceRequested {
					t.Errorf("events %v", p.events)
				}
			},
		},
		{
			name: "a claim not marked for provisioning gets nothing",
			s: state{claim: func() *claimT { c := pendingClaim(); c.Annotations = nil; return c }(),
				claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete)},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "a claim of another provisioner's class gets nothing",
			s: state{claim: pendingClaim(), claimClass: func() *classT {
				c := class(appstudiov1alpha1.ReclaimPolicyDelete)
				c.Spec.Provisioner = appstudiov1alpha1.ProvisionerNamespace
				return c
			}()},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "a bound claim gets nothing",
			s: state{claim: func() *claimT {
				c := pendingClaim()
				c.Annotations[appstudiov1alpha1.AnnBindCompleted] = "true"
				return c
			}(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete)},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "a claim whose SpaceRequest is not Ready waits",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc")}},
			check: func(t *testing.T, p plan) {
				if p.createSpaceRequest != nil || p.createTarget != nil {
					t.Errorf("plan %+v", p)
				}
				if p.condition == nil || !strings.Contains(p.condition.Message, "preview-abc to be Ready") {
					t.Errorf("condition %v", p.condition)
				}
			},
		},
		{
			name: "a Ready SpaceRequest with one namespace makes the target, then is labelled",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"))}},
			check: func(t *testing.T, p plan) {
				dt := p.createTarget
				if dt == nil {
					t.Fatal("no target")
				}
				want := appstudiov1alpha1.DeploymentTargetSpec{DeploymentTargetClassName: className, ClaimRef: claimName,
					KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
						DefaultNamespace: "space", APIURL: "https://sandbox.example.com:6443", ClusterCredentialsSecret: "space-secret"}}
				if dt.Name != "preview-dt" || dt.Namespace != ns || dt.Spec != want ||
					dt.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned] != "appstudio.redhat.com/devsandbox" ||
					dt.Annotations[appstudiov1alpha1.AnnClaimUID] != "claim-uid" ||
					dt.Labels[appstudiov1alpha1.AnnTargetProvisioner] != className || dt.Finalizers[0] != Finalizer ||
					dt.Status.Phase != appstudiov1alpha1.DeploymentTargetPhaseAvailable || !p.markAvailable {
					t.Errorf("target %+v", dt)
				}
				if len(p.labelSpaceRequests) != 1 || p.labelSpaceRequests[0].GetLabels()[spacerequest.LabelTarget] != "preview-dt" {
					t.Errorf("labelled %v", names(p.labelSpaceRequests))
				}
				if p.condition == nil || p.condition.Status != metav1.ConditionTrue {
					t.Errorf("condition %v", p.condition)
				}
			},
		},
		{
			name: "a Ready SpaceRequest with two namespaces is reported",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("one", "two"))}},
			check: func(t *testing.T, p plan) {
				if p.createTarget != nil {
					t.Error("a target")
				}
				if p.condition == nil || p.condition.Reason != ReasonBadSpaceRequest || len(p.events) != 1 || p.events[0].Type != "Warning" {
					t.Errorf("condition %v, events %v", p.condition, p.events)
				}
			},
		},
		{
			name: "a Ready SpaceRequest with no namespace is reported",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready())}},
			check: func(t *testing.T, p plan) {
				if p.createTarget != nil || p.condition == nil || p.condition.Reason != ReasonBadSpaceRequest {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "Ready False is not Ready",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", readyWith("False", "Provisioning", "space"))}},
			check: func(t *testing.T, p plan) {
				if p.createTarget != nil || p.condition == nil || p.condition.Reason != ReasonProvisioning {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "of two SpaceRequests the oldest is used",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{
					spaceRequest("preview-a", func(sr *unstructured.Unstructured) { sr.SetCreationTimestamp(metav1.NewTime(now)) }),
					spaceRequest("preview-b", ready("space"), func(sr *unstructured.Unstructured) { sr.SetCreationTimestamp(metav1.NewTime(now.Add(-time.Hour))) }),
				}},
			check: func(t *testing.T, p plan) {
				if p.createTarget == nil || names(p.labelSpaceRequests) != "preview-b" {
					t.Errorf("target %v, labelled %v", p.createTarget, names(p.labelSpaceRequests))
				}
			},
		},
		{
			name: "a target of the name that is not ours is a conflict",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				dt: ourTarget(func(t *targetT) { t.Annotations = nil; t.Finalizers = nil })},
			check: func(t *testing.T, p plan) {
				if p.createSpaceRequest != nil || p.condition == nil || p.condition.Reason != ReasonNameConflict {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a live target keeps its finalizer and labels its SpaceRequest",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				dt:      ourTarget(func(t *targetT) { t.Finalizers = nil; t.Status.Phase = "" }),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"))}},
			check: func(t *testing.T, p plan) {
				if p.updateTarget == nil || p.updateTarget.Finalizers[0] != Finalizer || !p.markAvailable {
					t.Errorf("update %v, markAvailable %v", p.updateTarget, p.markAvailable)
				}
				if names(p.labelSpaceRequests) != "preview-abc" {
					t.Errorf("labelled %v", names(p.labelSpaceRequests))
				}
			},
		},
		{
			name: "a live, labelled, bound target needs nothing",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget)}, byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget)}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "an orphan SpaceRequest of a Delete class is deleted",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"))}},
			check: func(t *testing.T, p plan) {
				if names(p.deleteSpaceRequests) != "preview-abc" || !p.orphanNeedsNoClaim {
					t.Errorf("deleted %v, confirm %v", names(p.deleteSpaceRequests), p.orphanNeedsNoClaim)
				}
			},
		},
		{
			name: "an orphan SpaceRequest of a Retain class is left",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyRetain),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"))}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "an orphan without a recorded class uses the only Dev Sandbox class",
			s: state{classes: []*classT{class(appstudiov1alpha1.ReclaimPolicyDelete)},
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", func(sr *unstructured.Unstructured) { sr.SetAnnotations(nil) })}},
			check: func(t *testing.T, p plan) {
				if names(p.deleteSpaceRequests) != "preview-abc" {
					t.Errorf("deleted %v", names(p.deleteSpaceRequests))
				}
			},
		},
		{
			name: "an orphan with no Dev Sandbox class at all is reported",
			s:    state{byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc")}},
			check: func(t *testing.T, p plan) {
				if len(p.deleteSpaceRequests) != 0 || len(p.events) != 1 || p.events[0].Reason != EventNoDevSandboxClasses {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a SpaceRequest of a live claim without a target is not an orphan",
			s: state{claim: func() *claimT { c := pendingClaim(); c.Annotations = nil; return c }(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc")}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "deleting a target of a Delete class finalizes and deletes its SpaceRequest",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget)},
				byClaim:  []*unstructured.Unstructured{spaceRequest("preview-other")}},
			check: func(t *testing.T, p plan) {
				if names(p.finalizeSpaceRequests) != "preview-abc" || p.finalizeSpaceRequests[0].GetFinalizers()[0] != spacerequest.Finalizer {
					t.Errorf("finalized %v", names(p.finalizeSpaceRequests))
				}
				if names(p.deleteSpaceRequests) != "preview-abc" {
					t.Errorf("deleted %v (by the dt label first)", names(p.deleteSpaceRequests))
				}
				if p.updateTarget != nil {
					t.Error("the target's finalizer went before the SpaceRequest")
				}
			},
		},
		{
			name: "deleting a target finds the SpaceRequest by the claim label when none has the target's",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting, func(t *targetT) { t.Spec.ClaimRef = "" }),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", func(sr *unstructured.Unstructured) { sr.SetFinalizers([]string{spacerequest.Finalizer}) })}},
			check: func(t *testing.T, p plan) {
				if len(p.finalizeSpaceRequests) != 0 || names(p.deleteSpaceRequests) != "preview-abc" {
					t.Errorf("finalized %v, deleted %v", names(p.finalizeSpaceRequests), names(p.deleteSpaceRequests))
				}
			},
		},
		{
			name: "a SpaceRequest being deleted is waited for, with a timer for the 2 minutes",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget, deletedAt(now.Add(-30*time.Second)))}},
			check: func(t *testing.T, p plan) {
				if len(p.deleteSpaceRequests) != 0 || p.updateTarget != nil || p.failTarget || p.requeueAfter != 90*time.Second {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a SpaceRequest UnableToTerminate 2 minutes after its deletion fails the target",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget, readyWith("False", "UnableToTerminate", "space"),
					deletedAt(now.Add(-2*time.Minute)))}},
			check: func(t *testing.T, p plan) {
				if !p.failTarget || p.updateTarget != nil || len(p.events) != 1 || p.events[0].Reason != EventUnableToTerminate || p.events[0].Type != "Warning" {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a failed target is not failed again",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete),
				dt: ourTarget(deleting, func(t *targetT) { t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseFailed }),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget, readyWith("False", "UnableToTerminate", "space"),
					deletedAt(now.Add(-3*time.Minute)))}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "a SpaceRequest still terminating after 2 minutes for another reason is waited for",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget, readyWith("False", "Terminating", "space"),
					deletedAt(now.Add(-3*time.Minute)))}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "once the SpaceRequest is gone the target's finalizer goes, after the server confirms",
			s:    state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting)},
			check: func(t *testing.T, p plan) {
				if p.updateTarget == nil || len(p.updateTarget.Finalizers) != 0 || !p.confirmSpaceRequestsGone {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "deleting a target of a Retain class lets it go and leaves the SpaceRequest",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyRetain), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget)}},
			check: func(t *testing.T, p plan) {
				if p.updateTarget == nil || len(p.updateTarget.Finalizers) != 0 || len(p.deleteSpaceRequests) != 0 || len(p.finalizeSpaceRequests) != 0 {
					t.Errorf("plan %+v", p)
				}
				if len(p.events) != 1 || p.events[0].Reason != EventRetained {
					t.Errorf("events %v", p.events)
				}
			},
		},
		{
			name: "deleting a target whose class is gone waits for it",
			s: state{dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget)}},
			check: func(t *testing.T, p plan) {
				if p.updateTarget != nil || len(p.deleteSpaceRequests) != 0 || len(p.events) != 1 || p.events[0].Reason != EventClassNotFound {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a released target of ours of the claim's name is a conflict",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyRetain),
				class: class(appstudiov1alpha1.ReclaimPolicyRetain), dt: ourTarget(func(t *targetT) {
					t.Spec.ClaimRef = ""
					t.Status.Phase = appstudiov1alpha1.DeploymentTargetPhaseReleased
				}),
				byClaim:  []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget)},
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget)}},
			check: func(t *testing.T, p plan) {
				if p.createSpaceRequest != nil || p.createTarget != nil || p.updateTarget != nil || len(p.labelSpaceRequests) != 0 {
					t.Errorf("plan %+v", p)
				}
				if p.condition == nil || p.condition.Status != metav1.ConditionFalse || p.condition.Reason != ReasonNameConflict ||
					!strings.Contains(p.condition.Message, `claimRef ""`) {
					t.Errorf("condition %v", p.condition)
				}
				if len(p.events) != 1 || p.events[0].Type != "Warning" || p.events[0].Reason != ReasonNameConflict {
					t.Errorf("events %v", p.events)
				}
			},
		},
		{
			name: "a target of ours for another claim is a conflict",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(func(t *targetT) { t.Spec.ClaimRef = "other" })},
			check: func(t *testing.T, p plan) {
				if p.condition == nil || p.condition.Reason != ReasonNameConflict || len(p.events) != 1 || p.events[0].Reason != ReasonNameConflict {
					t.Errorf("condition %v, events %v", p.condition, p.events)
				}
			},
		},
		{
			name: "a claim not marked for provisioning is no conflict with a released target of ours",
			s: state{claim: func() *claimT { c := pendingClaim(); c.Annotations = nil; return c }(),
				claimClass: class(appstudiov1alpha1.ReclaimPolicyRetain), class: class(appstudiov1alpha1.ReclaimPolicyRetain),
				dt: ourTarget(func(t *targetT) { t.Spec.ClaimRef = "" })},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "a claim marked for provisioning waits for a target of ours being deleted",
			s: state{claim: pendingClaim(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete),
				class: class(appstudiov1alpha1.ReclaimPolicyRetain), dt: ourTarget(deleting, func(t *targetT) { t.Spec.ClaimRef = "" })},
			check: func(t *testing.T, p plan) {
				if p.condition == nil || p.condition.Reason != ReasonProvisioning || !strings.Contains(p.condition.Message, "being deleted") {
					t.Errorf("condition %v", p.condition)
				}
				if p.updateTarget == nil || len(p.updateTarget.Finalizers) != 0 || p.createSpaceRequest != nil {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "a claim name that cannot be a label value is reported",
			s: state{claimName: strings.Repeat("a", 61), claim: func() *claimT {
				c := pendingClaim()
				c.Name = strings.Repeat("a", 61)
				return c
			}(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete)},
			check: func(t *testing.T, p plan) {
				if p.createSpaceRequest != nil || p.createTarget != nil {
					t.Errorf("plan %+v", p)
				}
				if p.condition == nil || p.condition.Status != metav1.ConditionFalse || p.condition.Reason != ReasonInvalidClaimName {
					t.Errorf("condition %v", p.condition)
				}
				if len(p.events) != 1 || p.events[0].Type != "Warning" || p.events[0].Reason != ReasonInvalidClaimName {
					t.Errorf("events %v", p.events)
				}
			},
		},
		{
			name: "a claim name of 60 characters is provisioned",
			s: state{claimName: strings.Repeat("a", 60), claim: func() *claimT {
				c := pendingClaim()
				c.Name = strings.Repeat("a", 60)
				return c
			}(), claimClass: class(appstudiov1alpha1.ReclaimPolicyDelete)},
			check: func(t *testing.T, p plan) {
				if p.createSpaceRequest == nil {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "an orphan whose recorded class is gone is left, whatever the other classes",
			s: state{recordedClass: className, classes: []*classT{func() *classT {
				c := class(appstudiov1alpha1.ReclaimPolicyDelete)
				c.Name = "other"
				return c
			}()},
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"))}},
			check: func(t *testing.T, p plan) {
				if len(p.deleteSpaceRequests) != 0 || p.orphanNeedsNoClaim {
					t.Errorf("deleted %v", names(p.deleteSpaceRequests))
				}
				if len(p.events) != 1 || p.events[0].Type != "Warning" || p.events[0].Reason != EventClassNotFound {
					t.Errorf("events %v", p.events)
				}
			},
		},
		{
			name: "an orphan of another tier is left",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete),
				byClaim: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), tier("base"))}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
		{
			name: "deleting a target leaves its SpaceRequests of another tier",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget, tier("base"))},
				byClaim:  []*unstructured.Unstructured{spaceRequest("preview-abc", ready("space"), labelledTarget, tier("base"))}},
			check: func(t *testing.T, p plan) {
				if len(p.finalizeSpaceRequests)+len(p.deleteSpaceRequests) != 0 {
					t.Errorf("finalized %v, deleted %v", names(p.finalizeSpaceRequests), names(p.deleteSpaceRequests))
				}
				if p.updateTarget == nil || len(p.updateTarget.Finalizers) != 0 || !p.confirmSpaceRequestsGone {
					t.Errorf("plan %+v", p)
				}
			},
		},
		{
			name: "deleting a target finds the SpaceRequest of the tier by the claim label when the one labelled for the target is of another",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-base", labelledTarget, tier("base"))},
				byClaim:  []*unstructured.Unstructured{spaceRequest("preview-abc"), spaceRequest("preview-base", labelledTarget, tier("base"))}},
			check: func(t *testing.T, p plan) {
				if names(p.deleteSpaceRequests) != "preview-abc" || p.updateTarget != nil {
					t.Errorf("deleted %v, plan %+v", names(p.deleteSpaceRequests), p)
				}
			},
		},
		{
			name: "a target being deleted without our finalizer is left",
			s: state{class: class(appstudiov1alpha1.ReclaimPolicyDelete), dt: ourTarget(deleting, func(t *targetT) { t.Finalizers = nil }),
				byTarget: []*unstructured.Unstructured{spaceRequest("preview-abc", labelledTarget)}},
			check: func(t *testing.T, p plan) { expectNothing(t, p) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.namespace = ns
			if s.claimName == "" {
				s.claimName = claimName
			}
			tc.check(t, planUnit(s, now))
		})
	}
}

func expectNothing(t *testing.T, p plan) {
	t.Helper()
	if p.createSpaceRequest != nil || len(p.labelSpaceRequests)+len(p.finalizeSpaceRequests)+len(p.deleteSpaceRequests) > 0 ||
		p.createTarget != nil || p.updateTarget != nil || p.markAvailable || p.failTarget || p.condition != nil || len(p.events) > 0 {
		t.Errorf("planned %+v", p)
	}
}
