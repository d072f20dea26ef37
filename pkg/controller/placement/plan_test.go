package placement

import (
	"cmp"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func ready(name string, capacity int) Instance {
	return Instance{Name: name, Capacity: capacity, Ready: true}
}

func on(ns, instance string) Tenant { return Tenant{Namespace: ns, Instance: instance} }

func pinned(ns, instance string) Tenant {
	return Tenant{Namespace: ns, Instance: instance, Pinned: true}
}

// of gives t an owner.
func of(owner string, t Tenant) Tenant {
	t.Owner = owner
	return t
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		instances []Instance
		tenants   []Tenant
		want      Plan
	}{
		{
			name: "nil in, empty plan out",
			want: Plan{},
		},
		{
			name:      "empty in, empty plan out",
			instances: []Instance{},
			tenants:   []Tenant{},
			want:      Plan{},
		},
		{
			name:      "no tenants",
			instances: []Instance{ready("a", 3)},
			want:      Plan{},
		},
		{
			name: "new tenants spread to the least loaded, loads updated as assigned",
			instances: []Instance{
				ready("a", 3),
				ready("b", 10),
			},
			tenants: []Tenant{on("t5", ""), on("t3", ""), on("t1", ""), on("t4", ""), on("t2", "")},
			want: Plan{Moves: []Move{
				{Namespace: "t1", To: "a", Reason: ReasonUnplaced},
				{Namespace: "t2", To: "b", Reason: ReasonUnplaced},
				{Namespace: "t3", To: "a", Reason: ReasonUnplaced},
				{Namespace: "t4", To: "b", Reason: ReasonUnplaced},
				{Namespace: "t5", To: "a", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "existing load counts, pinned tenants included",
			instances: []Instance{ready("a", 10), ready("b", 10)},
			tenants:   []Tenant{pinned("p1", "a"), on("x1", "b"), pinned("p2", "a"), on("new", "")},
			want: Plan{Moves: []Move{
				{Namespace: "new", To: "b", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "ties go to the lowest name, whatever the input order",
			instances: []Instance{ready("c", 5), ready("a", 5), ready("b", 5)},
			tenants:   []Tenant{on("t1", "")},
			want: Plan{Moves: []Move{
				{Namespace: "t1", To: "a", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "full capacity: the rest are stuck",
			instances: []Instance{ready("a", 1), ready("b", 1)},
			tenants:   []Tenant{on("t1", ""), on("t2", ""), on("t3", ""), on("t4", "")},
			want: Plan{
				Moves: []Move{
					{Namespace: "t1", To: "a", Reason: ReasonUnplaced},
					{Namespace: "t2", To: "b", Reason: ReasonUnplaced},
				},
				Stuck: []Stuck{
					{Namespace: "t3", Reason: ReasonUnplaced},
					{Namespace: "t4", Reason: ReasonUnplaced},
				},
			},
		},
		{
			name:      "zero capacity takes nothing",
			instances: []Instance{ready("a", 0)},
			tenants:   []Tenant{on("t1", "")},
			want:      Plan{Stuck: []Stuck{{Namespace: "t1", Reason: ReasonUnplaced}}},
		},
		{
			name:      "no instances: new tenants are stuck",
			instances: nil,
			tenants:   []Tenant{on("t1", "")},
			want:      Plan{Stuck: []Stuck{{Namespace: "t1", Reason: ReasonUnplaced}}},
		},
		{
			name:      "a pinned tenant with no instance yet is placed",
			instances: []Instance{ready("a", 1)},
			tenants:   []Tenant{pinned("t1", "")},
			want:      Plan{Moves: []Move{{Namespace: "t1", To: "a", Reason: ReasonUnplaced}}},
		},
		{
			name: "a not-ready instance takes nothing but keeps its tenants",
			instances: []Instance{
				{Name: "a", Capacity: 10, Ready: false},
				ready("b", 10),
			},
			tenants: []Tenant{on("old1", "a"), on("old2", "a"), on("new", "")},
			want:    Plan{Moves: []Move{{Namespace: "new", To: "b", Reason: ReasonUnplaced}}},
		},
		{
			name:      "only not-ready instances: new tenants are stuck",
			instances: []Instance{{Name: "a", Capacity: 10}},
			tenants:   []Tenant{on("new", "")},
			want:      Plan{Stuck: []Stuck{{Namespace: "new", Reason: ReasonUnplaced}}},
		},
		{
			name:      "placements are stable: no rebalancing",
			instances: []Instance{ready("a", 10), ready("b", 10)},
			tenants:   []Tenant{on("t1", "a"), on("t2", "a"), on("t3", "a"), on("t4", "a")},
			want:      Plan{},
		},
		{
			name: "draining: unpinned tenants leave, pinned ones stay",
			instances: []Instance{
				{Name: "a", Capacity: 10, Ready: true, Draining: true},
				ready("b", 10),
				ready("c", 10),
			},
			tenants: []Tenant{on("t1", "a"), pinned("t2", "a"), on("t3", "a")},
			want: Plan{Moves: []Move{
				{Namespace: "t1", From: "a", To: "b", Reason: ReasonDraining},
				{Namespace: "t3", From: "a", To: "c", Reason: ReasonDraining},
			}},
		},
		{
			name: "a draining instance takes no tenant",
			instances: []Instance{
				{Name: "a", Capacity: 10, Ready: true, Draining: true},
			},
			tenants: []Tenant{on("new", "")},
			want:    Plan{Stuck: []Stuck{{Namespace: "new", Reason: ReasonUnplaced}}},
		},
		{
			name: "draining with no room elsewhere: stuck where they are",
			instances: []Instance{
				{Name: "a", Capacity: 10, Ready: true, Draining: true},
				ready("b", 1),
			},
			tenants: []Tenant{on("t1", "a"), on("t2", "a")},
			want: Plan{
				Moves: []Move{{Namespace: "t1", From: "a", To: "b", Reason: ReasonDraining}},
				Stuck: []Stuck{{Namespace: "t2", Instance: "a", Reason: ReasonDraining}},
			},
		},
		{
			name: "a draining instance over capacity keeps its pinned tenants",
			instances: []Instance{
				{Name: "a", Capacity: 1, Ready: true, Draining: true},
				ready("b", 10),
			},
			tenants: []Tenant{pinned("p1", "a"), pinned("p2", "a"), pinned("p3", "a")},
			want:    Plan{},
		},
		{
			name:      "instance gone: pinned stays, unpinned moves",
			instances: []Instance{ready("b", 10)},
			tenants:   []Tenant{pinned("p", "gone"), on("u", "gone")},
			want: Plan{Moves: []Move{
				{Namespace: "u", From: "gone", To: "b", Reason: ReasonInstanceGone},
			}},
		},
		{
			name:      "instance gone with no room: stuck",
			instances: []Instance{ready("b", 1)},
			tenants:   []Tenant{on("full", "b"), on("u", "gone"), pinned("p", "gone")},
			want: Plan{Stuck: []Stuck{
				{Namespace: "u", Instance: "gone", Reason: ReasonInstanceGone},
			}},
		},
		{
			name:      "over capacity: the last namespaces move",
			instances: []Instance{ready("a", 2), ready("b", 10)},
			tenants:   []Tenant{on("t4", "a"), on("t1", "a"), on("t3", "a"), on("t2", "a")},
			want: Plan{Moves: []Move{
				{Namespace: "t3", From: "a", To: "b", Reason: ReasonOverCapacity},
				{Namespace: "t4", From: "a", To: "b", Reason: ReasonOverCapacity},
			}},
		},
		{
			name:      "over capacity: pinned tenants count but do not move",
			instances: []Instance{ready("a", 2), ready("b", 10)},
			tenants:   []Tenant{on("t1", "a"), pinned("t2", "a"), on("t3", "a"), pinned("t4", "a")},
			want: Plan{Moves: []Move{
				{Namespace: "t1", From: "a", To: "b", Reason: ReasonOverCapacity},
				{Namespace: "t3", From: "a", To: "b", Reason: ReasonOverCapacity},
			}},
		},
		{
			name:      "over capacity with pinned only: nothing to do",
			instances: []Instance{ready("a", 1), ready("b", 10)},
			tenants:   []Tenant{pinned("t1", "a"), pinned("t2", "a")},
			want:      Plan{},
		},
		{
			name:      "over capacity with no room elsewhere: stuck",
			instances: []Instance{ready("a", 1), ready("b", 1)},
			tenants:   []Tenant{on("t1", "a"), on("t2", "a"), on("t3", "a"), on("x", "b")},
			want: Plan{Stuck: []Stuck{
				{Namespace: "t2", Instance: "a", Reason: ReasonOverCapacity},
				{Namespace: "t3", Instance: "a", Reason: ReasonOverCapacity},
			}},
		},
		{
			name:      "over capacity on a not-ready instance still moves the excess",
			instances: []Instance{{Name: "a", Capacity: 1}, ready("b", 10)},
			tenants:   []Tenant{on("t1", "a"), on("t2", "a")},
			want: Plan{Moves: []Move{
				{Namespace: "t2", From: "a", To: "b", Reason: ReasonOverCapacity},
			}},
		},
		{
			name: "over capacity comes after the other moves and sees their loads",
			instances: []Instance{
				ready("a", 1),
				ready("b", 1),
				{Name: "d", Capacity: 10, Ready: true, Draining: true},
			},
			// z on d is after a's t2 in namespace order, yet it takes b's last slot first.
			tenants: []Tenant{on("t1", "a"), on("t2", "a"), on("z", "d")},
			want: Plan{
				Moves: []Move{{Namespace: "z", From: "d", To: "b", Reason: ReasonDraining}},
				Stuck: []Stuck{{Namespace: "t2", Instance: "a", Reason: ReasonOverCapacity}},
			},
		},
		{
			name:      "new tenants take free room before the over-capacity pass",
			instances: []Instance{ready("a", 1), ready("b", 1)},
			tenants:   []Tenant{on("t1", "a"), on("t2", "a"), on("zz", "")},
			want: Plan{
				Moves: []Move{{Namespace: "zz", To: "b", Reason: ReasonUnplaced}},
				Stuck: []Stuck{{Namespace: "t2", Instance: "a", Reason: ReasonOverCapacity}},
			},
		},
		{
			name:      "duplicate instance names: the first wins",
			instances: []Instance{ready("a", 0), ready("a", 10)},
			tenants:   []Tenant{on("t1", "")},
			want:      Plan{Stuck: []Stuck{{Namespace: "t1", Reason: ReasonUnplaced}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.instances, tc.tenants, 1)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decide() =\n%+v\nwant\n%+v", got, tc.want)
			}
			checkInvariants(t, tc.instances, tc.tenants, 1, got)
		})
	}
}

func TestShareLimit(t *testing.T) {
	tests := []struct {
		share    Share
		capacity int
		want     int
	}{
		{0.5, 0, 0},
		{0.5, 1, 1}, // rounded down it would be 0: a capacity-1 instance would take nobody
		{0.5, 2, 1},
		{0.5, 3, 1}, // down, so the share is never exceeded
		{0.5, 4, 2},
		{0.5, 1000, 500},
		{0.29, 100, 29}, // 0.29*100 is 28.999999999999996 in floating point
		{0.002, 1000, 2},
		{0.001, 10, 1},
		{1, 7, 7},
		{0, 7, 1},
	}
	for _, tc := range tests {
		if got := tc.share.Limit(tc.capacity); got != tc.want {
			t.Errorf("Share(%v).Limit(%d) = %d, want %d", tc.share, tc.capacity, got, tc.want)
		}
	}
}

func TestDecideOwnerShare(t *testing.T) {
	tests := []struct {
		name      string
		instances []Instance
		tenants   []Tenant
		share     Share
		want      Plan
	}{
		{
			name:      "an owner's namespaces spread across instances",
			instances: []Instance{ready("a", 4), ready("b", 4)},
			// Least load alone would put 1, 3 and 4 on a, which is emptier.
			tenants: []Tenant{on("other1", "b"), on("other2", "b"),
				of("acme", on("acme1", "")), of("acme", on("acme2", "")), of("acme", on("acme3", "")), of("acme", on("acme4", ""))},
			share: 0.5,
			want: Plan{Moves: []Move{
				{Namespace: "acme1", To: "a", Reason: ReasonUnplaced},
				{Namespace: "acme2", To: "a", Reason: ReasonUnplaced},
				{Namespace: "acme3", To: "b", Reason: ReasonUnplaced},
				{Namespace: "acme4", To: "b", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "an owner at its share is stuck while other owners are still placed",
			instances: []Instance{ready("a", 4), ready("b", 4)},
			tenants: []Tenant{of("acme", on("acme1", "a")), of("acme", on("acme2", "a")), of("acme", on("acme3", "b")),
				of("acme", pinned("acme4", "b")), of("acme", on("acme5", "")), on("bob", ""), of("carol", on("carol1", ""))},
			share: 0.5,
			want: Plan{
				Moves: []Move{
					{Namespace: "bob", To: "a", Reason: ReasonUnplaced},
					{Namespace: "carol1", To: "b", Reason: ReasonUnplaced},
				},
				Stuck: []Stuck{{Namespace: "acme5", Reason: ReasonUnplaced, Owner: "acme"}},
			},
		},
		{
			name:      "full instances: stuck for capacity, not for the share",
			instances: []Instance{ready("a", 2)},
			tenants:   []Tenant{on("x", "a"), on("y", "a"), of("acme", on("acme1", ""))},
			share:     0.5,
			want:      Plan{Stuck: []Stuck{{Namespace: "acme1", Reason: ReasonUnplaced}}},
		},
		{
			name:      "no owner: each namespace is its own",
			instances: []Instance{ready("a", 2)},
			tenants:   []Tenant{on("t1", ""), on("t2", "")},
			share:     0.5,
			want: Plan{Moves: []Move{
				{Namespace: "t1", To: "a", Reason: ReasonUnplaced},
				{Namespace: "t2", To: "a", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "an owner named like a namespace shares with it",
			instances: []Instance{ready("a", 2)},
			tenants:   []Tenant{on("acme", "a"), of("acme", on("t1", ""))},
			share:     0.5,
			want:      Plan{Stuck: []Stuck{{Namespace: "t1", Reason: ReasonUnplaced, Owner: "acme"}}},
		},
		{
			name:      "capacity 1 at 0.5: one tenant of the owner per instance",
			instances: []Instance{ready("a", 1), ready("b", 1), ready("c", 1)},
			tenants:   []Tenant{of("acme", on("acme1", "")), of("acme", on("acme2", "")), of("acme", on("acme3", ""))},
			share:     0.5,
			want: Plan{Moves: []Move{
				{Namespace: "acme1", To: "a", Reason: ReasonUnplaced},
				{Namespace: "acme2", To: "b", Reason: ReasonUnplaced},
				{Namespace: "acme3", To: "c", Reason: ReasonUnplaced},
			}},
		},
		{
			name:      "a lowered share moves nobody: the owner only gets no more",
			instances: []Instance{ready("a", 4), ready("b", 4)},
			tenants: []Tenant{of("acme", on("acme1", "a")), of("acme", on("acme2", "a")), of("acme", on("acme3", "a")),
				of("acme", on("acme4", ""))},
			share: 0.25,
			want: Plan{Moves: []Move{
				{Namespace: "acme4", To: "b", Reason: ReasonUnplaced},
			}},
		},
		{
			name: "moves off a draining instance keep to the share too",
			instances: []Instance{
				{Name: "d", Capacity: 10, Ready: true, Draining: true},
				ready("a", 4), ready("b", 4),
			},
			tenants: []Tenant{of("acme", on("acme1", "a")), of("acme", on("acme2", "a")), of("acme", on("acme3", "b")),
				of("acme", on("acme4", "b")), of("acme", on("acme5", "d")), on("other", "d")},
			share: 0.5,
			want: Plan{
				Moves: []Move{{Namespace: "other", From: "d", To: "a", Reason: ReasonDraining}},
				Stuck: []Stuck{{Namespace: "acme5", Instance: "d", Reason: ReasonDraining, Owner: "acme"}},
			},
		},
		{
			name:      "over capacity: the excess moves only where its owner is under its share",
			instances: []Instance{ready("a", 2), ready("b", 4)},
			tenants: []Tenant{of("acme", on("acme1", "a")), of("acme", on("acme2", "a")), of("acme", on("acme3", "a")),
				of("acme", on("acme4", "b")), of("acme", on("acme5", "b"))},
			share: 0.5,
			want:  Plan{Stuck: []Stuck{{Namespace: "acme3", Instance: "a", Reason: ReasonOverCapacity, Owner: "acme"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.instances, tc.tenants, tc.share)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Decide() =\n%+v\nwant\n%+v", got, tc.want)
			}
			checkInvariants(t, tc.instances, tc.tenants, tc.share, got)
		})
	}
}

// Provisioned namespaces count toward the owner of the namespace of their claim: whoever can
// claim in one namespace gets no more of the fleet than that namespace's owner.
func TestDecideProvisionedNamespacesCountTowardTheClaimsOwner(t *testing.T) {
	labels := map[string]map[string]string{
		"team":  {managedv1alpha1.LabelTenantOwner: "acme"},
		"dev-1": provisionedFor("team"),
		"dev-2": provisionedFor("team"),
		"dev-3": provisionedFor("team"),
		"solo":  nil,
		"own-1": provisionedFor("solo"),
	}
	var tenants []Tenant
	for _, ns := range []string{"team", "dev-1", "dev-2", "dev-3", "solo", "own-1"} {
		tenants = append(tenants, of(OwnerOf(ns, func(n string) map[string]string { return labels[n] }), on(ns, "")))
	}
	got := Decide([]Instance{ready("a", 4), ready("b", 4)}, tenants, 0.25)
	want := Plan{
		Moves: []Move{
			{Namespace: "dev-1", To: "a", Reason: ReasonUnplaced},
			{Namespace: "dev-2", To: "b", Reason: ReasonUnplaced},
			{Namespace: "own-1", To: "a", Reason: ReasonUnplaced},
			{Namespace: "solo", To: "b", Reason: ReasonUnplaced},
		},
		Stuck: []Stuck{
			{Namespace: "dev-3", Reason: ReasonUnplaced, Owner: "acme"},
			{Namespace: "team", Reason: ReasonUnplaced, Owner: "acme"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decide() =\n%+v\nwant\n%+v", got, want)
	}
}

func provisionedFor(claimNamespace string) map[string]string {
	return map[string]string{appstudiov1alpha1.LabelProvisionedTarget: "dt", appstudiov1alpha1.LabelProvisionedClaimNamespace: claimNamespace}
}

func TestOwnerOf(t *testing.T) {
	labels := map[string]map[string]string{
		"labelled":   {managedv1alpha1.LabelTenantOwner: "acme"},
		"plain":      {"team": "x"},
		"made":       provisionedFor("labelled"),
		"made-plain": provisionedFor("plain"),
		"made-twice": provisionedFor("made"),
		"made-owned": {appstudiov1alpha1.LabelProvisionedTarget: "dt", appstudiov1alpha1.LabelProvisionedClaimNamespace: "labelled",
			managedv1alpha1.LabelTenantOwner: "admin-says"},
		"claim-only":   {appstudiov1alpha1.LabelProvisionedClaimNamespace: "labelled"}, // not the provisioner's: no target label
		"loop-a":       provisionedFor("loop-b"),
		"loop-b":       provisionedFor("loop-a"),
		"self":         provisionedFor("self"),
		"made-unknown": provisionedFor("unknown"),
	}
	tests := map[string]string{
		"labelled":     "acme",
		"plain":        "plain",
		"unknown":      "unknown",
		"made":         "acme",
		"made-plain":   "plain",
		"made-twice":   "acme",
		"made-owned":   "admin-says",
		"claim-only":   "claim-only",
		"self":         "self",
		"made-unknown": "unknown",
	}
	for ns, want := range tests {
		if got := OwnerOf(ns, func(n string) map[string]string { return labels[n] }); got != want {
			t.Errorf("OwnerOf(%q) = %q, want %q", ns, got, want)
		}
	}
	// A loop of hand-written labels ends, somewhere on the loop.
	if got := OwnerOf("loop-a", func(n string) map[string]string { return labels[n] }); got != "loop-a" && got != "loop-b" {
		t.Errorf("OwnerOf(loop-a) = %q", got)
	}
}

// checkInvariants holds for every plan: no move to the tenant's own instance (rule 9), targets
// are eligible, both lists are ordered by namespace, no tenant appears twice, and no move
// takes an owner over its share of the target.
func checkInvariants(t *testing.T, instances []Instance, tenants []Tenant, share Share, p Plan) {
	t.Helper()
	byName := map[string]Instance{}
	for _, in := range instances {
		if _, ok := byName[in.Name]; !ok {
			byName[in.Name] = in
		}
	}
	seen := map[string]bool{}
	for _, m := range p.Moves {
		if m.From == m.To {
			t.Errorf("move %+v targets the tenant's own instance", m)
		}
		if in := byName[m.To]; !in.Ready || in.Draining {
			t.Errorf("move %+v targets an ineligible instance %+v", m, in)
		}
		if seen[m.Namespace] {
			t.Errorf("tenant %q appears twice", m.Namespace)
		}
		seen[m.Namespace] = true
	}
	for _, s := range p.Stuck {
		if seen[s.Namespace] {
			t.Errorf("tenant %q appears twice", s.Namespace)
		}
		seen[s.Namespace] = true
	}
	if !slices.IsSortedFunc(p.Moves, func(a, b Move) int { return cmp.Compare(a.Namespace, b.Namespace) }) {
		t.Errorf("moves not ordered by namespace: %+v", p.Moves)
	}
	if !slices.IsSortedFunc(p.Stuck, func(a, b Stuck) int { return cmp.Compare(a.Namespace, b.Namespace) }) {
		t.Errorf("stuck not ordered by namespace: %+v", p.Stuck)
	}
	// Moves never push a target over its capacity.
	load := loadAfter(tenants, p.Moves)
	for _, m := range p.Moves {
		if load[m.To] > byName[m.To].Capacity {
			t.Errorf("move %+v puts %q over capacity: %d > %d", m, m.To, load[m.To], byName[m.To].Capacity)
		}
	}
	owners := map[string]string{}
	owned := map[[2]string]int{}
	for _, tn := range tenants {
		owners[tn.Namespace] = tn.owner()
		if tn.Instance != "" {
			owned[[2]string{tn.Instance, tn.owner()}]++
		}
	}
	for _, m := range p.Moves {
		if m.From != "" {
			owned[[2]string{m.From, owners[m.Namespace]}]--
		}
		owned[[2]string{m.To, owners[m.Namespace]}]++
	}
	for _, m := range p.Moves {
		key := [2]string{m.To, owners[m.Namespace]}
		if limit := share.Limit(byName[m.To].Capacity); owned[key] > limit {
			t.Errorf("move %+v puts owner %q over its share of %q: %d > %d", m, key[1], m.To, owned[key], limit)
		}
	}
}

// fleetShare is the owner share of fleet: owner o can have one tenant on each instance.
const fleetShare = 0.1

// fleet is a mixed case touching every rule, for the mutation and determinism tests.
func fleet() ([]Instance, []Tenant) {
	instances := []Instance{
		ready("c", 3),
		{Name: "d", Capacity: 10, Ready: true, Draining: true},
		ready("a", 2),
		{Name: "n", Capacity: 10},
		ready("b", 4),
		ready("e", 10),
	}
	tenants := []Tenant{
		on("t09", ""), on("t01", "a"), on("t02", "a"), on("t03", "a"), pinned("t04", "a"),
		on("t05", "d"), pinned("t06", "d"), on("t07", "gone"), pinned("t08", "gone"),
		on("t10", "n"), on("t11", ""), on("t12", ""), on("t13", "c"), on("t14", ""),
		of("o", on("t15", "")), of("o", on("t16", "b")), of("o", on("t17", "")), of("o", on("t18", "")), of("o", on("t19", "")),
	}
	return instances, tenants
}

func TestDecideDoesNotMutateInput(t *testing.T) {
	instances, tenants := fleet()
	wantInstances, wantTenants := slices.Clone(instances), slices.Clone(tenants)
	Decide(instances, tenants, fleetShare)
	if !reflect.DeepEqual(instances, wantInstances) {
		t.Errorf("instances changed: %+v, was %+v", instances, wantInstances)
	}
	if !reflect.DeepEqual(tenants, wantTenants) {
		t.Errorf("tenants changed: %+v, was %+v", tenants, wantTenants)
	}
}

func TestDecideIsDeterministic(t *testing.T) {
	instances, tenants := fleet()
	want := Decide(instances, tenants, fleetShare)
	if len(want.Moves) == 0 || len(want.Stuck) == 0 {
		t.Fatalf("fleet should give both moves and stuck tenants: %+v", want)
	}
	checkInvariants(t, instances, tenants, fleetShare, want)
	if !slices.ContainsFunc(want.Stuck, func(s Stuck) bool { return s.Owner != "" }) {
		t.Fatalf("fleet should give a tenant stuck for its owner's share: %+v", want)
	}
	if got := Decide(instances, tenants, fleetShare); !reflect.DeepEqual(got, want) {
		t.Fatalf("second Decide() = %+v, first %+v", got, want)
	}
	// Nor does the input order matter.
	r := rand.New(rand.NewSource(1))
	for i := range 20 {
		is, ts := slices.Clone(instances), slices.Clone(tenants)
		r.Shuffle(len(is), func(i, j int) { is[i], is[j] = is[j], is[i] })
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		if got := Decide(is, ts, fleetShare); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d: Decide() = %+v, want %+v", i, got, want)
		}
	}
}

// Applying a plan and deciding again gives nothing new to move: the plan is a fixed point,
// short of the tenants still stuck.
func TestDecideAppliedPlanIsStable(t *testing.T) {
	instances, tenants := fleet()
	p := Decide(instances, tenants, fleetShare)
	to := map[string]string{}
	for _, m := range p.Moves {
		to[m.Namespace] = m.To
	}
	applied := slices.Clone(tenants)
	for i, tn := range applied {
		if dst, ok := to[tn.Namespace]; ok {
			applied[i].Instance = dst
		}
	}
	again := Decide(instances, applied, fleetShare)
	if len(again.Moves) != 0 {
		t.Errorf("after applying, Decide() still moves: %+v", again.Moves)
	}
	if !reflect.DeepEqual(again.Stuck, p.Stuck) {
		t.Errorf("after applying, stuck = %+v, want %+v", again.Stuck, p.Stuck)
	}
}

func BenchmarkDecide(b *testing.B) {
	var instances []Instance
	for i := range 50 {
		instances = append(instances, ready(fmt.Sprintf("argocd-%02d", i), 200))
	}
	instances[7].Draining = true
	var tenants []Tenant
	for i := range 10000 {
		t := on(fmt.Sprintf("tenant-%05d", i), "")
		if i%3 != 0 {
			t.Instance = instances[i%len(instances)].Name
		}
		tenants = append(tenants, t)
	}
	b.ResetTimer()
	for range b.N {
		Decide(instances, tenants, fleetShare)
	}
}

// loadAfter is the number of tenants placed on each instance (by Tenant.Instance) once the
// moves are made. Instances with no tenant are absent, and unplaced tenants count nowhere.
func loadAfter(tenants []Tenant, moves []Move) map[string]int {
	load := map[string]int{}
	for _, t := range tenants {
		if t.Instance != "" {
			load[t.Instance]++
		}
	}
	for _, m := range moves {
		if m.From != "" {
			load[m.From]--
		}
		load[m.To]++
	}
	for name, n := range load {
		if n == 0 {
			delete(load, name)
		}
	}
	return load
}
