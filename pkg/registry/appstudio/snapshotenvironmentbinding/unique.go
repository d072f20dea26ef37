package snapshotenvironmentbinding

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

// UniqueIndex allows one binding per application and environment in a namespace. The storage
// checks it in the transaction that creates a binding, so of two racing creates exactly one
// wins; both fields are immutable, so no update can break it.
var UniqueIndex = storage.UniqueIndex{
	Key: func(obj runtime.Object) string {
		b := obj.(object)
		// Both are DNS names, so "/" cannot make two pairs look alike.
		return b.Spec.Application + "/" + b.Spec.Environment
	},
	Conflict: func(obj runtime.Object, holder string) error {
		b := obj.(object)
		return apierrors.NewInvalid(schema.GroupKind{Group: appstudio.GroupName, Kind: "SnapshotEnvironmentBinding"}, b.Name,
			field.ErrorList{field.Invalid(field.NewPath("spec", "environment"), b.Spec.Environment, fmt.Sprintf(
				"SnapshotEnvironmentBinding %q already binds application %q to this environment; there can be one per application and environment in a namespace",
				holder, b.Spec.Application))})
	},
}
