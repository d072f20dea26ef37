package promotiongate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// A Wednesday, 10:30 UTC.
var now = time.Date(2026, 12, 2, 10, 30, 0, 0, time.UTC)

func gate(mutate func(*appstudiov1alpha1.PromotionGateSpec)) *appstudiov1alpha1.PromotionGate {
	g := &appstudiov1alpha1.PromotionGate{ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "team-a"}}
	if mutate != nil {
		mutate(&g.Spec)
	}
	return g
}

func approval(name, user string, decision appstudiov1alpha1.ApprovalDecision, comment string, age time.Duration) *appstudiov1alpha1.PromotionApproval {
	return &appstudiov1alpha1.PromotionApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: "run", Environment: "prod", Decision: decision, Comment: comment,
			Username: user},
	}
}

func window(name string, t appstudiov1alpha1.ChangeWindowType, schedule string, d time.Duration, tz string) appstudiov1alpha1.ChangeWindow {
	return appstudiov1alpha1.ChangeWindow{Name: name, Type: t, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: tz}
}

func TestDecide(t *testing.T) {
	two := func(s *appstudiov1alpha1.PromotionGateSpec) {
		s.Approvals = &appstudiov1alpha1.ApprovalGate{Required: 2}
	}
	freeze := func(s *appstudiov1alpha1.PromotionGateSpec) {
		s.Freezes = []appstudiov1alpha1.Freeze{
			{Name: "short", Reason: "lunch", Until: metav1.NewTime(now.Add(time.Minute))},
			{Name: "close", Reason: "Quarterly close", Until: metav1.NewTime(now.Add(time.Hour))},
			{Name: "over", Reason: "past", Until: metav1.NewTime(now.Add(-time.Hour))},
		}
	}
	cases := []struct {
		name      string
		gate      *appstudiov1alpha1.PromotionGate
		hold      *appstudiov1alpha1.EnvironmentHold
		approvals []*appstudiov1alpha1.PromotionApproval
		wait      string // a prefix
		recheck   time.Duration
		rejected  string
		approvers []string
		override  bool
	}{
		{name: "no gate, no hold"},
		{name: "empty gate", gate: gate(nil)},
		{name: "hold first", gate: gate(two), hold: &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Spec: appstudiov1alpha1.EnvironmentHoldSpec{Reason: "rolled back"}}, wait: "Held by EnvironmentHold prod: rolled back"},
		{name: "hold without a gate", hold: &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Spec: appstudiov1alpha1.EnvironmentHoldSpec{Reason: "incident"}}, wait: "Held by EnvironmentHold prod: incident"},
		{name: "no approval yet", gate: gate(two), wait: "Waiting for approvals: 0 of 2; "},
		{name: "one user twice counts once", gate: gate(two), approvals: []*appstudiov1alpha1.PromotionApproval{
			approval("a1", "alice", appstudiov1alpha1.ApprovalApprove, "", 2*time.Minute),
			approval("a2", "alice", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
		}, wait: "Waiting for approvals: 1 of 2 (alice);", approvers: []string{"alice"}},
		{name: "two users", gate: gate(two), approvals: []*appstudiov1alpha1.PromotionApproval{
			approval("b", "bob", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
			approval("a", "alice", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
		}, approvers: []string{"alice", "bob"}},
		{name: "approvals of another run or Environment, or without a user, do not count", gate: gate(two), approvals: []*appstudiov1alpha1.PromotionApproval{
			approval("a", "alice", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
			func() *appstudiov1alpha1.PromotionApproval {
				a := approval("b", "bob", appstudiov1alpha1.ApprovalApprove, "", time.Minute)
				a.Spec.PromotionRun = "other"
				return a
			}(),
			func() *appstudiov1alpha1.PromotionApproval {
				a := approval("c", "carol", appstudiov1alpha1.ApprovalApprove, "", time.Minute)
				a.Spec.Environment = "staging"
				return a
			}(),
			approval("d", "", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
		}, wait: "Waiting for approvals: 1 of 2 (alice)", approvers: []string{"alice"}},
		{name: "a rejection stops it", gate: gate(two), approvals: []*appstudiov1alpha1.PromotionApproval{
			approval("a", "alice", appstudiov1alpha1.ApprovalApprove, "", time.Minute),
			approval("b", "bob", appstudiov1alpha1.ApprovalReject, "breaks the API", time.Minute),
		}, rejected: "Rejected by bob: breaks the API", approvers: []string{"alice"}},
		{name: "frozen: the longest freeze in force is told", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) { freeze(s); two(s) }),
			wait: "Frozen by close until 2026-12-02T11:30:00Z: Quarterly close", recheck: time.Hour},
		{name: "an override passes the freeze, not the approvals", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) { freeze(s); two(s) }),
			approvals: []*appstudiov1alpha1.PromotionApproval{approval("o", "sre", appstudiov1alpha1.ApprovalOverride, "hotfix", time.Minute)},
			wait:      "Waiting for approvals: 0 of 2", override: true},
		{name: "an override alone passes the freeze", gate: gate(freeze),
			approvals: []*appstudiov1alpha1.PromotionApproval{approval("o", "sre", appstudiov1alpha1.ApprovalOverride, "hotfix", time.Minute)},
			override:  true},
		{name: "inside an allow window", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{window("office", appstudiov1alpha1.ChangeWindowAllow, "0 9 * * 1-5", 8*time.Hour, "")}
		})},
		{name: "outside the allow windows: the next opening is told", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{
				window("evening", appstudiov1alpha1.ChangeWindowAllow, "0 18 * * *", time.Hour, ""),
				window("afternoon", appstudiov1alpha1.ChangeWindowAllow, "0 14 * * *", time.Hour, ""),
			}
		}), wait: "Waiting for change window afternoon, which opens at 2026-12-02T14:00:00Z", recheck: 3*time.Hour + 30*time.Minute},
		{name: "the time zone is the window's", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			// 10:30 UTC is 11:30 in Paris: open from 11:00 there.
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{window("paris", appstudiov1alpha1.ChangeWindowAllow, "0 11 * * *", time.Hour, "Europe/Paris")}
		})},
		{name: "the time zone is the window's, closed", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{window("tokyo", appstudiov1alpha1.ChangeWindowAllow, "0 11 * * *", time.Hour, "Asia/Tokyo")}
		}), wait: "Waiting for change window tokyo, which opens at 2026-12-03T02:00:00Z", recheck: 15*time.Hour + 30*time.Minute},
		{name: "inside a deny window", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{
				window("office", appstudiov1alpha1.ChangeWindowAllow, "0 9 * * 1-5", 8*time.Hour, ""),
				window("standup", appstudiov1alpha1.ChangeWindowDeny, "15 10 * * *", 30*time.Minute, ""),
			}
		}), wait: "Change window standup (Deny) is open until 2026-12-02T10:45:00Z", recheck: 15 * time.Minute},
		{name: "a deny window that fires often extends itself", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{window("busy", appstudiov1alpha1.ChangeWindowDeny, "*/10 10 * * *", 15*time.Minute, "")}
		}), wait: "Change window busy (Deny) is open until 2026-12-02T11:05:00Z", recheck: 35 * time.Minute},
		{name: "an override passes the windows", gate: gate(func(s *appstudiov1alpha1.PromotionGateSpec) {
			s.ChangeWindows = []appstudiov1alpha1.ChangeWindow{window("night", appstudiov1alpha1.ChangeWindowAllow, "0 2 * * *", time.Hour, "")}
		}), approvals: []*appstudiov1alpha1.PromotionApproval{approval("o", "sre", appstudiov1alpha1.ApprovalOverride, "incident 42", time.Minute)}, override: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := Decide(tc.gate, tc.hold, tc.approvals, "run", "", now)
			if tc.wait == "" && e.Wait != "" || !strings.HasPrefix(e.Wait, tc.wait) {
				t.Errorf("wait %q, want %q", e.Wait, tc.wait)
			}
			if e.RecheckAfter != tc.recheck {
				t.Errorf("recheck after %v, want %v", e.RecheckAfter, tc.recheck)
			}
			if e.Rejected != tc.rejected {
				t.Errorf("rejected %q, want %q", e.Rejected, tc.rejected)
			}
			if strings.Join(e.Approvers, ",") != strings.Join(tc.approvers, ",") {
				t.Errorf("approvers %v, want %v", e.Approvers, tc.approvers)
			}
			if (e.Override != "") != tc.override {
				t.Errorf("override %q, want one: %v", e.Override, tc.override)
			}
		})
	}
}
