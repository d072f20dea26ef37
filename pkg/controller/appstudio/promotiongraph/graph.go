// Package promotiongraph is the graph automated promotion walks: the Environments of a
// namespace, each pointing at its parent (spec.parentEnvironment), of which the
// AppStudioAutomated ones are entered automatically. It decides, pure, where a promotion goes
// next; the PromotionRun controller acts.
//
// An Environment has at most one parent, so the graph is a forest unless parents loop: a
// cycle, or a chain that leads into one. A cycle has no root, so no walk from a root reaches
// it; only a walk that starts inside (a PromotionRun's initialEnvironment) or a parent that
// does not exist can meet a broken graph, and both are refused with the Environments named,
// never looped on.
package promotiongraph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// Environment is what the graph needs of one Environment.
type Environment struct {
	Name string
	// Automated is deploymentStrategy AppStudioAutomated: a successful promotion into its
	// parent promotes into it, and, without a parent, a new Snapshot does.
	Automated bool
	// Parent is spec.parentEnvironment, "" for none.
	Parent string
}

// FromEnvironments is what the graph needs of envs.
func FromEnvironments(envs []*appstudiov1alpha1.Environment) []Environment {
	out := make([]Environment, 0, len(envs))
	for _, e := range envs {
		out = append(out, Environment{
			Name:      e.Name,
			Automated: e.Spec.DeploymentStrategy == appstudiov1alpha1.DeploymentStrategyAppStudioAutomated,
			Parent:    e.Spec.ParentEnvironment,
		})
	}
	return out
}

// ProblemKind is what is wrong with part of the graph.
type ProblemKind string

const (
	// ParentNotFound: an Environment's parent is no Environment of the namespace.
	ParentNotFound ProblemKind = "ParentNotFound"
	// Cycle: Environments are each other's ancestors.
	Cycle ProblemKind = "Cycle"
)

// Problem is one fault of the graph, with the Environments it concerns (sorted).
type Problem struct {
	Kind ProblemKind
	// Environments are, for ParentNotFound, the one whose parent is missing; for Cycle, the
	// Environments of the cycle.
	Environments []string
	// Parent is the missing parent's name (ParentNotFound only).
	Parent string
}

// Message says what is wrong in the words of the API.
func (p Problem) Message() string {
	switch p.Kind {
	case ParentNotFound:
		return fmt.Sprintf("Environment %s has parentEnvironment %s, which does not exist", p.Environments[0], p.Parent)
	default:
		return fmt.Sprintf("Environments %s are each other's parents (a cycle): none can be promoted into automatically",
			strings.Join(p.Environments, ", "))
	}
}

// Graph is the promotion graph of one namespace's Environments.
type Graph struct {
	byName   map[string]Environment
	children map[string][]string // every child, by name
	problems []Problem
	// broken holds the Environments in a cycle or below a missing parent or a cycle: the
	// Problem that breaks each one's chain of parents.
	broken map[string]Problem
}

// New builds the graph of envs (names unique; a duplicate's first occurrence counts).
func New(envs []Environment) *Graph {
	g := &Graph{byName: map[string]Environment{}, children: map[string][]string{}, broken: map[string]Problem{}}
	for _, e := range envs {
		if _, dup := g.byName[e.Name]; !dup {
			g.byName[e.Name] = e
		}
	}
	names := g.names()
	for _, n := range names {
		if p := g.byName[n].Parent; p != "" {
			g.children[p] = append(g.children[p], n) // in name order, since names is
		}
	}
	g.findProblems(names)
	return g
}

func (g *Graph) names() []string {
	names := make([]string, 0, len(g.byName))
	for n := range g.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// findProblems follows each Environment's parents until a root, a missing parent, or an
// Environment seen on the same path (a cycle). Each Environment is followed once.
func (g *Graph) findProblems(names []string) {
	done := map[string]bool{}
	for _, start := range names {
		var path []string
		onPath := map[string]int{}
		var found *Problem
		for n := start; ; {
			if done[n] {
				if p, ok := g.broken[n]; ok {
					found = &p
				}
				break
			}
			if i, loop := onPath[n]; loop {
				cycle := slices.Clone(path[i:])
				slices.Sort(cycle)
				p := Problem{Kind: Cycle, Environments: cycle}
				g.problems = append(g.problems, p)
				found = &p
				break
			}
			onPath[n] = len(path)
			path = append(path, n)
			parent := g.byName[n].Parent
			if parent == "" {
				break
			}
			if _, ok := g.byName[parent]; !ok {
				p := Problem{Kind: ParentNotFound, Environments: []string{n}, Parent: parent}
				g.problems = append(g.problems, p)
				found = &p
				break
			}
			n = parent
		}
		for _, n := range path {
			done[n] = true
			if found != nil {
				g.broken[n] = *found
			}
		}
	}
	slices.SortFunc(g.problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Environments[0], b.Environments[0]), cmp.Compare(a.Kind, b.Kind))
	})
}

// Problems are the graph's faults, ordered by their first Environment.
func (g *Graph) Problems() []Problem { return g.problems }

// Has tells whether name is an Environment of the graph.
func (g *Graph) Has(name string) bool {
	_, ok := g.byName[name]
	return ok
}

// Roots are the AppStudioAutomated Environments without a parent, by name: where a new
// Snapshot is promoted.
func (g *Graph) Roots() []string {
	var roots []string
	for _, n := range g.names() {
		if e := g.byName[n]; e.Automated && e.Parent == "" {
			roots = append(roots, n)
		}
	}
	return roots
}

// AutomatedChildren are the AppStudioAutomated children of name, by name: where a successful
// promotion into name goes next. A Manual child is never entered automatically.
func (g *Graph) AutomatedChildren(name string) []string {
	var out []string
	for _, c := range g.children[name] {
		if g.byName[c].Automated {
			out = append(out, c)
		}
	}
	return out
}

// Broken is the Problem that keeps name out of automated promotion (it is in a cycle, or its
// chain of parents is), if any.
func (g *Graph) Broken(name string) (Problem, bool) {
	p, ok := g.broken[name]
	return p, ok
}
