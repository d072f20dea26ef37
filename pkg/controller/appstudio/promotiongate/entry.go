// Package promotiongate decides whether a promotion may enter an Environment through its
// PromotionGate and EnvironmentHold: pure functions of the objects and the time, so that every
// rule is tested without a cluster. The PromotionRun controller acts on the decisions.
package promotiongate

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	// The change windows' time zones, whatever the machine has: the agent's image has none.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// Entry is the decision on a promotion waiting to enter an Environment.
type Entry struct {
	// Wait, when set, is what the promotion waits for; RecheckAfter is when that may change
	// by itself (a freeze expires, a window opens or closes), 0 when only a change of an object
	// can (a hold released, an approval given).
	Wait         string
	RecheckAfter time.Duration
	// Rejected, when set, is why the promotion may never enter: an approver rejected it.
	Rejected string
	// Approvers are the users whose approvals count, sorted; Override names the approval that
	// let the promotion through a window or freeze, with its user.
	Approvers []string
	Override  string
}

// Decide decides whether the PromotionRun run may enter the Environment that gate (nil: none)
// and hold (nil: none) are named after, given the approvals of run into that Environment, at
// now. The order is the order in which a person clears them: a hold first (someone must
// release it), then freezes and change windows (they pass with time, or an override), then
// approvals (the people asked last, once the promotion could go).
//
// An approval counts for the run of that name and UID: one made on an earlier run of the same
// name (another UID) does not.
func Decide(gate *appstudiov1alpha1.PromotionGate, hold *appstudiov1alpha1.EnvironmentHold,
	approvals []*appstudiov1alpha1.PromotionApproval, run string, uid types.UID, now time.Time) Entry {
	var e Entry
	if hold != nil {
		e.Wait = fmt.Sprintf("Held by EnvironmentHold %s: %s (kubectl delete environmenthold %s releases it)", hold.Name, hold.Spec.Reason, hold.Name)
		return e
	}
	if gate == nil {
		return e
	}
	var approvers, rejections []string
	override := ""
	seen := map[string]bool{}
	for _, a := range sortedApprovals(approvals) {
		if a.Spec.PromotionRun != run || a.Spec.Environment != gate.Name || a.Spec.Username == "" ||
			(a.Spec.PromotionRunUID != "" && a.Spec.PromotionRunUID != uid) {
			continue
		}
		switch a.Spec.Decision {
		case appstudiov1alpha1.ApprovalReject:
			rejections = append(rejections, fmt.Sprintf("%s: %s", a.Spec.Username, a.Spec.Comment))
		case appstudiov1alpha1.ApprovalOverride:
			if override == "" {
				override = fmt.Sprintf("PromotionApproval %s by %s: %s", a.Name, a.Spec.Username, a.Spec.Comment)
			}
		case appstudiov1alpha1.ApprovalApprove:
			// A user counts once, however many approvals the server let through.
			if !seen[a.Spec.Username] {
				seen[a.Spec.Username] = true
				approvers = append(approvers, a.Spec.Username)
			}
		}
	}
	sort.Strings(approvers)
	e.Approvers = approvers
	if len(rejections) > 0 {
		e.Rejected = "Rejected by " + strings.Join(rejections, "; ")
		return e
	}
	if override == "" {
		if wait, after := frozen(gate.Spec.Freezes, now); wait != "" {
			e.Wait, e.RecheckAfter = wait, after
			return e
		}
		if wait, after := outsideWindows(gate.Spec.ChangeWindows, now); wait != "" {
			e.Wait, e.RecheckAfter = wait, after
			return e
		}
	} else {
		e.Override = override
	}
	if a := gate.Spec.Approvals; a != nil && int32(len(approvers)) < a.Required {
		e.Wait = fmt.Sprintf("Waiting for approvals: %d of %d", len(approvers), a.Required)
		if len(approvers) > 0 {
			e.Wait += " (" + strings.Join(approvers, ", ") + ")"
		}
		e.Wait += fmt.Sprintf("; a user allowed to approve environments/%s creates a PromotionApproval", gate.Name)
	}
	return e
}

// sortedApprovals orders approvals by creation, then name: the first override is the one
// recorded.
func sortedApprovals(approvals []*appstudiov1alpha1.PromotionApproval) []*appstudiov1alpha1.PromotionApproval {
	out := append([]*appstudiov1alpha1.PromotionApproval(nil), approvals...)
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// frozen is what the freeze in force at now says (the one that lasts longest), and when it
// expires.
func frozen(freezes []appstudiov1alpha1.Freeze, now time.Time) (string, time.Duration) {
	var last *appstudiov1alpha1.Freeze
	for i := range freezes {
		if f := &freezes[i]; now.Before(f.Until.Time) && (last == nil || f.Until.After(last.Until.Time)) {
			last = f
		}
	}
	if last == nil {
		return "", 0
	}
	return fmt.Sprintf("Frozen by %s until %s: %s", last.Name, last.Until.UTC().Format(time.RFC3339), last.Reason), last.Until.Sub(now)
}

// outsideWindows is why now is outside the change windows (in a Deny window, or in no Allow
// window when there are some), and when that may change; "" when a promotion may enter.
func outsideWindows(windows []appstudiov1alpha1.ChangeWindow, now time.Time) (string, time.Duration) {
	var allows []appstudiov1alpha1.ChangeWindow
	for _, w := range windows {
		if w.Type != appstudiov1alpha1.ChangeWindowDeny {
			allows = append(allows, w)
			continue
		}
		if open, closes, err := windowAt(w, now); err != nil {
			return fmt.Sprintf("Change window %s is unreadable: %v", w.Name, err), 0
		} else if open {
			return fmt.Sprintf("Change window %s (Deny) is open until %s", w.Name, closes.UTC().Format(time.RFC3339)), closes.Sub(now)
		}
	}
	if len(allows) == 0 {
		return "", 0
	}
	var next time.Time
	var nextName string
	for _, w := range allows {
		open, _, err := windowAt(w, now)
		if err != nil {
			return fmt.Sprintf("Change window %s is unreadable: %v", w.Name, err), 0
		}
		if open {
			return "", 0
		}
		if opens, err := nextOpening(w, now); err == nil && (next.IsZero() || opens.Before(next)) {
			next, nextName = opens, w.Name
		}
	}
	if next.IsZero() {
		return "Waiting for a change window: none of them opens in the coming year", 0
	}
	return fmt.Sprintf("Waiting for change window %s, which opens at %s", nextName, next.UTC().Format(time.RFC3339)), next.Sub(now)
}

// windowAt tells whether w is open at now (it opened within its duration before now), and
// when the opening that holds now closes.
func windowAt(w appstudiov1alpha1.ChangeWindow, now time.Time) (open bool, closes time.Time, err error) {
	sched, loc, err := parse(w)
	if err != nil {
		return false, time.Time{}, err
	}
	// The latest opening at or before now is the first one after now - duration, if it is not
	// after now. cron's Next is strictly after its argument, hence the nanosecond.
	start := sched.Next(now.In(loc).Add(-w.Duration.Duration - time.Nanosecond))
	if start.IsZero() || start.After(now) {
		return false, time.Time{}, nil
	}
	// Later openings within the duration extend the window.
	closes = start.Add(w.Duration.Duration)
	// Later openings within the duration extend the window (bounded: a schedule of every
	// minute with a long duration would otherwise be walked for a year).
	for i, next := 0, sched.Next(start); i < 1000 && !next.IsZero() && !next.After(closes); i, next = i+1, sched.Next(next) {
		closes = next.Add(w.Duration.Duration)
	}
	return true, closes, nil
}

// nextOpening is when w next opens after now.
func nextOpening(w appstudiov1alpha1.ChangeWindow, now time.Time) (time.Time, error) {
	sched, loc, err := parse(w)
	if err != nil {
		return time.Time{}, err
	}
	next := sched.Next(now.In(loc))
	if next.IsZero() || next.After(now.Add(366*24*time.Hour)) {
		return time.Time{}, fmt.Errorf("never opens")
	}
	return next, nil
}

func parse(w appstudiov1alpha1.ChangeWindow) (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if w.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return nil, nil, err
		}
	}
	sched, err := cron.ParseStandard(w.Schedule)
	return sched, loc, err
}
