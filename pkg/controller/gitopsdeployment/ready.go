package gitopsdeployment

import (
	"cmp"
	"fmt"
	"sort"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// maxReasonLength bounds each resource's reason (Argo CD's health or sync message). How many
// resources the condition names is maxJoinedMessages.
const maxReasonLength = 240

// resourcesReady sets the ResourcesReady condition from the Application Argo CD has compared:
// True when the Application and each of its resources are Synced and Healthy, otherwise False
// naming what is not, in a stable order, each with Argo CD's reason ("Deployment/web: Degraded:
// Deployment "web" exceeded its progress deadline"). Its message changes only when what Argo CD
// reports changes, so a deployment that stays broken costs no status writes.
//
// Argo CD 2.x keeps each resource's health in the Application's status. Argo CD 3.x does not by
// default (controller.resource.health.persist), and keeps it in the resource tree instead,
// which withTreeHealth merges in first. Without it (healthUnknown says why) only the
// Application's health and message name the problem: the condition says so rather than call
// the resources healthy.
func resourcesReady(conds []managedv1alpha1.GitOpsDeploymentCondition, as argov1alpha1.ApplicationStatus, healthUnknown, destNamespace string,
	now metav1.Time,
) []managedv1alpha1.GitOpsDeploymentCondition {
	typ := managedv1alpha1.GitOpsDeploymentConditionResourcesReady
	notReady, healthKnown := notReadyResources(as, destNamespace)
	appSync, appHealth := as.Sync.Status, as.Health.Status
	appReady := appSync == argov1alpha1.SyncStatusCodeSynced && appHealth == "Healthy"
	if appReady && len(notReady) == 0 {
		return setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusTrue,
			managedv1alpha1.GitOpsDeploymentReasonResourcesReady, countOf(len(as.Resources))+" Synced and Healthy", now)
	}
	var parts []string
	if len(notReady) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %s not Synced and Healthy: %s", len(notReady), countOf(len(as.Resources)), framework.JoinMessages(notReady, maxJoinedMessages)))
	}
	// Without a resource to blame, or with an unhealthy Application whose resources carry no
	// health (Argo CD 3.x), the Application's own state is the reason.
	if len(notReady) == 0 || appHealth != "Healthy" && !healthKnown {
		app := "the Application is " + joinStates(string(appSync), string(appHealth))
		if as.Health.Message != "" {
			app += ": " + truncate(as.Health.Message)
		}
		parts = append(parts, app)
		if healthUnknown != "" {
			parts = append(parts, "each resource's health is unknown: "+healthUnknown)
		}
	}
	return setCondition(conds, typ, managedv1alpha1.GitOpsConditionStatusFalse,
		managedv1alpha1.GitOpsDeploymentReasonResourcesNotReady, strings.Join(parts, "; "), now)
}

// notReadyResources describes each resource that is not Synced or not Healthy, sorted by kind,
// namespace and name, and tells whether any resource carries a health at all.
func notReadyResources(as argov1alpha1.ApplicationStatus, destNamespace string) (out []string, healthKnown bool) {
	// A resource whose last sync failed carries Argo CD's reason in the sync result.
	failed := map[string]string{}
	if op := as.OperationState; op != nil && op.SyncResult != nil {
		for _, r := range op.SyncResult.Resources {
			if r.Status == synccommon.ResultCodeSyncFailed && r.Message != "" {
				failed[resourceKey(r.Group, r.Kind, r.Namespace, r.Name)] = r.Message
			}
		}
	}
	resources := append([]argov1alpha1.ResourceStatus(nil), as.Resources...)
	sort.SliceStable(resources, func(i, j int) bool {
		a, b := resources[i], resources[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for _, r := range resources {
		healthKnown = healthKnown || r.Health != nil && r.Health.Status != ""
		var states []string
		reason := ""
		if r.Status != argov1alpha1.SyncStatusCodeSynced {
			states = append(states, string(r.Status))
			reason = failed[resourceKey(r.Group, r.Kind, r.Namespace, r.Name)]
		}
		if r.Health != nil && r.Health.Status != "" && r.Health.Status != "Healthy" {
			states = append(states, string(r.Health.Status))
			if r.Health.Message != "" {
				reason = r.Health.Message
			}
		}
		if len(states) == 0 {
			continue
		}
		entry := resourceName(r, destNamespace) + ": " + joinStates(states...)
		if reason != "" {
			entry += ": " + truncate(reason)
		}
		out = append(out, entry)
	}
	return out, healthKnown
}

func resourceKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// resourceName is Kind/name for a resource of the deployment's namespace (or cluster-scoped),
// Kind/namespace/name for one elsewhere.
func resourceName(r argov1alpha1.ResourceStatus, destNamespace string) string {
	if r.Namespace == "" || r.Namespace == destNamespace {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// joinStates joins the non-empty states: "OutOfSync, Missing"; an empty one reads Unknown.
func joinStates(states ...string) string {
	var out []string
	for _, s := range states {
		if s == "" {
			s = "Unknown"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// truncate makes s one line of at most maxReasonLength bytes of valid UTF-8 (Argo CD quotes
// what it was given, which need not be).
func truncate(s string) string {
	return framework.TruncateMessage(strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " "), maxReasonLength)
}

func countOf(n int) string {
	if n == 1 {
		return "1 resource"
	}
	return fmt.Sprintf("%d resources", n)
}

// treeRead is what the agent read of an Application's resource tree in Argo CD's Redis, for an
// Application whose resources' health Argo CD keeps there (status.resourceHealthSource appTree,
// Argo CD 3.x's default): the tree, or, for the tenant, why there is none.
type treeRead struct {
	tree    *argov1alpha1.ApplicationTree
	unknown string
}

// Why a tree is missing, as the condition tells the tenant (the details, such as Redis's
// address, go to the agent's log only).
const (
	treeNotConfigured = "Argo CD keeps it in its Redis, which this agent is not configured to read"
	treeUnreachable   = "Argo CD's Redis, which keeps it, could not be read"
	treeNotWritten    = "Argo CD has not recorded the resource tree yet"
)

// withTreeHealth is the Application's status with each resource's health taken from the
// resource tree, when Argo CD keeps it there rather than in the status, and otherwise the
// status as it is. A resource the tree lists without a live object (no UID) is Missing, as
// Argo CD would have written it into the status; one the tree does not list keeps no health.
// The second result says why the resources' health is unknown: empty when it is known.
func withTreeHealth(as argov1alpha1.ApplicationStatus, tr treeRead) (argov1alpha1.ApplicationStatus, string) {
	if as.ResourceHealthSource != argov1alpha1.ResourceHealthLocationAppTree || len(as.Resources) == 0 {
		return as, ""
	}
	if tr.tree == nil {
		return as, cmp.Or(tr.unknown, treeNotWritten)
	}
	nodes := make(map[string]argov1alpha1.ResourceNode, len(tr.tree.Nodes))
	for _, n := range tr.tree.Nodes {
		nodes[resourceKey(n.Group, n.Kind, n.Namespace, n.Name)] = n
	}
	resources := make([]argov1alpha1.ResourceStatus, len(as.Resources))
	for i, r := range as.Resources {
		n, ok := nodes[resourceKey(r.Group, r.Kind, r.Namespace, r.Name)]
		switch {
		case !ok:
		case n.Health != nil && n.Health.Status != "":
			r.Health = &argov1alpha1.HealthStatus{Status: n.Health.Status, Message: n.Health.Message}
		case n.UID == "":
			r.Health = &argov1alpha1.HealthStatus{Status: health.HealthStatusMissing}
		}
		resources[i] = r
	}
	as.Resources = resources
	return as, ""
}
