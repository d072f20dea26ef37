package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// AuditTrail makes the backend record writes as objects of an audit resource, each in the
// transaction of the write it describes: an acknowledged write always has its entry, and an
// entry never outlives a write that rolled back. An entry is an ordinary object of its
// resource (list, watch, selectors and the watch cache work as for any other), written with a
// TTL of Retention.
type AuditTrail struct {
	// Resource is where entries are stored; its store (NewStore) gives their keys, encoding and
	// transformer. Writes to it are never audited.
	Resource schema.GroupResource
	// Audited says whether the writes of a resource are recorded. Only namespaced objects'
	// writes are: an entry lives in the namespace of its object.
	Audited func(schema.GroupResource) bool
	// Entry builds the entry of one write, named and namespaced. It runs in the committer,
	// once the write's RV is known, so it must be quick and must not call the storage.
	Entry func(AuditedWrite) (runtime.Object, error)
	// Retention is how long an entry is kept; 0 keeps it until its namespace is deleted.
	Retention time.Duration
}

// AuditedWrite describes one committed write.
type AuditedWrite struct {
	Resource schema.GroupResource
	// Verb and Subresource are the request's; without request information (the server's own
	// writes), Verb is create, update or delete.
	Verb, Subresource string
	Namespace, Name   string
	UID               types.UID
	// RV is the object's resourceVersion after the write; for a removal, the removal's RV.
	RV int64
	// User is the requesting user; nil when the request carries none.
	User user.Info
	// Time is when the write's transaction took its RVs.
	Time time.Time
}

// SetAuditTrail records the writes t names from now on. Call it before the stores are built,
// so that the audit resource's store registers itself.
func (b *Backend) SetAuditTrail(t AuditTrail) {
	b.auditTrail.Store(&t)
}

// registerAuditStore makes s the store of audit entries if its resource is the trail's.
func (b *Backend) registerAuditStore(s *Store) {
	if t := b.auditTrail.Load(); t != nil && s.groupResource == t.Resource {
		b.auditStore.Store(s)
	}
}

var errAuditNotReady = errors.New("the audit trail's storage is not set up: the write was not made")

// auditOf describes a write of obj by the request in ctx, or returns nil when the write is not
// audited. verb is the storage operation's, used when ctx holds no request information.
func (s *Store) auditOf(ctx context.Context, verb string, obj runtime.Object) *AuditedWrite {
	t := s.b.auditTrail.Load()
	if t == nil || s.groupResource == t.Resource || t.Audited == nil || !t.Audited(s.groupResource) {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		return nil
	}
	w := &AuditedWrite{Resource: s.groupResource, Verb: verb, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
	// A request may write objects of other resources than its own (a controller inside the
	// server); only the request's own resource takes its verb.
	if info, ok := request.RequestInfoFrom(ctx); ok && info.IsResourceRequest && info.Resource == s.groupResource.Resource &&
		info.APIGroup == s.groupResource.Group {
		w.Verb, w.Subresource = info.Verb, info.Subresource
	}
	if u, ok := request.UserFrom(ctx); ok {
		w.User = u
	}
	return w
}

// auditRecord encodes the entry of w, whose write committed at rv, for the audit store.
func (b *Backend) auditRecord(ctx context.Context, w AuditedWrite, rv int64, now time.Time) (record, error) {
	t, as := b.auditTrail.Load(), b.auditStore.Load()
	if t == nil || as == nil {
		return record{}, errAuditNotReady
	}
	w.RV, w.Time = rv, now
	entry, err := t.Entry(w)
	if err != nil {
		return record{}, fmt.Errorf("building the audit entry of %s %s/%s: %w", w.Verb, w.Namespace, w.Name, err)
	}
	m, err := meta.Accessor(entry)
	if err != nil {
		return record{}, err
	}
	key, err := as.prepareKey(as.resourcePrefix + "/" + m.GetNamespace() + "/" + m.GetName())
	if err != nil {
		return record{}, err
	}
	if err := as.versioner.PrepareObjectForStorage(entry); err != nil {
		return record{}, err
	}
	data, err := runtime.Encode(as.codec, entry)
	if err != nil {
		return record{}, err
	}
	return as.newRecord(ctx, key, entry, data, uint64(t.Retention/time.Second))
}
