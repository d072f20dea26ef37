package promotiongraph

import (
	"fmt"
	"slices"
)

// Result is where the promotion into one Environment is.
type Result string

const (
	// NotStarted: the walk has not entered the Environment (no result recorded).
	NotStarted Result = ""
	InProgress Result = "InProgress"
	Succeeded  Result = "Succeeded"
	Failed     Result = "Failed"
)

// Step is one Environment a walk enters, at Number: 1 for the initial Environment, one more
// for each level below it.
type Step struct {
	Environment string
	Number      int32
}

// Walk is where an automated promotion stands and what it does next.
type Walk struct {
	// Start are the steps to begin now: the Environments of the current level not begun yet.
	Start []Step
	// Active are the Environments of the current level still in progress, Start included:
	// the promotion's active bindings are theirs.
	Active []string
	// Done: no step is left to begin or wait for. Failed tells how it ended.
	Done, Failed bool
	// Problem, when set, is why the walk cannot begin (Done and Failed are set too).
	Problem string
}

// Next decides an automated promotion that begins at initial, from the results of the steps
// so far (by Environment; a missing one is NotStarted). Levels go one after the other: the
// AppStudioAutomated children of a level's Environments are entered once every Environment of
// the level succeeded, all at once; a failed step ends the walk, and nothing below it is
// entered. The initial Environment is entered whatever its strategy (someone asked for it),
// every other only if it is AppStudioAutomated.
func Next(g *Graph, initial string, results map[string]Result) Walk {
	if !g.Has(initial) {
		return Walk{Done: true, Failed: true, Problem: fmt.Sprintf("Environment %s does not exist", initial)}
	}
	if p, ok := g.Broken(initial); ok && p.Kind == Cycle && slices.Contains(p.Environments, initial) {
		return Walk{Done: true, Failed: true, Problem: p.Message()}
	}
	level := []string{initial}
	// seen guards the walk even if the graph changed under a caller: an Environment is
	// entered once.
	seen := map[string]bool{initial: true}
	for depth := int32(1); len(level) > 0; depth++ {
		var w Walk
		allSucceeded := true
		for _, env := range level {
			switch results[env] {
			case Failed:
				return Walk{Done: true, Failed: true}
			case Succeeded:
			case InProgress:
				allSucceeded = false
				w.Active = append(w.Active, env)
			default:
				allSucceeded = false
				w.Start = append(w.Start, Step{Environment: env, Number: depth})
				w.Active = append(w.Active, env)
			}
		}
		if !allSucceeded {
			// A failure later in the level still ends the walk: look at the whole level first.
			return w
		}
		var next []string
		for _, env := range level {
			for _, c := range g.AutomatedChildren(env) {
				if !seen[c] {
					seen[c] = true
					next = append(next, c)
				}
			}
		}
		level = next
	}
	return Walk{Done: true}
}
