// Package auditentry is the registry of AuditEntries, the audit trail of writes that the storage
// records in each write's own transaction. The API serves them read-only.
package auditentry

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
	"github.com/gitops-service/gitops-service/pkg/registry/table"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

type object = *gitops.AuditEntry

// Resource is where the storage keeps the trail.
var Resource = gitops.Resource("auditentries")

// serverUser stands for writes that carry no user: those gitops-apiserver makes itself.
const serverUser = "system:gitops-apiserver"

// Entry builds the entry of a committed write. Its name is the write's resourceVersion,
// zero-padded to 20 digits so that name order, and so list order, is commit order; no two
// writes share an RV, so no two entries share a name.
func Entry(w storage.AuditedWrite) (runtime.Object, error) {
	e := &gitops.AuditEntry{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         w.Namespace,
			Name:              fmt.Sprintf("%020d", w.RV),
			UID:               uuid.NewUUID(),
			CreationTimestamp: metav1.NewTime(w.Time.Truncate(time.Second)),
			Labels: map[string]string{
				v1alpha1.LabelAuditResource: w.Resource.Resource,
				v1alpha1.LabelAuditVerb:     w.Verb,
			},
		},
		Verb: w.Verb,
		Object: gitops.AuditObject{
			APIGroup:        w.Resource.Group,
			Resource:        w.Resource.Resource,
			Subresource:     w.Subresource,
			Name:            w.Name,
			UID:             w.UID,
			ResourceVersion: fmt.Sprint(w.RV),
		},
		User: gitops.AuditUser{Username: serverUser},
		Time: metav1.NewMicroTime(w.Time),
	}
	// Names up to 253 characters are valid object names but not label values: such an
	// object's entries are found by the field selector object.name instead.
	if len(validation.IsValidLabelValue(w.Name)) == 0 {
		e.Labels[v1alpha1.LabelAuditName] = w.Name
	}
	// Only who the user is: the authenticator's extra attributes may identify a credential
	// (a service account token's ID), so they are never recorded.
	if w.User != nil {
		e.User = gitops.AuditUser{Username: w.User.GetName(), UID: w.User.GetUID(), Groups: w.User.GetGroups()}
	}
	return e, nil
}

// Audited says which writes the trail records: those of every kind tenants use, in both
// groups. Not the service's internal kinds (tenants cannot see them) nor the trail itself.
func Audited(tenantKinds ...schema.GroupResource) func(schema.GroupResource) bool {
	set := map[schema.GroupResource]bool{}
	for _, gr := range tenantKinds {
		set[gr] = true
	}
	return func(gr schema.GroupResource) bool { return set[gr] }
}

// kind is the strategy of a resource nobody writes through the API: it serves no create or
// update (REST leaves them out), so its validation only ever sees a delete's object.
func kind(typer runtime.ObjectTyper) strategy.Kind {
	refuse := func(object) field.ErrorList {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "audit entries are written by gitops-apiserver only")}
	}
	return strategy.Typed(typer, v1alpha1.SchemeGroupVersion, refuse,
		func(_, _ object) field.ErrorList { return refuse(nil) }, nil)
}

func selectableFields(obj runtime.Object) fields.Set {
	o := obj.(object)
	return fields.Set{
		"verb":               o.Verb,
		"object.resource":    o.Object.Resource,
		"object.name":        o.Object.Name,
		"object.subresource": o.Object.Subresource,
		"user.username":      o.User.Username,
	}
}

var columns = []table.Column{
	table.String("Time", "When the write was committed (UTC).", func(o object) string {
		return o.Time.UTC().Format("2006-01-02T15:04:05.000Z")
	}),
	table.String("User", "Who made the write.", func(o object) string { return o.User.Username }),
	table.String("Verb", "The request's verb.", func(o object) string { return o.Verb }),
	table.String("Object", "The object written, as resource/name.", func(o object) string {
		return o.Object.Resource + "/" + o.Object.Name
	}),
	table.Wide(table.String("Subresource", "The subresource written, if any.", func(o object) string { return o.Object.Subresource })),
	table.Wide(table.String("Object-Version", "The object's resourceVersion after the write.", func(o object) string {
		return o.Object.ResourceVersion
	})),
}
