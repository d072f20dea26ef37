// Package argocdinstance is the registry of ArgoCDInstances, the Argo CD instances of the
// service's fleet.
package argocdinstance

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

type object = *gitops.ArgoCDInstance

// kind lets the agent of an instance (agents) report on its own instance only: every
// instance's agent holds the same ClusterRole, which cannot name "my instance".
func kind(typer runtime.ObjectTyper, agents fleetidentity.Agents) strategy.Kind {
	k := strategy.Typed(typer, v1alpha1.SchemeGroupVersion,
		validation.ValidateArgoCDInstance,
		validation.ValidateArgoCDInstanceUpdate,
		validation.ValidateArgoCDInstanceStatusUpdate)
	k.ClusterScoped = true
	validateStatusUpdate := k.ValidateStatusUpdate
	k.ValidateStatusUpdate = func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		errs := validateStatusUpdate(ctx, obj, old)
		if instance, ok := agents.InstanceOf(ctx); ok && instance != obj.(object).Name {
			errs = append(errs, field.Forbidden(field.NewPath("status"), "the agent of instance "+instance+" may report only on its own instance"))
		}
		return errs
	}
	return k
}

func selectableFields(obj runtime.Object) fields.Set {
	return fields.Set{"spec.draining": strconv.FormatBool(obj.(object).Spec.Draining)}
}

var columns = []table.Column{
	table.String("Cluster", "The cluster Argo CD runs on; empty for the API's.", func(o object) string { return o.Spec.Cluster }),
	table.String("Namespace", "Argo CD's namespace.", func(o object) string { return o.Spec.Namespace }),
	table.Integer("Capacity", "The most tenants placed on it.", func(o object) int64 { return int64(o.Spec.Capacity) }),
	table.Integer("Tenants", "The tenants it holds.", func(o object) int64 { return int64(o.Status.Tenants) }),
	table.String("Draining", "Whether its tenants are being moved off.", func(o object) string { return strconv.FormatBool(o.Spec.Draining) }),
	table.String("Ready", "Whether an agent serves it.", func(o object) string { return ready(o) }),
	table.Wide(table.Integer("Applications", "The Applications its agent keeps on it.", func(o object) int64 { return int64(o.Status.Applications) })),
	table.Wide(table.String("Leader", "The agent that serves it.", func(o object) string { return o.Status.Leader })),
}

// ready is the Ready condition's status, Unknown before any agent reported.
func ready(o object) string {
	for _, c := range o.Status.Conditions {
		if c.Type == gitops.ArgoCDInstanceConditionReady {
			return string(c.Status)
		}
	}
	return string(metav1.ConditionUnknown)
}
