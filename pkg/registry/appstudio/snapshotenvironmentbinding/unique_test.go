package snapshotenvironmentbinding

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUniqueIndexKey(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(object)
		// same is whether the binding claims the key of stored().
		same bool
	}{
		{"same binding", func(object) {}, true},
		// Another snapshot of the same application in the same environment is the same
		// deployment target, which one binding must own.
		{"other snapshot and name", func(b object) { b.Name = "other"; b.Spec.Snapshot = "next-snapshot" }, true},
		{"other components", func(b object) { b.Spec.Components = nil }, true},
		{"other application", func(b object) { b.Spec.Application = "other-app" }, false},
		{"other environment", func(b object) { b.Spec.Environment = "prod" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := stored()
			tc.mutate(b)
			got, want := UniqueIndex.Key(b), UniqueIndex.Key(stored())
			if (got == want) != tc.same {
				t.Errorf("key %q, stored binding's %q: same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
}

func TestUniqueIndexKeyIsApplicationAndEnvironment(t *testing.T) {
	if got, want := UniqueIndex.Key(stored()), "new-demo-app/staging"; got != want {
		t.Errorf("key = %q, want %q", got, want)
	}
}

func TestUniqueIndexConflict(t *testing.T) {
	err := UniqueIndex.Conflict(stored(), "first-binding")
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want an Invalid one", err)
	}
	status := err.(apierrors.APIStatus).Status()
	d := status.Details
	if d == nil || d.Group != "appstudio.redhat.com" || d.Kind != "SnapshotEnvironmentBinding" || d.Name != "appa-staging-binding" {
		t.Errorf("details = %+v, want the group, kind and name of the refused binding", d)
	}
	if d == nil || len(d.Causes) != 1 || d.Causes[0].Type != metav1.CauseTypeFieldValueInvalid || d.Causes[0].Field != "spec.environment" {
		t.Fatalf("causes = %+v, want one invalid spec.environment", d)
	}
	// The message must say which binding holds the pair, so that the user can find it.
	for _, s := range []string{`"first-binding"`, `"new-demo-app"`} {
		if !strings.Contains(d.Causes[0].Message, s) {
			t.Errorf("message %q does not name %s", d.Causes[0].Message, s)
		}
	}
}
