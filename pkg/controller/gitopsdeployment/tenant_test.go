package gitopsdeployment

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tenant remembers the AppProject it wrote until the informer shows that write, so that a
// burst of deployments in one namespace does not write the project once per deployment.
func TestTenantProject(t *testing.T) {
	proj := func(rv string) *argov1alpha1.AppProject {
		return &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	}
	for _, tc := range []struct {
		name string
		// before is what the informer showed when the agent wrote (nil: nothing), written what
		// the write returned (nil: a delete), now what the informer shows at the next reconcile.
		before, written, now *argov1alpha1.AppProject
		want                 string // resourceVersion of the project taken as current; "" for none
	}{
		{name: "created, informer not caught up", before: nil, written: proj("5"), now: nil, want: "5"},
		{name: "created, informer caught up", before: nil, written: proj("5"), now: proj("5"), want: "5"},
		{name: "updated, informer not caught up", before: proj("4"), written: proj("5"), now: proj("4"), want: "5"},
		{name: "updated, then changed by someone else", before: proj("4"), written: proj("5"), now: proj("9"), want: "9"},
		{name: "deleted, informer not caught up", before: proj("4"), written: nil, now: proj("4"), want: ""},
		{name: "deleted, informer caught up", before: proj("4"), written: nil, now: nil, want: ""},
		{name: "deleted, then made again by someone else", before: proj("4"), written: nil, now: proj("7"), want: "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tn tenant
			if got := tn.project(tc.before); got != tc.before {
				t.Fatalf("before any write, the informer's copy must be taken as it is")
			}
			tn.wrote(tc.before, tc.written)
			got := ""
			if p := tn.project(tc.now); p != nil {
				got = p.ResourceVersion
			}
			if got != tc.want {
				t.Errorf("project = %q, want %q", got, tc.want)
			}
			// Once the informer has shown anything but the replaced copy, it is trusted again.
			if tc.now != nil && (tc.before == nil || tc.now.ResourceVersion != tc.before.ResourceVersion) {
				if p := tn.project(proj("100")); p == nil || p.ResourceVersion != "100" {
					t.Errorf("after the informer moved on, its copy must be taken")
				}
			}
		})
	}
}

// Two writes before the informer shows the first: it still shows what the first replaced, so
// the second write's result is the truth until it moves on.
func TestTenantProjectTwoWrites(t *testing.T) {
	old := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "4"}}
	first := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}}
	second := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "6"}}
	var tn tenant
	tn.wrote(tn.project(old), first)
	tn.wrote(tn.project(old), second)
	if p := tn.project(old); p != second {
		t.Errorf("project = %v, want the second write's", p)
	}
	if p := tn.project(first); p != first {
		t.Errorf("once the informer shows another copy, project = %v, want that copy", p)
	}
}
