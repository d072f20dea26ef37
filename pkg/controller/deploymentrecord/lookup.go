package deploymentrecord

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The audit trail's resources of the objects whose writes name a trigger's user.
const (
	resourceDeployments = "gitopsdeployments"
	resourceSyncRuns    = "gitopsdeploymentsyncruns"
	resourceBindings    = "snapshotenvironmentbindings"
)

// auditPageSize is how many AuditEntries a list asks for at a time.
const auditPageSize = 500

// auditQuery selects the writes of one object in the audit trail.
type auditQuery struct {
	namespace, resource, name string
	// uid, when set, is the object's: entries of an earlier object of the name do not count.
	uid types.UID
	// verbs are the verbs that count.
	verbs []string
	// upTo, when set, is the newest resourceVersion that counts: later writes are not part of
	// what the caller saw.
	upTo string
}

// lookupFacts answers l through the API: the audit trail and the controlling binding. A fact
// the server cannot give (no audit trail, no right to read it, the object gone) stays "";
// another error is returned, and the key is retried: a record's trigger is written once.
func (c *Controller) lookupFacts(ctx context.Context, d *managedv1alpha1.GitOpsDeployment, l *lookup) (*facts, error) {
	f := &facts{}
	var err error
	if l.syncRun != "" {
		f.syncRunCreator, err = c.lastWriter(ctx, auditQuery{namespace: d.Namespace, resource: resourceSyncRuns, name: l.syncRun,
			uid: l.syncRunUID, verbs: []string{"create"}})
		if err != nil {
			return nil, err
		}
	}
	if l.specWriter {
		f.specWriter, err = c.lastWriter(ctx, auditQuery{namespace: d.Namespace, resource: resourceDeployments, name: d.Name,
			uid: d.UID, verbs: []string{"create", "update", "patch"}, upTo: d.ResourceVersion})
		if err != nil {
			return nil, err
		}
	}
	if l.binding != "" {
		b, err := c.gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(d.Namespace).Get(ctx, l.binding, metav1.GetOptions{})
		switch {
		case err == nil:
			f.bindingSnapshot = b.Spec.Snapshot
			f.bindingWriter, err = c.lastWriter(ctx, auditQuery{namespace: d.Namespace, resource: resourceBindings, name: l.binding,
				uid: b.UID, verbs: []string{"create", "update", "patch"}, upTo: b.ResourceVersion})
			if err != nil {
				return nil, err
			}
		case unanswerable(err):
			klog.V(2).InfoS("cannot read the binding of a promotion", "binding", klog.KRef(d.Namespace, l.binding), "err", err)
		default:
			return nil, fmt.Errorf("reading SnapshotEnvironmentBinding %s/%s: %w", d.Namespace, l.binding, err)
		}
	}
	if l.holder {
		h, err := c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			f.holder = h.Spec.HeldBy
		case unanswerable(err):
			// Released since the sync started, or not ours to read: the rollback stays anonymous.
			klog.V(2).InfoS("cannot read the hold of a rollback", "hold", klog.KRef(d.Namespace, d.Name), "err", err)
		default:
			return nil, fmt.Errorf("reading GitOpsDeploymentHold %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return f, nil
}

// lastWriter is the user of the newest write that q selects in the audit trail, "" for none.
// The server filters by field selector; the entries are checked here again, so that a server
// (or a fake clientset) that does not filter gives the same answer.
func (c *Controller) lastWriter(ctx context.Context, q auditQuery) (string, error) {
	sel := fields.SelectorFromSet(fields.Set{"object.resource": q.resource, "object.name": q.name, "object.subresource": ""})
	if len(q.verbs) == 1 {
		sel = fields.AndSelectors(sel, fields.OneTermEqualSelector("verb", q.verbs[0]))
	}
	var newest *managedv1alpha1.AuditEntry
	opts := metav1.ListOptions{FieldSelector: sel.String(), Limit: auditPageSize}
	for {
		list, err := c.gitops.ManagedGitopsV1alpha1().AuditEntries(q.namespace).List(ctx, opts)
		if unanswerable(err) {
			klog.V(2).InfoS("cannot read the audit trail", "namespace", q.namespace, "resource", q.resource, "name", q.name, "err", err)
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("listing the audit trail of %s %s/%s: %w", q.resource, q.namespace, q.name, err)
		}
		for i := range list.Items {
			e := &list.Items[i]
			if q.matches(e) && (newest == nil || newerEntry(e, newest)) {
				newest = e
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if newest == nil {
		return "", nil
	}
	return newest.User.Username, nil
}

func (q auditQuery) matches(e *managedv1alpha1.AuditEntry) bool {
	o := e.Object
	if (e.Namespace != "" && e.Namespace != q.namespace) || o.Resource != q.resource || o.Name != q.name || o.Subresource != "" ||
		!slices.Contains(q.verbs, e.Verb) || (q.uid != "" && o.UID != "" && o.UID != q.uid) {
		return false
	}
	if q.upTo != "" {
		if rv, upTo, ok := resourceVersions(o.ResourceVersion, q.upTo); ok && rv > upTo {
			return false
		}
	}
	return true
}

// newerEntry tells whether a was committed after b: entries are named after the
// resourceVersion of their write, zero-padded, so name order is commit order.
func newerEntry(a, b *managedv1alpha1.AuditEntry) bool {
	if len(a.Name) != len(b.Name) {
		return len(a.Name) > len(b.Name)
	}
	return strings.Compare(a.Name, b.Name) > 0
}

// resourceVersions reads two resourceVersions as the server's counter; ok is false for what
// is not one.
func resourceVersions(a, b string) (uint64, uint64, bool) {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return x, y, err1 == nil && err2 == nil
}

// unanswerable tells an error after which asking again would not help: the server has no
// audit trail (or the object is gone), or the agent may not read it.
func unanswerable(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err))
}
