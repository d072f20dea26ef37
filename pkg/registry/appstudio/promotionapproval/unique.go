package promotionapproval

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

// UniqueIndex allows one decision per user on a PromotionRun's promotion into an Environment,
// in a namespace. The storage checks it in the transaction that creates an approval, so of two
// racing decisions of one user exactly one is stored, which the check of AuthorizedREST
// (a read before the create) cannot promise; that check stays for the common case and for dry
// runs, which never reach the storage's insert. The key never changes: an approval's spec is
// immutable and an update keeps the stored user.
var UniqueIndex = storage.UniqueIndex{
	Key: func(obj runtime.Object) string {
		a := obj.(object)
		if a.Spec.Username == "" {
			return "" // no user to tell apart (a server without authentication, in tests)
		}
		// The run (by name and UID: a run made again under its name is another) and the
		// Environment are DNS names and a UID, without "/": the user name, last, may hold any
		// character without making two keys alike.
		return a.Spec.PromotionRun + "/" + string(a.Spec.PromotionRunUID) + "/" + a.Spec.Environment + "/" + a.Spec.Username
	},
	Conflict: func(obj runtime.Object, holder string) error {
		return alreadyDecided(obj.(object), holder)
	},
}

// alreadyDecided is the 409 of a's user's second decision; earlier is the first's name.
func alreadyDecided(a object, earlier string) error {
	return apierrors.NewConflict(appstudio.Resource("promotionapprovals"), a.Name, fmt.Errorf(
		"user %s already decided on PromotionRun %s for Environment %s: PromotionApproval %s",
		a.Spec.Username, a.Spec.PromotionRun, a.Spec.Environment, earlier))
}
