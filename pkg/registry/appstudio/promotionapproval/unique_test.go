package promotionapproval

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
)

func TestUniqueIndexKey(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(object)
		// same is whether the approval claims the key of stored().
		same bool
	}{
		{"same approval", func(object) {}, true},
		// Whatever the user decides, and whatever the object's name: one decision.
		{"other decision and name", func(a object) {
			a.Name, a.Spec.Decision, a.Spec.Comment = "other", appstudio.ApprovalReject, "no"
		}, true},
		{"other groups", func(a object) { a.Spec.Groups, a.Spec.UID = nil, "x" }, true},
		{"other user", func(a object) { a.Spec.Username = "bob" }, false},
		{"other run", func(a object) { a.Spec.PromotionRun = "shop-43.dev-auto" }, false},
		{"another run of the same name", func(a object) { a.Spec.PromotionRunUID = "made-again" }, false},
		{"other Environment", func(a object) { a.Spec.Environment = "staging" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := stored()
			tc.mutate(a)
			got, want := UniqueIndex.Key(a), UniqueIndex.Key(stored())
			if (got == want) != tc.same {
				t.Errorf("key %q, stored approval's %q: same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
	if got := UniqueIndex.Key(stored()); got != "shop-42.dev-auto//prod/alice" {
		t.Errorf("key = %q", got)
	}
	// Without a user the approval claims no key.
	a := stored()
	noUser(a)
	if got := UniqueIndex.Key(a); got != "" {
		t.Errorf("key without a user = %q, want none", got)
	}
}

func TestUniqueIndexConflict(t *testing.T) {
	err := UniqueIndex.Conflict(stored(), "first")
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(),
		"user alice already decided on PromotionRun shop-42.dev-auto for Environment prod: PromotionApproval first") {
		t.Errorf("got %v, want a 409 naming the first decision", err)
	}
}
