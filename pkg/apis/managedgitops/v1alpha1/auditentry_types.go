package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels of every AuditEntry, for label selectors (kubectl get auditentries -l ...).
const (
	// LabelAuditResource is the plural resource written, such as gitopsdeployments.
	LabelAuditResource = "audit.managed-gitops.redhat.com/resource"
	// LabelAuditName is the name of the object written, when it is a valid label value.
	LabelAuditName = "audit.managed-gitops.redhat.com/name"
	// LabelAuditVerb is the verb of the write.
	LabelAuditVerb = "audit.managed-gitops.redhat.com/verb"
)

// +genclient
// +genclient:onlyVerbs=get,list,watch
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditEntry records one write to an object of the service's API in its namespace: who made
// it, with which verb, and the object's resourceVersion after it. gitops-apiserver writes it in
// the same PostgreSQL transaction as the write itself, so every acknowledged write has its
// entry and no entry describes a write that did not commit. Entries are read-only: nobody
// creates or changes one through the API, and they are removed when the server's retention
// (--audit-retention) has passed or their namespace is deleted. An entry is named after the
// resourceVersion of its write, zero-padded, so that name order is commit order.
type AuditEntry struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Verb is the request's verb: create, update, patch, delete or deletecollection. A delete
	// of an object with finalizers is recorded when it is marked for deletion, and again when
	// it is removed.
	Verb string `json:"verb" protobuf:"bytes,2,opt,name=verb"`
	// Object is the object written.
	Object AuditObject `json:"object" protobuf:"bytes,3,opt,name=object"`
	// User is who made the request, as gitops-apiserver authenticated them. Through the
	// aggregator that is the user kube-apiserver forwards: the impersonated user when a
	// request impersonates (kube-apiserver's own audit log records the impersonator).
	User AuditUser `json:"user" protobuf:"bytes,4,opt,name=user"`
	// Time is when the write was committed.
	Time metav1.MicroTime `json:"time" protobuf:"bytes,5,opt,name=time"`
}

// AuditObject identifies the object of a write and its version after it.
type AuditObject struct {
	// APIGroup is the object's API group.
	APIGroup string `json:"apiGroup" protobuf:"bytes,1,opt,name=apiGroup"`
	// Resource is the object's plural resource name.
	Resource string `json:"resource" protobuf:"bytes,2,opt,name=resource"`
	// Subresource is the subresource written, such as status; empty for the object itself.
	// +optional
	Subresource string `json:"subresource,omitempty" protobuf:"bytes,3,opt,name=subresource"`
	// Name is the object's name.
	Name string `json:"name" protobuf:"bytes,4,opt,name=name"`
	// UID is the object's UID.
	// +optional
	UID types.UID `json:"uid,omitempty" protobuf:"bytes,5,opt,name=uid,casttype=k8s.io/apimachinery/pkg/types.UID"`
	// ResourceVersion is the object's resourceVersion after the write (for a removal: the
	// resourceVersion of the removal, as a watch reports it).
	ResourceVersion string `json:"resourceVersion" protobuf:"bytes,6,opt,name=resourceVersion"`
}

// AuditUser is an authenticated user. Credentials and the authenticator's extra attributes
// (which may identify a credential) are never recorded.
type AuditUser struct {
	// Username is the user's name.
	Username string `json:"username" protobuf:"bytes,1,opt,name=username"`
	// UID is the user's UID, when the authenticator gives one.
	// +optional
	UID string `json:"uid,omitempty" protobuf:"bytes,2,opt,name=uid"`
	// Groups are the user's groups.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty" protobuf:"bytes,3,rep,name=groups"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditEntryList is a list of AuditEntries.
type AuditEntryList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []AuditEntry `json:"items" protobuf:"bytes,2,rep,name=items"`
}
