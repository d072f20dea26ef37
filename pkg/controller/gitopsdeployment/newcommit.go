package gitopsdeployment

import (
	"context"
	"fmt"
	"regexp"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// A hold with releaseOn NewCommit lasts until the deployment's own targetRevision (a branch)
// moves: the agent resolves it through Argo CD's repo-server, remembers the commit it found
// first in the hold's status.baseRevision (the commit that was current at the rollback, or at
// the hold's last change: holdBase), and deletes the hold once the branch resolves to another
// commit, so the fix the rollback waited for deploys without anyone releasing it by hand.

// EventHoldReleased: the agent deleted a NewCommit hold because a newer commit arrived.
const EventHoldReleased = "HoldReleased"

// DefaultNewCommitInterval is how often a NewCommit hold's branch is resolved when nothing
// else reconciles its deployment: a minute is Argo CD's order of polling (3 min) divided so
// that the release follows a push quickly, at one ls-remote per hold and minute.
const DefaultNewCommitInterval = time.Minute

// RevisionResolver resolves a deployment's spec.source.targetRevision to the commit it names
// now (pkg/controller/deploymentrecord: RepoServer).
type RevisionResolver interface {
	ResolveRevision(ctx context.Context, d *managedv1alpha1.GitOpsDeployment) (string, error)
}

// ReleaseOnNewCommit has the controller release NewCommit holds, resolving with r at least
// every interval (DefaultNewCommitInterval when not positive). Without it such holds stay until
// deleted, and their status says why. Call before Run.
func (c *Controller) ReleaseOnNewCommit(r RevisionResolver, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultNewCommitInterval
	}
	c.resolver, c.newCommitInterval = r, interval
}

type newCommitAction int

const (
	newCommitKeep newCommitAction = iota
	newCommitRecordBase
	newCommitRelease
)

// newCommitDecision is what to do with a NewCommit hold: Base is the status.baseRevision to
// keep, Note what the hold's status message adds.
type newCommitDecision struct {
	Action newCommitAction
	Base   string
	Note   string
}

var commitSHA = regexp.MustCompile(`^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)

// decideNewCommit decides for a NewCommit hold from its recorded base, the deployment's
// targetRevision, whether the agent can resolve at all, and what resolving gave.
func decideNewCommit(base, targetRevision string, canResolve bool, resolved string, resolveErr error) newCommitDecision {
	keep := newCommitDecision{Action: newCommitKeep, Base: base}
	branch := targetRevision
	if branch == "" {
		branch = "HEAD"
	}
	switch {
	case commitSHA.MatchString(targetRevision):
		keep.Note = "the deployment's targetRevision is the commit " + targetRevision + ": no newer commit can arrive there; delete the hold to release it"
	case !canResolve:
		keep.Note = "the agent has no --repo-server to resolve " + branch + ": it cannot see a newer commit; delete the hold to release it"
	case resolveErr != nil:
		keep.Note = fmt.Sprintf("cannot resolve %s (kept until it can): %v", branch, resolveErr)
	case resolved == "":
		keep.Note = "cannot resolve " + branch + " (kept until it can): the repo-server returned no commit"
	case base == "":
		return newCommitDecision{Action: newCommitRecordBase, Base: resolved, Note: releaseNote(branch, resolved)}
	case resolved == base:
		keep.Note = releaseNote(branch, base)
	default:
		return newCommitDecision{Action: newCommitRelease, Base: base, Note: resolved}
	}
	return keep
}

// holdBase is the status.baseRevision that still stands for hold's spec. The base is the commit
// that was current when the user asked for this hold: a hold whose spec changed since its
// status was written (moved to another revision by a second rollback, or switched to
// NewCommit) was asked for at another moment, so its base is taken again, else a hold moved
// after the branch advanced would be released at once for a commit the user had already seen.
// A hold not released on NewCommit carries no base, so that switching it to NewCommit later
// starts from the commit current then.
func holdBase(hold *managedv1alpha1.GitOpsDeploymentHold) string {
	if hold.Spec.ReleaseOn != managedv1alpha1.HoldReleaseNewCommit || hold.Status.ObservedGeneration != hold.Generation {
		return ""
	}
	return hold.Status.BaseRevision
}

func releaseNote(branch, base string) string {
	return "released when " + branch + " moves past " + base
}

// checkNewCommit decides for hold (nil, or not NewCommit: nothing to do) and releases it when
// a newer commit arrived, returning the hold still in effect (nil once released) and the
// decision for its status.
func (c *Controller) checkNewCommit(ctx context.Context, depl *managedv1alpha1.GitOpsDeployment,
	hold *managedv1alpha1.GitOpsDeploymentHold) (*managedv1alpha1.GitOpsDeploymentHold, *newCommitDecision, error) {
	if hold == nil || hold.Spec.ReleaseOn != managedv1alpha1.HoldReleaseNewCommit {
		return hold, nil, nil
	}
	var resolved string
	var err error
	if c.resolver != nil && !commitSHA.MatchString(depl.Spec.Source.TargetRevision) {
		resolved, err = c.resolver.ResolveRevision(ctx, depl)
	}
	d := decideNewCommit(holdBase(hold), depl.Spec.Source.TargetRevision, c.resolver != nil, resolved, err)
	if d.Action != newCommitRelease {
		return hold, &d, nil
	}
	// The preconditions spare a hold deleted and made again (another UID) or changed (another
	// resourceVersion) since this decision: the user's newer hold is not the one released.
	uid, rv := hold.UID, hold.ResourceVersion
	err = c.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(hold.Namespace).Delete(ctx, hold.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case err != nil:
		return hold, nil, fmt.Errorf("releasing GitOpsDeploymentHold %s/%s: %w", hold.Namespace, hold.Name, err)
	}
	c.recordEvents(depl, []event{normalEvent(EventHoldReleased, "released: a newer commit %s arrived after %s", resolved, d.Base)})
	return nil, nil, nil
}
