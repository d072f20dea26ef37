// Package tenantplacement is the registry of TenantPlacements, which place tenant namespaces
// on the instances of the service's Argo CD fleet.
package tenantplacement

import (
	"context"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/validation"
	"github.com/gitops-service/gitops-service/pkg/registry/fleetidentity"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
)

type object = *gitops.TenantPlacement

// kind confines the agent of each instance (agents) to the tenants of its instance, on top of
// the rules of a hand-over: the placement controller and admins place tenants; an agent only
// takes the tenants placed on its instance, releases those it holds, and keeps its finalizer
// on them.
func kind(typer runtime.ObjectTyper, agents fleetidentity.Agents) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateTenantPlacement,
		validation.ValidateTenantPlacementUpdate,
		validation.ValidateTenantPlacementStatusUpdate)
	k.ClusterScoped = true
	validate, validateUpdate, validateStatusUpdate := k.Validate, k.ValidateUpdate, k.ValidateStatusUpdate
	k.Validate = func(ctx context.Context, obj runtime.Object) field.ErrorList {
		errs := validate(ctx, obj)
		if instance, ok := agents.InstanceOf(ctx); ok {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "instance"),
				"the agent of instance "+instance+" may not place tenants: the placement controller does"))
		}
		return errs
	}
	k.ValidateUpdate = func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		errs := validateUpdate(ctx, obj, old)
		if instance, ok := agents.InstanceOf(ctx); ok {
			errs = append(errs, agentUpdate(instance, obj.(object), old.(object), false)...)
		}
		return errs
	}
	k.ValidateStatusUpdate = func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		errs := validateStatusUpdate(ctx, obj, old)
		if instance, ok := agents.InstanceOf(ctx); ok {
			errs = append(errs, agentUpdate(instance, obj.(object), old.(object), true)...)
		}
		return errs
	}
	return k
}

// agentUpdate is what the agent of instance may not do to a placement: touch one neither
// placed on its instance nor held by it, or move one (spec) anywhere. Together with
// ValidateTenantPlacementStatusUpdate, an agent can only take a tenant placed on its instance
// and release one it holds.
func agentUpdate(instance string, obj, old object, status bool) field.ErrorList {
	if old.Spec.Instance != instance && old.Status.Instance != instance {
		p := field.NewPath("spec", "instance")
		if status {
			p = field.NewPath("status", "instance")
		}
		return field.ErrorList{field.Forbidden(p, "the agent of instance "+instance+" may change only the tenants placed on or held by its instance")}
	}
	// Placed here but still held by another instance, which is releasing it: the hold and its
	// finalizer are the holder's until it lets go, or two instances would sync the tenant.
	if old.Status.Instance != "" && old.Status.Instance != instance {
		if status && obj.Status.Instance != old.Status.Instance {
			return field.ErrorList{field.Forbidden(field.NewPath("status", "instance"),
				"the agent of instance "+instance+" may not release a tenant that instance "+old.Status.Instance+" holds")}
		}
		if !slices.Equal(obj.Finalizers, old.Finalizers) {
			return field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
				"the agent of instance "+instance+" may not change the finalizers of a tenant that instance "+old.Status.Instance+" holds")}
		}
	}
	if !status && obj.Spec != old.Spec {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "the agent of instance "+instance+" may not move tenants: the placement controller does")}
	}
	return nil
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
