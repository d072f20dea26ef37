package promotiongraph

import (
	"reflect"
	"testing"
)

func TestNext(t *testing.T) {
	chain := []Environment{auto("dev", ""), auto("staging", "dev"), auto("prod", "staging")}
	tree := []Environment{auto("dev", ""), auto("eu", "dev"), auto("us", "dev"), manual("perf", "dev"),
		auto("eu-prod", "eu"), auto("us-prod", "us")}
	for _, tc := range []struct {
		name    string
		envs    []Environment
		initial string
		results map[string]Result
		want    Walk
	}{{
		name: "begins at the initial Environment", envs: chain, initial: "dev",
		want: Walk{Start: []Step{{"dev", 1}}, Active: []string{"dev"}},
	}, {
		name: "waits for a step in progress", envs: chain, initial: "dev",
		results: map[string]Result{"dev": InProgress},
		want:    Walk{Active: []string{"dev"}},
	}, {
		name: "a success enters the child, one level down", envs: chain, initial: "dev",
		results: map[string]Result{"dev": Succeeded},
		want:    Walk{Start: []Step{{"staging", 2}}, Active: []string{"staging"}},
	}, {
		name: "the last success ends it", envs: chain, initial: "dev",
		results: map[string]Result{"dev": Succeeded, "staging": Succeeded, "prod": Succeeded},
		want:    Walk{Done: true},
	}, {
		name: "a failure ends it and nothing below is entered", envs: chain, initial: "dev",
		results: map[string]Result{"dev": Succeeded, "staging": Failed},
		want:    Walk{Done: true, Failed: true},
	}, {
		name: "may begin below the top", envs: chain, initial: "staging",
		results: map[string]Result{"staging": Succeeded},
		want:    Walk{Start: []Step{{"prod", 2}}, Active: []string{"prod"}},
	}, {
		name: "a level's Environments at once, Manual ones never", envs: tree, initial: "dev",
		results: map[string]Result{"dev": Succeeded},
		want:    Walk{Start: []Step{{"eu", 2}, {"us", 2}}, Active: []string{"eu", "us"}},
	}, {
		name: "the next level waits for the whole level", envs: tree, initial: "dev",
		results: map[string]Result{"dev": Succeeded, "eu": Succeeded, "us": InProgress},
		want:    Walk{Active: []string{"us"}},
	}, {
		name: "a failure beside a step in progress ends it", envs: tree, initial: "dev",
		results: map[string]Result{"dev": Succeeded, "eu": InProgress, "us": Failed},
		want:    Walk{Done: true, Failed: true},
	}, {
		name: "the next level", envs: tree, initial: "dev",
		results: map[string]Result{"dev": Succeeded, "eu": Succeeded, "us": Succeeded, "eu-prod": InProgress},
		want:    Walk{Start: []Step{{"us-prod", 3}}, Active: []string{"eu-prod", "us-prod"}},
	}, {
		name: "a Manual initial Environment is entered, its Manual children are not",
		envs: []Environment{manual("staging", ""), manual("prod", "staging")}, initial: "staging",
		results: map[string]Result{"staging": Succeeded},
		want:    Walk{Done: true},
	}, {
		name: "an initial Environment that does not exist", envs: chain, initial: "qa",
		want: Walk{Done: true, Failed: true, Problem: "Environment qa does not exist"},
	}, {
		name: "an initial Environment in a cycle is refused, not looped on",
		envs: []Environment{auto("a", "b"), auto("b", "a")}, initial: "a",
		want: Walk{Done: true, Failed: true, Problem: "Environments a, b are each other's parents (a cycle): none can be promoted into automatically"},
	}, {
		name: "below a cycle the walk is finite",
		envs: []Environment{auto("a", "b"), auto("b", "a"), auto("c", "a"), auto("d", "c")}, initial: "c",
		results: map[string]Result{"c": Succeeded, "d": Succeeded},
		want:    Walk{Done: true},
	}, {
		name: "below a missing parent the walk goes on",
		envs: []Environment{auto("staging", "qa"), auto("prod", "staging")}, initial: "staging",
		results: map[string]Result{"staging": Succeeded},
		want:    Walk{Start: []Step{{"prod", 2}}, Active: []string{"prod"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(New(tc.envs), tc.initial, tc.results); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Next() = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}
