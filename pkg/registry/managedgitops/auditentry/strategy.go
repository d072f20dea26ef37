// Package auditentry is the registry of AuditEntries, the audit trail of writes that the storage
// records in each write's own transaction. The API serves them read-only.
package auditentry

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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

// stored is what audit_log holds of a write: the request's part. The rest (namespace,
// resourceVersion, time) are columns of the row.
type stored struct {
	Verb        string    `json:"v"`
	Group       string    `json:"g,omitempty"`
	Resource    string    `json:"r"`
	Subresource string    `json:"s,omitempty"`
	Name        string    `json:"n"`
	UID         types.UID `json:"u,omitempty"`
	Username    string    `json:"un"`
	UserUID     string    `json:"uu,omitempty"`
	Groups      []string  `json:"ug,omitempty"`
}

// Encode is the stored entry of a write. Only who the user is: the authenticator's extra
// attributes may identify a credential (a service account token's ID), so they are never kept.
func Encode(w storage.AuditedWrite) ([]byte, error) {
	e := stored{Verb: w.Verb, Group: w.Resource.Group, Resource: w.Resource.Resource, Subresource: w.Subresource,
		Name: w.Name, UID: w.UID, Username: serverUser}
	if w.User != nil {
		e.Username, e.UserUID, e.Groups = w.User.GetName(), w.User.GetUID(), w.User.GetGroups()
	}
	return json.Marshal(e)
}

// Decode is the AuditEntry of a stored entry. Its name is the write's resourceVersion,
// zero-padded to 20 digits so that name order is commit order; its UID is derived from the
// namespace and resourceVersion, which no other entry shares, so that it is the same on every
// read.
func Decode(row storage.AuditRow) (runtime.Object, error) {
	var e stored
	if err := json.Unmarshal(row.Entry, &e); err != nil {
		return nil, fmt.Errorf("audit entry %s/%d: %w", row.Namespace, row.RV, err)
	}
	labels := map[string]string{v1alpha1.LabelAuditResource: e.Resource, v1alpha1.LabelAuditVerb: e.Verb}
	// Names up to 253 characters are valid object names but not label values: such an
	// object's entries are found by the field selector object.name instead.
	if len(validation.IsValidLabelValue(e.Name)) == 0 {
		labels[v1alpha1.LabelAuditName] = e.Name
	}
	rv := strconv.FormatInt(row.RV, 10)
	return &gitops.AuditEntry{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         row.Namespace,
			Name:              storage.AuditEntryName(row.RV),
			UID:               types.UID(uuid.NewSHA1(uidSpace, []byte(row.Namespace+"/"+rv)).String()),
			CreationTimestamp: metav1.NewTime(row.CommittedAt.Truncate(time.Second)),
			Labels:            labels,
		},
		Verb: e.Verb,
		Object: gitops.AuditObject{APIGroup: e.Group, Resource: e.Resource, Subresource: e.Subresource, Name: e.Name, UID: e.UID,
			ResourceVersion: rv},
		User: gitops.AuditUser{Username: e.Username, UID: e.UserUID, Groups: e.Groups},
		Time: metav1.NewMicroTime(row.CommittedAt),
	}, nil
}

// uidSpace is the namespace of the entries' name-based UUIDs.
var uidSpace = uuid.MustParse("6f1d4a52-1c0e-4b8e-9a57-3d2f7c1b9e40")

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
