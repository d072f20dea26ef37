package autopromotion

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
)

var t0 = metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))

func snapshot(name string, created time.Duration) *appstudiov1alpha1.Snapshot {
	return &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", CreationTimestamp: metav1.NewTime(t0.Add(created))},
		Spec:       appstudiov1alpha1.SnapshotSpec{Application: "shop"},
	}
}

func TestNewest(t *testing.T) {
	deleted := snapshot("s9", 9*time.Second)
	deleted.DeletionTimestamp = &t0
	for _, tc := range []struct {
		name string
		in   []*appstudiov1alpha1.Snapshot
		want string
	}{
		{"created last", []*appstudiov1alpha1.Snapshot{snapshot("b", 2*time.Second), snapshot("a", 3*time.Second)}, "a"},
		{"same second: last by name", []*appstudiov1alpha1.Snapshot{snapshot("b", 0), snapshot("c", 0), snapshot("a", 0)}, "c"},
		{"not one being deleted", []*appstudiov1alpha1.Snapshot{snapshot("s1", time.Second), deleted}, "s1"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if n := Newest(tc.in); n != nil {
				got = n.Name
			}
			if got != tc.want {
				t.Errorf("Newest = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	env := func(name string, automated bool, parent string) promotiongraph.Environment {
		return promotiongraph.Environment{Name: name, Automated: automated, Parent: parent}
	}
	chain := promotiongraph.New([]promotiongraph.Environment{env("dev", true, ""), env("staging", true, "dev"), env("prod", true, "staging")})
	s1, s2 := snapshot("s1", time.Second), snapshot("s2", 2*time.Second)
	later := metav1.NewTime(t0.Add(90 * time.Second))
	for _, tc := range []struct {
		name             string
		snapshot, newest *appstudiov1alpha1.Snapshot
		graph            *promotiongraph.Graph
		runs             map[string]bool
		promoted         *metav1.Time
		want             []string // initial Environments of the runs to create
		wantProblems     int
	}{{
		name: "the newest Snapshot, from the root", snapshot: s2, newest: s2, graph: chain,
		want: []string{"dev"},
	}, {
		name: "not an older one", snapshot: s1, newest: s2, graph: chain,
	}, {
		name: "not twice", snapshot: s2, newest: s2, graph: chain, runs: map[string]bool{RunName("s2", "dev"): true},
	}, {
		name: "not one older than a Snapshot already promoted (and deleted since)", snapshot: s1, newest: s1, graph: chain,
		promoted: &later,
	}, {
		name: "one newer than the last promoted", snapshot: s2, newest: s2, graph: chain,
		promoted: &s1.CreationTimestamp, want: []string{"dev"},
	}, {
		name: "every root, Manual Environments never",
		graph: promotiongraph.New([]promotiongraph.Environment{env("eu", true, ""), env("us", true, ""),
			env("sandbox", false, ""), env("eu-prod", true, "eu")}),
		snapshot: s2, newest: s2,
		want: []string{"eu", "us"},
	}, {
		name: "no automated Environment: nothing", snapshot: s2, newest: s2,
		graph: promotiongraph.New([]promotiongraph.Environment{env("staging", false, "")}),
	}, {
		name: "graph faults are told, the sound part promoted", snapshot: s2, newest: s2,
		graph: promotiongraph.New([]promotiongraph.Environment{env("dev", true, ""), env("a", true, "b"), env("b", true, "a"),
			env("x", true, "missing")}),
		want: []string{"dev"}, wantProblems: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.snapshot, tc.newest, tc.graph, tc.runs, tc.promoted)
			var got []string
			for _, r := range p.Create {
				got = append(got, r.Spec.AutomatedPromotion.InitialEnvironment)
				if r.Name != RunName(tc.snapshot.Name, r.Spec.AutomatedPromotion.InitialEnvironment) || r.Namespace != "team" ||
					r.Spec.Snapshot != tc.snapshot.Name || r.Spec.Application != "shop" || r.Spec.ManualPromotion.TargetEnvironment != "" ||
					r.Annotations[AnnotationSnapshot] != tc.snapshot.Name {
					t.Errorf("run %+v", r)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("runs from %v, want %v", got, tc.want)
			}
			if len(p.Problems) != tc.wantProblems {
				t.Errorf("problems %+v, want %d", p.Problems, tc.wantProblems)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	if got := RunName("Shop-1", "dev"); got != "shop-1.dev-auto" {
		t.Errorf("RunName = %q", got)
	}
	if RunName("a-b", "c") == RunName("a", "b-c") {
		t.Error("two Snapshot and Environment pairs share a name")
	}
	long := RunName(strings.Repeat("s", 250), "dev")
	if len(long) > 253 || long == RunName(strings.Repeat("s", 250), "prod") {
		t.Errorf("a long name is shortened to a unique one: %q", long)
	}
}
