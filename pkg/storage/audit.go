package storage

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// AuditTrail makes the backend record writes in the audit_log table, each by the statement of
// the write it describes: an acknowledged write always has its entry, and an entry never
// outlives a write that rolled back. The trail is served as a read-only resource of its own
// (auditStorage), straight from audit_log, and kept for Retention.
type AuditTrail struct {
	// Resource is the resource that serves the trail.
	Resource schema.GroupResource
	// Audited says whether the writes of a resource are recorded. Only namespaced objects'
	// writes are: an entry lives in the namespace of its object.
	Audited func(schema.GroupResource) bool
	// Encode makes the stored entry of a write; it runs in the request, before the write.
	Encode func(AuditedWrite) ([]byte, error)
	// Decode makes the served object of a stored entry.
	Decode func(AuditRow) (runtime.Object, error)
	// Retention is how long an entry is kept; 0 keeps it until its namespace is deleted.
	Retention time.Duration
}

// AuditedWrite describes a write about to be made.
type AuditedWrite struct {
	Resource schema.GroupResource
	// Verb and Subresource are the request's; without request information (the server's own
	// writes), Verb is create, update or delete.
	Verb, Subresource string
	Namespace, Name   string
	UID               types.UID
	// User is the requesting user; nil when the request carries none.
	User user.Info
}

// AuditRow is a stored entry: the write's namespace and resourceVersion (for a removal, the
// removal's), when it committed, and what Encode made of it.
type AuditRow struct {
	Namespace   string
	RV          int64
	CommittedAt time.Time
	Entry       []byte
}

// SetAuditTrail records the writes t names from now on.
func (b *Backend) SetAuditTrail(t AuditTrail) {
	b.auditTrail.Store(&t)
}

// auditOf is the stored entry of a write of obj by the request in ctx, or nil when the write
// is not audited. verb is the storage operation's, used when ctx holds no request information.
func (s *Store) auditOf(ctx context.Context, verb string, obj runtime.Object) ([]byte, error) {
	t := s.b.auditTrail.Load()
	if t == nil || t.Audited == nil || !t.Audited(s.groupResource) {
		return nil, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		return nil, nil
	}
	w := AuditedWrite{Resource: s.groupResource, Verb: verb, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
	// A request may write objects of other resources than its own (a controller inside the
	// server); only the request's own resource takes its verb.
	if info, ok := request.RequestInfoFrom(ctx); ok && info.IsResourceRequest && info.Resource == s.groupResource.Resource &&
		info.APIGroup == s.groupResource.Group {
		w.Verb, w.Subresource = info.Verb, info.Subresource
	}
	if u, ok := request.UserFrom(ctx); ok {
		w.User = u
	}
	return t.Encode(w)
}

// namespaceOf is obj's namespace, "" when it has none.
func namespaceOf(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetNamespace()
	}
	return ""
}

// auditRetentionInterval is how often entries past the retention are deleted, and
// auditRetentionBatch how many one statement deletes.
const (
	auditRetentionInterval = time.Minute
	auditRetentionBatch    = 10000
)

// auditRetentionLoop deletes the entries older than the trail's retention.
func (b *Backend) auditRetentionLoop(ctx context.Context) {
	t := time.NewTicker(auditRetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.expireAudit(ctx); err != nil && ctx.Err() == nil {
				klog.V(2).Infof("postgresql storage audit retention: %v", err)
			}
		}
	}
}

func (b *Backend) expireAudit(ctx context.Context) error {
	trail := b.auditTrail.Load()
	if trail == nil || trail.Retention <= 0 {
		return nil
	}
	for {
		tag, err := b.pool.Exec(ctx, `DELETE FROM audit_log WHERE ctid = ANY(ARRAY(
			SELECT ctid FROM audit_log WHERE committed_at < now() - $1 * interval '1 millisecond' LIMIT $2))`,
			trail.Retention.Milliseconds(), auditRetentionBatch)
		if err != nil || tag.RowsAffected() < auditRetentionBatch {
			return err
		}
	}
}
