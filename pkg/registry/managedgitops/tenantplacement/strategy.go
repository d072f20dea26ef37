// Package tenantplacement is the registry of TenantPlacements, which place tenant namespaces
// on the instances of the service's Argo CD fleet.
package tenantplacement

import (
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.TenantPlacement

func kind(typer runtime.ObjectTyper) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateTenantPlacement,
		validation.ValidateTenantPlacementUpdate,
		validation.ValidateTenantPlacementStatusUpdate)
	k.ClusterScoped = true
	return k
}

func selectableFields(obj runtime.Object) fields.Set {
	o := obj.(object)
	return fields.Set{"spec.instance": o.Spec.Instance, "status.instance": o.Status.Instance}
}

var columns = []table.Column{
	table.String("Instance", "The instance the tenant is placed on.", func(o object) string { return o.Spec.Instance }),
	table.String("Held By", "The instance whose agent reconciles the tenant now.", func(o object) string { return o.Status.Instance }),
	table.String("Pinned", "Whether an admin fixed the instance.", func(o object) string { return strconv.FormatBool(o.Spec.Pinned) }),
	table.String("Phase", "Pending (held by none), Placed, or Moving (held by another instance).", func(o object) string { return phase(o) }),
	table.Wide(table.String("Message", "Why the tenant is not held where it is placed.", func(o object) string { return o.Status.Message })),
}

// phase is where the hand-over stands, from spec and status: it is not stored, so that it
// can never disagree with them.
func phase(o object) string {
	switch {
	case o.Status.Instance == "":
		return "Pending"
	case o.Status.Instance == o.Spec.Instance:
		return "Placed"
	default:
		return "Moving"
	}
}
