package promotiongraph

import (
	"reflect"
	"testing"
)

func auto(name, parent string) Environment {
	return Environment{Name: name, Automated: true, Parent: parent}
}
func manual(name, parent string) Environment { return Environment{Name: name, Parent: parent} }

func TestGraph(t *testing.T) {
	for _, tc := range []struct {
		name         string
		envs         []Environment
		wantRoots    []string
		wantChildren map[string][]string
		wantProblems []Problem
		wantBroken   map[string]ProblemKind
	}{{
		name:         "a chain",
		envs:         []Environment{auto("prod", "staging"), auto("dev", ""), auto("staging", "dev")},
		wantRoots:    []string{"dev"},
		wantChildren: map[string][]string{"dev": {"staging"}, "staging": {"prod"}, "prod": nil},
	}, {
		name: "a tree with Manual Environments, which are neither roots nor entered",
		envs: []Environment{auto("dev", ""), auto("qa", "dev"), manual("perf", "dev"), auto("stage-b", "qa"),
			auto("stage-a", "qa"), manual("sandbox", "")},
		wantRoots:    []string{"dev"},
		wantChildren: map[string][]string{"dev": {"qa"}, "qa": {"stage-a", "stage-b"}, "perf": nil},
	}, {
		name:         "two roots",
		envs:         []Environment{auto("eu", ""), auto("us", ""), auto("eu-prod", "eu")},
		wantRoots:    []string{"eu", "us"},
		wantChildren: map[string][]string{"eu": {"eu-prod"}, "us": nil},
	}, {
		name:         "a missing parent breaks its Environment and those below",
		envs:         []Environment{auto("dev", ""), auto("staging", "qa"), auto("prod", "staging")},
		wantRoots:    []string{"dev"},
		wantProblems: []Problem{{Kind: ParentNotFound, Environments: []string{"staging"}, Parent: "qa"}},
		wantBroken:   map[string]ProblemKind{"staging": ParentNotFound, "prod": ParentNotFound},
	}, {
		name:         "a cycle, and a chain hanging below it",
		envs:         []Environment{auto("b", "a"), auto("a", "c"), auto("c", "b"), auto("d", "c"), auto("root", "")},
		wantRoots:    []string{"root"},
		wantChildren: map[string][]string{"c": {"a", "d"}},
		wantProblems: []Problem{{Kind: Cycle, Environments: []string{"a", "b", "c"}}},
		wantBroken:   map[string]ProblemKind{"a": Cycle, "b": Cycle, "c": Cycle, "d": Cycle},
	}, {
		name:         "an Environment its own parent",
		envs:         []Environment{auto("self", "self")},
		wantProblems: []Problem{{Kind: Cycle, Environments: []string{"self"}}},
		wantBroken:   map[string]ProblemKind{"self": Cycle},
	}, {
		name: "two faults, ordered by Environment",
		envs: []Environment{auto("z", "missing"), auto("m", "n"), auto("n", "m")},
		wantProblems: []Problem{{Kind: Cycle, Environments: []string{"m", "n"}},
			{Kind: ParentNotFound, Environments: []string{"z"}, Parent: "missing"}},
		wantBroken: map[string]ProblemKind{"m": Cycle, "n": Cycle, "z": ParentNotFound},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(tc.envs)
			if got := g.Roots(); !reflect.DeepEqual(got, tc.wantRoots) {
				t.Errorf("Roots() = %v, want %v", got, tc.wantRoots)
			}
			for env, want := range tc.wantChildren {
				if got := g.AutomatedChildren(env); !reflect.DeepEqual(got, want) {
					t.Errorf("AutomatedChildren(%s) = %v, want %v", env, got, want)
				}
			}
			if got := g.Problems(); !reflect.DeepEqual(got, tc.wantProblems) {
				t.Errorf("Problems() = %+v, want %+v", got, tc.wantProblems)
			}
			for _, e := range tc.envs {
				p, broken := g.Broken(e.Name)
				want, wantBroken := tc.wantBroken[e.Name]
				if broken != wantBroken || (broken && p.Kind != want) {
					t.Errorf("Broken(%s) = %v %v, want %v %v", e.Name, p.Kind, broken, want, wantBroken)
				}
			}
		})
	}
}

func TestProblemMessagesNameTheEnvironments(t *testing.T) {
	g := New([]Environment{auto("staging", "qa"), auto("a", "b"), auto("b", "a")})
	var got []string
	for _, p := range g.Problems() {
		got = append(got, p.Message())
	}
	want := []string{
		"Environments a, b are each other's parents (a cycle): none can be promoted into automatically",
		"Environment staging has parentEnvironment qa, which does not exist",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
}
