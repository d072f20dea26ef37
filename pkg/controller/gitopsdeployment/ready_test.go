package gitopsdeployment

import (
	"encoding/json"
	"fmt"
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
			conds := resourcesReady(nil, tc.status, "jane", t0)
			c := findCondition(conds, managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
			if c == nil {
				t.Fatalf("no ResourcesReady condition in %+v", conds)
			}
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.Message != tc.wantMsg {
				t.Errorf("got %s/%s %q\nwant %s/%s %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			// The same report again changes nothing, timestamps included: no status churn.
			again := resourcesReady(conds, tc.status, "jane", t1)
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
	c := findCondition(resourcesReady(nil, status, "jane", t0), managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
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
	c := findCondition(resourcesReady(nil, status, "jane", t0), managedv1alpha1.GitOpsDeploymentConditionResourcesReady)
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
