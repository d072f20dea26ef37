package gitopsdeployment

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"github.com/argoproj/gitops-engine/pkg/health"
	synccommon "github.com/argoproj/gitops-engine/pkg/sync/common"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func resource(kind, namespace, name string, sync argov1alpha1.SyncStatusCode, h health.HealthStatusCode, msg string) argov1alpha1.ResourceStatus {
	r := argov1alpha1.ResourceStatus{Version: "v1", Kind: kind, Namespace: namespace, Name: name, Status: sync}
	if h != "" {
		r.Health = &argov1alpha1.HealthStatus{Status: h, Message: msg}
	}
	return r
}

func TestResourcesReady(t *testing.T) {
	const synced, outOfSync = argov1alpha1.SyncStatusCodeSynced, argov1alpha1.SyncStatusCodeOutOfSync
	many := argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: synced}, Health: argov1alpha1.HealthStatus{Status: "Degraded"}}
	for i := 0; i < 12; i++ {
		many.Resources = append(many.Resources, resource("Pod", "jane", fmt.Sprintf("p%02d", i), synced, "Degraded", "CrashLoopBackOff"))
	}
	for _, tc := range []struct {
		name       string
		status     argov1alpha1.ApplicationStatus
		wantStatus managedv1alpha1.GitOpsConditionStatus
		wantReason managedv1alpha1.GitOpsDeploymentReasonType
		wantMsg    string
	}{{
		name: "all synced and healthy; a resource without health (a ConfigMap) counts as healthy",
		status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: synced}, Health: argov1alpha1.HealthStatus{Status: "Healthy"},
			Resources: []argov1alpha1.ResourceStatus{
				resource("Deployment", "jane", "web", synced, "Healthy", ""), resource("ConfigMap", "jane", "cm", synced, "", ""),
			},
		},
		wantStatus: "True", wantReason: "ResourcesReady", wantMsg: "2 resources Synced and Healthy",
	}, {
		name: "a Deployment past its progress deadline, named with Argo CD's message",
		status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: synced}, Health: argov1alpha1.HealthStatus{Status: "Degraded"},
			Resources: []argov1alpha1.ResourceStatus{
				resource("Deployment", "jane", "web", synced, "Degraded", `Deployment "web" exceeded its progress deadline`),
				resource("ConfigMap", "jane", "cm", synced, "", ""),
			},
		},
		wantStatus: "False", wantReason: "ResourcesNotReady",
		wantMsg: `1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline`,
	}, {
		name: "sorted by kind, namespace and name; another namespace spelled out; a failed sync's reason",
		status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: outOfSync}, Health: argov1alpha1.HealthStatus{Status: "Missing"},
			Resources: []argov1alpha1.ResourceStatus{
				resource("Service", "jane", "web", outOfSync, "Missing", ""),
				resource("ConfigMap", "other", "cm", outOfSync, "", ""),
				resource("ConfigMap", "jane", "b", synced, "", ""),
			},
			OperationState: &argov1alpha1.OperationState{SyncResult: &argov1alpha1.SyncOperationResult{Resources: argov1alpha1.ResourceResults{
				{Version: "v1", Kind: "ConfigMap", Namespace: "other", Name: "cm", Status: synccommon.ResultCodeSyncFailed,
					Message: `configmaps "cm" is forbidden: User "system:serviceaccount:jane:gitops-deployer" cannot create resource`},
			}}},
		},
		wantStatus: "False", wantReason: "ResourcesNotReady",
		wantMsg: `2 of 3 resources not Synced and Healthy: ConfigMap/other/cm: OutOfSync: configmaps "cm" is forbidden: ` +
			`User "system:serviceaccount:jane:gitops-deployer" cannot create resource; Service/web: OutOfSync, Missing`,
	}, {
		name: "no resource health (Argo CD 3.x): the Application's health is the reason",
		status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: synced}, Health: argov1alpha1.HealthStatus{Status: "Progressing", Message: "waiting"},
			Resources: []argov1alpha1.ResourceStatus{resource("Deployment", "jane", "web", synced, "", "")},
		},
		wantStatus: "False", wantReason: "ResourcesNotReady", wantMsg: "the Application is Synced, Progressing: waiting",
	}, {
		name: "an out-of-sync resource and no resource health (Argo CD 3.x): both",
		status: argov1alpha1.ApplicationStatus{
			Sync: argov1alpha1.SyncStatus{Status: outOfSync}, Health: argov1alpha1.HealthStatus{Status: "Degraded"},
			Resources: []argov1alpha1.ResourceStatus{resource("Deployment", "jane", "web", outOfSync, "", "")},
		},
		wantStatus: "False", wantReason: "ResourcesNotReady",
		wantMsg: "1 of 1 resource not Synced and Healthy: Deployment/web: OutOfSync; the Application is OutOfSync, Degraded",
	}, {
		name:       "nothing deployed yet",
		status:     argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: outOfSync}, Health: argov1alpha1.HealthStatus{Status: "Missing"}},
		wantStatus: "False", wantReason: "ResourcesNotReady", wantMsg: "the Application is OutOfSync, Missing",
	}, {
		name:       "capped at ten, the rest counted",
		status:     many,
		wantStatus: "False", wantReason: "ResourcesNotReady",
		wantMsg: "12 of 12 resources not Synced and Healthy: " +
			podList(10) + "; and 2 more",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			conds := resourcesReady(nil, tc.status, "", "jane", t0)
			c := findCondition(conds, managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
			if c == nil {
				t.Fatalf("no ResourcesReady condition in %+v", conds)
			}
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != tc.wantMsg {
				t.Errorf("got %s/%s %q\nwant %s/%s %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			// The same report again changes nothing, timestamps included: no status churn.
			again := resourcesReady(conds, tc.status, "", "jane", t1)
			if got := findCondition(again, managedv1alpha1.GitOpsDeploymentConditionResourcesReady); *got.LastTransitionTime != t0 || got.LastProbeTime != t0 {
				t.Errorf("an unchanged report moved the timestamps: %+v", got)
			}
		})
	}
}

func podList(n int) string {
	var entries []string
	for i := 0; i < n; i++ {
		entries = append(entries, fmt.Sprintf("Pod/p%02d: Degraded: CrashLoopBackOff", i))
	}
	return strings.Join(entries, "; ")
}

func TestResourcesReadyTruncatesLongReasons(t *testing.T) {
	long := strings.Repeat("x", 1000)
	status := argov1alpha1.ApplicationStatus{
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced}, Health: argov1alpha1.HealthStatus{Status: "Degraded"},
		Resources: []argov1alpha1.ResourceStatus{resource("Deployment", "jane", "web", argov1alpha1.SyncStatusCodeSynced, "Degraded", long)},
	}
	c := findCondition(resourcesReady(nil, status, "", "jane", t0), managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
	if len(c.Message) > 400 || !strings.HasSuffix(c.Message, "…") {
		t.Errorf("a 1000-byte reason gave a message of %d bytes: %q", len(c.Message), c.Message)
	}
}

// A reason cut where a character straddles the limit stays valid UTF-8, so the status written
// reads back the same and the next reconcile writes nothing.
func TestResourcesReadyCutsBetweenCharacters(t *testing.T) {
	reason := strings.Repeat("a", maxReasonLength-1) + "é and more"
	status := argov1alpha1.ApplicationStatus{
		Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced}, Health: argov1alpha1.HealthStatus{Status: "Degraded"},
		Resources: []argov1alpha1.ResourceStatus{resource("Deployment", "jane", "web", argov1alpha1.SyncStatusCodeSynced, "Degraded", reason+"\xff")},
	}
	c := findCondition(resourcesReady(nil, status, "", "jane", t0), managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
	if !utf8.ValidString(c.Message) {
		t.Fatalf("message is not valid UTF-8: %q", c.Message)
	}
	raw, err := json.Marshal(c.Message)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(raw, &back); err != nil || back != c.Message {
		t.Errorf("the message does not survive JSON: %q became %q (%v)", c.Message, back, err)
	}
}

func node(group, kind, namespace, name, uid string, h health.HealthStatusCode, msg string) argov1alpha1.ResourceNode {
	n := argov1alpha1.ResourceNode{ResourceRef: argov1alpha1.ResourceRef{Group: group, Version: "v1", Kind: kind, Namespace: namespace, Name: name, UID: uid}}
	if h != "" {
		n.Health = &argov1alpha1.HealthStatus{Status: h, Message: msg}
	}
	return n
}

// Argo CD 3.x keeps each resource's health in the resource tree (resourceHealthSource appTree):
// merged into the status, it gives the condition Argo CD 2.x's inline health gives.
func TestResourcesReadyFromTheTree(t *testing.T) {
	const synced, outOfSync = argov1alpha1.SyncStatusCodeSynced, argov1alpha1.SyncStatusCodeOutOfSync
	appTree := argov1alpha1.ResourceHealthLocationAppTree
	degraded := argov1alpha1.ApplicationStatus{
		ResourceHealthSource: appTree,
		Sync:                 argov1alpha1.SyncStatus{Status: synced}, Health: argov1alpha1.HealthStatus{Status: "Degraded"},
		Resources: []argov1alpha1.ResourceStatus{
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web", Status: synced},
			resource("ConfigMap", "jane", "cm", synced, "", ""),
		},
	}
	webTree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
		node("", "ConfigMap", "jane", "cm", "u1", "", ""),
		node("apps", "Deployment", "jane", "web", "u2", "Degraded", `Deployment "web" exceeded its progress deadline`),
		// A child of the Deployment: not one of the Application's resources.
		node("apps", "ReplicaSet", "jane", "web-5d4f", "u3", "Degraded", "not this one"),
	}}
	for _, tc := range []struct {
		name       string
		status     argov1alpha1.ApplicationStatus
		tree       treeRead
		wantStatus managedv1alpha1.GitOpsConditionStatus
		wantMsg    string
		// wantHealth is each resource's health in the status, in order.
		wantHealth []string
	}{{
		name: "the tree names the Degraded Deployment with Argo CD's message", status: degraded, tree: treeRead{tree: webTree},
		wantStatus: "False",
		wantMsg:    `1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline`,
		wantHealth: []string{"Degraded", ""},
	}, {
		name: "all healthy in the tree",
		status: func() argov1alpha1.ApplicationStatus {
			s := degraded
			s.Health.Status = "Healthy"
			return s
		}(),
		tree: treeRead{tree: &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
			node("apps", "Deployment", "jane", "web", "u2", "Healthy", ""), node("", "ConfigMap", "jane", "cm", "u1", "", ""),
		}}},
		wantStatus: "True", wantMsg: "2 resources Synced and Healthy", wantHealth: []string{"Healthy", ""},
	}, {
		name: "a resource the tree lists without a live object is Missing, as Argo CD 2.x writes it",
		status: argov1alpha1.ApplicationStatus{
			ResourceHealthSource: appTree,
			Sync:                 argov1alpha1.SyncStatus{Status: outOfSync}, Health: argov1alpha1.HealthStatus{Status: "Missing"},
			Resources: []argov1alpha1.ResourceStatus{resource("Service", "jane", "web", outOfSync, "", "")},
		},
		tree:       treeRead{tree: &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{node("", "Service", "jane", "web", "", "", "")}}},
		wantStatus: "False", wantMsg: "1 of 1 resource not Synced and Healthy: Service/web: OutOfSync, Missing",
		wantHealth: []string{"Missing"},
	}, {
		name: "a resource the tree does not list keeps no health", status: degraded,
		tree:       treeRead{tree: &argov1alpha1.ApplicationTree{}},
		wantStatus: "False", wantMsg: "the Application is Synced, Degraded",
		wantHealth: []string{"", ""},
	}, {
		name: "Redis unreachable: the health is unknown, and the condition says so", status: degraded,
		tree:       treeRead{unknown: treeUnreachable},
		wantStatus: "False", wantMsg: "the Application is Synced, Degraded; each resource's health is unknown: " + treeUnreachable,
		wantHealth: []string{"", ""},
	}, {
		name: "not configured to read Redis", status: degraded, tree: treeRead{unknown: treeNotConfigured},
		wantStatus: "False", wantMsg: "the Application is Synced, Degraded; each resource's health is unknown: " + treeNotConfigured,
		wantHealth: []string{"", ""},
	}, {
		name: "no tree yet", status: degraded, tree: treeRead{},
		wantStatus: "False", wantMsg: "the Application is Synced, Degraded; each resource's health is unknown: " + treeNotWritten,
		wantHealth: []string{"", ""},
	}, {
		name: "health inline (Argo CD 2.x): the tree is not looked at",
		status: func() argov1alpha1.ApplicationStatus {
			s := degraded
			s.ResourceHealthSource = ""
			return s
		}(),
		tree:       treeRead{tree: webTree},
		wantStatus: "False", wantMsg: "the Application is Synced, Degraded",
		wantHealth: []string{"", ""},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.status.DeepCopy()
			as, unknown := withTreeHealth(tc.status, tc.tree)
			if !reflect.DeepEqual(before, &tc.status) {
				t.Errorf("the merge changed the Application's status it was given")
			}
			var gotHealth []string
			for _, r := range as.Resources {
				h := ""
				if r.Health != nil {
					h = string(r.Health.Status)
				}
				gotHealth = append(gotHealth, h)
			}
			if !reflect.DeepEqual(gotHealth, tc.wantHealth) {
				t.Errorf("resources' health %q, want %q", gotHealth, tc.wantHealth)
			}
			conds := resourcesReady(nil, as, unknown, "jane", t0)
			c := findCondition(conds, managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
			if c.Status != tc.wantStatus || c.Message != tc.wantMsg {
				t.Errorf("got %s %q\nwant %s %q", c.Status, c.Message, tc.wantStatus, tc.wantMsg)
			}
			// The tree read again, with the same health (Argo CD rewrites it at every refresh):
			// nothing changes, timestamps included, so the status is not written again.
			again, unknown2 := withTreeHealth(tc.status, tc.tree)
			conds2 := resourcesReady(conds, again, unknown2, "jane", t1)
			if !reflect.DeepEqual(conds, conds2) || !reflect.DeepEqual(as, again) {
				t.Errorf("a re-read of the same tree changed the condition or the resources: %+v", conds2)
			}
		})
	}
}

// The status the controller writes for an Application whose health is in the tree: the same
// tree read again (with other nodes' details changed, as Argo CD's refreshes do) writes nothing.
func TestComputeStatusFromTheTreeDoesNotChurn(t *testing.T) {
	app := syncedApp()
	app.Status.ResourceHealthSource = argov1alpha1.ResourceHealthLocationAppTree
	app.Status.Health.Status = "Degraded"
	app.Status.Resources[0].Health = nil
	tree := &argov1alpha1.ApplicationTree{Nodes: []argov1alpha1.ResourceNode{
		node("", "ConfigMap", "jane", "cm", "u1", "Degraded", "broken"),
		node("", "Pod", "jane", "p", "u2", "Healthy", ""),
	}}
	first, err := computeStatus(managedv1alpha1.GitOpsDeploymentStatus{}, app, treeRead{tree: tree}, nil, t1)
	if err != nil {
		t.Fatal(err)
	}
	if h := first.Resources[0].Health; h == nil || h.Status != "Degraded" || h.Message != "broken" {
		t.Errorf("the status's resource health is %+v, want Degraded from the tree", h)
	}
	changed := tree.DeepCopy()
	changed.Nodes[1].ResourceVersion = "42"
	changed.Nodes[1].Info = []argov1alpha1.InfoItem{{Name: "Status Reason", Value: "Running"}}
	second, err := computeStatus(first, app, treeRead{tree: changed}, nil, t2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("an unchanged health in a rewritten tree changed the status:\n%+v\n%+v", first, second)
	}
}
