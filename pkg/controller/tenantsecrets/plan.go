package tenantsecrets

// plan is what to do for one namespace, in this order: stop watching it, delete the binding,
// bind, start watching.
type plan struct {
	stop, unbind, bind, start bool
}

// planFor decides for a namespace that the components serve (served) or not, which the Set
// watches (running) or not, and whose list or watch was refused (forbidden): a binding deleted
// or changed by someone else is made again.
func planFor(served, running, forbidden bool) plan {
	switch {
	case served && !running:
		return plan{bind: true, start: true}
	case served && forbidden:
		return plan{unbind: true, bind: true}
	case !served && running:
		return plan{stop: true, unbind: true}
	}
	return plan{}
}
