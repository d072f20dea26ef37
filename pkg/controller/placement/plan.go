// Package placement is the placement controller: it places each tenant namespace on one Argo CD
// instance of the fleet, and moves it off an instance that is gone, draining or over capacity.
// plan.go decides, pure; the controller acts.
package placement

import (
	"cmp"
	"math"
	"slices"
)

// Instance is what the plan needs to know of one ArgoCDInstance.
type Instance struct {
	Name     string
	Capacity int  // most tenants it takes
	Draining bool // an admin is emptying it: it takes no tenant and gives its tenants away
	Ready    bool // its agent reports in: only ready instances take new tenants
}

// Tenant is one tenant namespace and its placement.
type Tenant struct {
	Namespace string
	Instance  string // the instance it is placed on (spec.instance of its TenantPlacement); "" when not placed yet
	Pinned    bool   // an admin chose its instance: the plan never moves it
	// Owner is who the tenant counts against for Share (OwnerOf); "" is the namespace itself.
	Owner string
}

func (t Tenant) owner() string { return cmp.Or(t.Owner, t.Namespace) }

// Share is the most of each instance's capacity that the tenants of one owner may take, a
// fraction: whoever can make many tenant namespaces still leaves room on every instance for
// the others. 1 is no limit.
type Share float64

// Limit is the most tenants of one owner on an instance of capacity: the share of it rounded
// down, so that the share is never exceeded, but at least 1, so that an instance too small
// to split (capacity 1 at 0.5, say) still takes tenants rather than none at all. Across such
// instances one owner still gets at most one slot each.
func (s Share) Limit(capacity int) int {
	if capacity <= 0 {
		return 0
	}
	// The epsilon keeps a product such as 0.29*100 = 28.999999999999996 at 29.
	return min(capacity, max(1, int(math.Floor(float64(capacity)*float64(s)+1e-9))))
}

// Reason says why a tenant is (re)placed.
type Reason string

const (
	ReasonUnplaced     Reason = "Unplaced"     // a new tenant
	ReasonDraining     Reason = "Draining"     // its instance is being drained
	ReasonOverCapacity Reason = "OverCapacity" // its instance holds more tenants than its capacity
	ReasonInstanceGone Reason = "InstanceGone" // its instance no longer exists
)

// Move places a tenant on To (From is "" for a new tenant).
type Move struct {
	Namespace, From, To string
	Reason              Reason
}

// Stuck is a tenant that should be (re)placed but no instance has room. Instance is where it
// stays meanwhile ("" for a new tenant). Owner is set when the owner's Share is what keeps it
// out: some instance had room, but the tenant's owner already holds its share of each.
type Stuck struct {
	Namespace, Instance string
	Reason              Reason
	Owner               string
}

// Plan is what Decide asks the controller to do, both lists ordered by namespace.
type Plan struct {
	Moves []Move
	Stuck []Stuck
}

// Decide plans the moves that place new tenants and take tenants off instances that are gone,
// draining or over capacity, never giving an owner more than share of an instance (Share.Limit)
// by a move. It is pure and deterministic: the same fleet and tenants give the
// same plan, whatever their order (names being unique), so every reconcile (and every replica)
// agrees, and a plan that was only half applied is simply finished by the next one. It does not
// modify its inputs.
//
// Placements are stable once made: a tenant is moved only for one of the four Reasons, never to
// even out load, because a move redeploys all of the tenant's applications on another Argo CD.
// For the same reason an instance that is not Ready keeps its tenants: a missed heartbeat must
// not move anyone; it only stops the instance from taking new ones. Likewise an owner over its
// share of an instance (the share was lowered, an admin placed or pinned its tenants there)
// keeps its tenants there: the share only stops the instance from taking more of them.
func Decide(instances []Instance, tenants []Tenant, share Share) Plan {
	p := planner{byName: map[string]Instance{}, load: map[string]int{}, owned: map[owned]int{}, share: share}
	// By name, so that ties in load go to the lowest name whatever the input order.
	sortedInstances := slices.Clone(instances)
	slices.SortStableFunc(sortedInstances, func(a, b Instance) int { return cmp.Compare(a.Name, b.Name) })
	for _, in := range sortedInstances {
		if _, dup := p.byName[in.Name]; !dup { // a duplicate name is a caller's bug; the first wins
			p.byName[in.Name] = in
			p.instances = append(p.instances, in)
		}
	}
	// Pinned tenants count too: they use the instance as much as any other.
	for _, t := range tenants {
		if t.Instance != "" {
			p.load[t.Instance]++
			p.owned[owned{t.Instance, t.owner()}]++
		}
	}
	// In namespace order, so which tenant gets the last free slot does not depend on the input order.
	sorted := slices.Clone(tenants)
	slices.SortStableFunc(sorted, func(a, b Tenant) int { return cmp.Compare(a.Namespace, b.Namespace) })

	// First the tenants that must go somewhere whatever the loads: new ones, and those whose
	// instance is gone or draining. Over capacity comes after, so that it sees the loads these
	// moves leave (a tenant leaving a draining instance may take the last room elsewhere).
	stays := make([]Tenant, 0, len(sorted)) // tenants left where they are, for the capacity pass
	for _, t := range sorted {
		in, exists := p.byName[t.Instance]
		switch {
		case t.Instance == "":
			// Even if pinned: there is no instance to keep it on, and placing is not moving.
			p.place(t, ReasonUnplaced)
		case !exists && t.Pinned:
			// The admin's choice stands (the instance may be about to be recreated); leaving it
			// unscheduled is theirs to fix, so it is neither moved nor reported stuck.
		case !exists:
			p.place(t, ReasonInstanceGone)
		case in.Draining && !t.Pinned:
			p.place(t, ReasonDraining)
		default:
			stays = append(stays, t)
		}
	}

	// Then the instances holding more tenants than their capacity (lowered by an admin, or
	// pinned tenants added on top). Draining ones are left out: their unpinned tenants already
	// left, and the pinned ones stay whatever the count. Targets always have load < capacity,
	// so the first pass cannot have pushed any instance over.
	for _, in := range p.instances {
		if in.Draining {
			continue
		}
		excess := p.load[in.Name] - in.Capacity
		if excess <= 0 {
			continue
		}
		var movable []Tenant // in namespace order, since stays is
		for _, t := range stays {
			if t.Instance == in.Name && !t.Pinned {
				movable = append(movable, t)
			}
		}
		// The last ones in namespace order move: the same tenants are picked on every run, so a
		// stuck one stays the one to move instead of another tenant being moved next time.
		for _, t := range movable[max(0, len(movable)-excess):] {
			p.place(t, ReasonOverCapacity)
		}
	}

	// Ordered by namespace, so the plan reads (and compares) the same every time.
	slices.SortStableFunc(p.plan.Moves, func(a, b Move) int { return cmp.Compare(a.Namespace, b.Namespace) })
	slices.SortStableFunc(p.plan.Stuck, func(a, b Stuck) int { return cmp.Compare(a.Namespace, b.Namespace) })
	return p.plan
}

type planner struct {
	instances []Instance          // by name, one of each
	byName    map[string]Instance // the same, by name
	load      map[string]int      // tenants per instance, updated as the plan assigns
	owned     map[owned]int       // tenants per instance and owner, the same
	share     Share
	plan      Plan
}

// owned keys the tenants one owner has on one instance.
type owned struct{ instance, owner string }

// place moves t to the best target, or reports it stuck where it is.
func (p *planner) place(t Tenant, why Reason) {
	owner := t.owner()
	to, ok, atShare := p.target(t.Instance, owner)
	if !ok {
		s := Stuck{Namespace: t.Namespace, Instance: t.Instance, Reason: why}
		if atShare {
			s.Owner = owner
		}
		p.plan.Stuck = append(p.plan.Stuck, s)
		return
	}
	p.plan.Moves = append(p.plan.Moves, Move{Namespace: t.Namespace, From: t.Instance, To: to, Reason: why})
	// Updating the loads as we go spreads a batch of new tenants instead of piling them all on
	// the instance that was least loaded before the batch.
	if t.Instance != "" {
		p.load[t.Instance]--
		p.owned[owned{t.Instance, owner}]--
	}
	p.load[to]++
	p.owned[owned{to, owner}]++
}

// target is the least loaded eligible instance other than current, ties to the lowest name.
// Eligible: ready (its agent will act on the placement), not draining (it would give the tenant
// straight back), below its capacity, and holding fewer of owner's tenants than the share
// allows. Least load, not least load/capacity: a big instance fills up with everyone else, and
// the rule stays easy to predict. atShare tells, when there is none, that some instance had
// room but not for owner.
func (p *planner) target(current, owner string) (best string, found, atShare bool) {
	for _, in := range p.instances {
		if in.Name == current || !in.Ready || in.Draining {
			continue
		}
		l := p.load[in.Name]
		if l >= in.Capacity {
			continue
		}
		if p.owned[owned{in.Name, owner}] >= p.share.Limit(in.Capacity) {
			atShare = true
			continue
		}
		// Strictly less: instances are by name, so a tie keeps the lower name.
		if !found || l < p.load[best] {
			best, found = in.Name, true
		}
	}
	return best, found, atShare && !found
}
