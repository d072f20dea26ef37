package gitopsdeployment

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// mirroredTypes are the Argo CD Application condition types copied into a GitOpsDeployment's
// status (reference §1.1). Any other type the agent sees is ignored rather than invented.
var mirroredTypes = map[argov1alpha1.ApplicationConditionType]bool{
	argov1alpha1.ApplicationConditionDeletionError:           true,
	argov1alpha1.ApplicationConditionInvalidSpecError:        true,
	argov1alpha1.ApplicationConditionComparisonError:         true,
	argov1alpha1.ApplicationConditionSyncError:               true,
	argov1alpha1.ApplicationConditionUnknownError:            true,
	argov1alpha1.ApplicationConditionSharedResourceWarning:   true,
	argov1alpha1.ApplicationConditionRepeatedResourceWarning: true,
	argov1alpha1.ApplicationConditionExcludedResourceWarning: true,
	argov1alpha1.ApplicationConditionOrphanedResourceWarning: true,
}

// computeStatus is the status a GitOpsDeployment should have, given its current status, its
// Application (nil while there is none) and the outcome of the agent's last attempt to
// reconcile it (nil on success). It is pure: now is the only clock, and a condition whose
// status, reason and message are unchanged keeps its timestamps, so an unchanged world gives an
// identical status and the caller writes nothing.
//
// tree is what the agent read of the Application's resource tree, which holds the resources'
// health when Argo CD keeps it there (withTreeHealth).
func computeStatus(cur managedv1alpha1.GitOpsDeploymentStatus, app *argov1alpha1.Application, tree treeRead, reconcileErr error,
	now metav1.Time,
) (managedv1alpha1.GitOpsDeploymentStatus, error) {
	st := *cur.DeepCopy()
	st.Conditions = errorOccurred(st.Conditions, reconcileErr, now)
	if app == nil {
		return st, nil
	}
	as, healthUnknown := withTreeHealth(app.Status, tree)
	// An Application Argo CD has not compared yet (made again: on the instance a tenant moved
	// to) says nothing of what is deployed: the deployment keeps what it last reported rather
	// than flash Unknown.
	if as.Sync.Status == "" && cur.Sync.Status != "" {
		return st, nil
	}
	st.Sync = managedv1alpha1.SyncStatus{Status: managedv1alpha1.SyncStatusCode(as.Sync.Status), Revision: as.Sync.Revision}
	if st.Sync.Status == "" {
		st.Sync.Status = managedv1alpha1.SyncStatusCodeUnknown
	}
	st.Health = managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCode(as.Health.Status), Message: as.Health.Message}
	st.Resources = resources(as.Resources)
	if cmp := as.Sync.ComparedTo; cmp.Source.RepoURL != "" {
		st.ReconciledState = managedv1alpha1.ReconciledState{
			Source: managedv1alpha1.GitOpsDeploymentSource{
				RepoURL: cmp.Source.RepoURL, Path: cmp.Source.Path, Branch: cmp.Source.TargetRevision,
			},
			// Name is that of a ManagedEnvironment, which updateStatus fills in (reference §4.3).
			Destination: managedv1alpha1.GitOpsDeploymentDestination{Namespace: cmp.Destination.Namespace},
		}
	}
	op, err := operationState(as.OperationState)
	if err != nil {
		return cur, err
	}
	// Argo CD keeps an Application's last operation; one made again (a move) that found
	// everything in sync has none, and the result of the last sync still stands.
	if op != nil || as.OperationState != nil {
		st.OperationState = op
	}
	st.Conditions = mirrorConditions(st.Conditions, as.Conditions, now)
	st.Conditions = resourcesReady(st.Conditions, as, healthUnknown, app.Spec.Destination.Namespace, now)
	return st, nil
}

func resources(in []argov1alpha1.ResourceStatus) []managedv1alpha1.ResourceStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]managedv1alpha1.ResourceStatus, 0, len(in))
	for _, r := range in {
		rs := managedv1alpha1.ResourceStatus{
			Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			Status: managedv1alpha1.SyncStatusCode(r.Status),
		}
		if r.Health != nil {
			rs.Health = &managedv1alpha1.HealthStatus{Status: managedv1alpha1.HealthStatusCode(r.Health.Status), Message: r.Health.Message}
		}
		out = append(out, rs)
	}
	return out
}

// operationState copies Argo CD's operationState. Our type is Argo CD's wire format minus the
// fields the GitOps API never exposed (reference §1.1), so a JSON round trip is the faithful
// copy, and keeps following Argo CD where the two agree.
func operationState(in *argov1alpha1.OperationState) (*managedv1alpha1.OperationState, error) {
	if in == nil {
		return nil, nil
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the Application's operationState: %w", err)
	}
	out := &managedv1alpha1.OperationState{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding the Application's operationState: %w", err)
	}
	return out, nil
}

// errorOccurred sets the ErrorOccurred condition from the agent's own outcome: a user error is
// shown as it is, anything else as the reference's unknown error (its details go to the log,
// never to the tenant). Success resolves an earlier error but does not add a condition to a
// deployment that never had one.
func errorOccurred(conds []managedv1alpha1.GitOpsDeploymentCondition, reconcileErr error, now metav1.Time) []managedv1alpha1.GitOpsDeploymentCondition {
	typ := managedv1alpha1.GitOpsDeploymentConditionErrorOccurred
	if reconcileErr == nil {
		if c := findCondition(conds, typ); c == nil || c.Status == managedv1alpha1.GitOpsConditionStatusFalse {
			return conds
		}
		return setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusFalse,
			managedv1alpha1.GitOpsDeploymentReasonErrorOccurredResolved, "", now)
	}
	msg := managedv1alpha1.GitOpsDeploymentUserErrorUnknown
	if isUserError(reconcileErr) {
		msg = reconcileErr.Error()
	}
	return setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusTrue,
		managedv1alpha1.GitOpsDeploymentReasonErrorOccurred, msg, now)
}

// mirrorConditions copies the Application's conditions (type and reason are Argo CD's type)
// and turns the mirrored ones Argo CD no longer reports into "<type>Resolved".
func mirrorConditions(conds []managedv1alpha1.GitOpsDeploymentCondition, argo []argov1alpha1.ApplicationCondition, now metav1.Time) []managedv1alpha1.GitOpsDeploymentCondition {
	present := map[managedv1alpha1.GitOpsDeploymentConditionType]bool{}
	// Argo CD reports one condition per resource for some types (one ExcludedResourceWarning
	// per excluded resource): the tenant sees them all, in Argo CD's order, in one condition.
	var types []argov1alpha1.ApplicationConditionType
	messages := map[argov1alpha1.ApplicationConditionType][]string{}
	for _, ac := range argo {
		if !mirroredTypes[ac.Type] {
			continue
		}
		if _, seen := messages[ac.Type]; !seen {
			types = append(types, ac.Type)
		}
		messages[ac.Type] = append(messages[ac.Type], ac.Message)
	}
	for _, t := range types {
		typ := managedv1alpha1.GitOpsDeploymentConditionType(t)
		present[typ] = true
		msg := framework.JoinMessages(messages[t], maxJoinedMessages)
		if t == argov1alpha1.ApplicationConditionExcludedResourceWarning && excludesSecrets(messages[t]) {
			msg += ". " + secretsExcludedHint
		}
		conds = setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusTrue,
			managedv1alpha1.GitOpsDeploymentReasonType(t), msg, now)
	}
	for _, c := range append([]managedv1alpha1.GitOpsDeploymentCondition(nil), conds...) {
		if !mirroredTypes[argov1alpha1.ApplicationConditionType(c.Type)] || present[c.Type] ||
			c.Status != managedv1alpha1.GitOpsConditionStatusTrue {
			continue
		}
		conds = setCondition(conds, c.Type, managedv1alpha1.GitOpsConditionStatusFalse,
			managedv1alpha1.GitOpsDeploymentReasonType(string(c.Type)+managedv1alpha1.GitOpsDeploymentReasonResolvedSuffix), "", now)
	}
	return conds
}

// maxJoinedMessages is how many of Argo CD's conditions of one type a GitOpsDeployment's
// condition quotes: a path of a thousand Secrets must not make a status of a megabyte.
const maxJoinedMessages = 10

// secretsExcludedHint tells a tenant what to do with a Secret Argo CD left out. The service's
// Argo CD instances exclude Secrets from the cluster they deploy tenants' namespaces into
// (argocd-cm's resource.exclusions, artifacts/argocd-instance): one cache of that cluster
// serves every tenant, and it would have to read every Secret of the cluster, the control
// plane's included. A ManagedEnvironment has a cache of its own, with the tenant's credentials.
const secretsExcludedHint = "Secrets are not deployed into this cluster through the shared Argo CD cache: deploy them " +
	"through a GitOpsDeploymentManagedEnvironment whose credentials may read Secrets in the namespace, or with a " +
	"Secret operator (docs/deploying-secrets.md)"

// excludesSecrets tells whether Argo CD's ExcludedResourceWarning messages ("Resource
// <group>/<kind> <name> is excluded in the settings") name a core Secret.
func excludesSecrets(messages []string) bool {
	for _, m := range messages {
		if strings.HasPrefix(m, "Resource /Secret ") {
			return true
		}
	}
	return false
}

// setCondition sets one condition. Unchanged status, reason and message keep the condition as
// it is, timestamps included: the original bumped lastProbeTime on every poll, which made every
// deployment with a condition cost a write every 15 seconds. Conditions stay sorted by type so
// that equal sets compare equal.
func setCondition(conds []managedv1alpha1.GitOpsDeploymentCondition, typ managedv1alpha1.GitOpsDeploymentConditionType,
	status managedv1alpha1.GitOpsConditionStatus, reason managedv1alpha1.GitOpsDeploymentReasonType, msg string, now metav1.Time,
) []managedv1alpha1.GitOpsDeploymentCondition {
	if c := findCondition(conds, typ); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return conds
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		c.LastProbeTime, c.LastTransitionTime = now, &now
		return conds
	}
	conds = append(conds, managedv1alpha1.GitOpsDeploymentCondition{
		Type: typ, Status: status, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: &now,
	})
	sort.SliceStable(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	return conds
}

func findCondition(conds []managedv1alpha1.GitOpsDeploymentCondition, typ managedv1alpha1.GitOpsDeploymentConditionType) *managedv1alpha1.GitOpsDeploymentCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
