package placement

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func TestFleetMetrics(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	instance := func(name string, capacity int32, draining bool, ready bool, heartbeat time.Duration, apps int32) *managedv1alpha1.ArgoCDInstance {
		in := &managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   managedv1alpha1.ArgoCDInstanceSpec{Capacity: capacity, Draining: draining},
			Status: managedv1alpha1.ArgoCDInstanceStatus{Applications: apps}}
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		in.Status.Conditions = []metav1.Condition{{Type: managedv1alpha1.ArgoCDInstanceConditionReady, Status: status}}
		in.Status.LastHeartbeatTime = &metav1.Time{Time: now.Add(-heartbeat)}
		return in
	}
	placement := func(ns, spec, status string) *managedv1alpha1.TenantPlacement {
		return &managedv1alpha1.TenantPlacement{ObjectMeta: metav1.ObjectMeta{Name: ns},
			Spec: managedv1alpha1.TenantPlacementSpec{Instance: spec}, Status: managedv1alpha1.TenantPlacementStatus{Instance: status}}
	}
	instances := []*managedv1alpha1.ArgoCDInstance{
		instance("main", 2, false, true, 5*time.Second, 7),
		instance("lost", 5, false, true, time.Minute, 1), // Ready, but its agent has not reported for a minute
		instance("old", 1, true, false, time.Hour, 0),
	}
	placements := []*managedv1alpha1.TenantPlacement{
		placement("a", "main", "main"),
		placement("b", "main", "main"),
		placement("c", "main", "old"), // moving off the draining instance
		placement("d", "", ""),        // no room
		placement("e", "lost", "lost"),
	}
	running := true
	collect := func(want string) {
		t.Helper()
		m := &fleetMetrics{now: func() time.Time { return now },
			source: func() ([]*managedv1alpha1.ArgoCDInstance, []*managedv1alpha1.TenantPlacement, bool) {
				return instances, placements, running
			}}
		names := []string{"gitops_placement_instance_capacity", "gitops_placement_instance_tenants", "gitops_placement_instance_applications",
			"gitops_placement_instance_ready", "gitops_placement_instance_draining", "gitops_placement_tenants"}
		if err := testutil.CustomCollectAndCompare(m, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}
	}
	collect(`# HELP gitops_placement_instance_applications [ALPHA] Argo CD Applications each instance's agent last reported keeping (status.applications of its ArgoCDInstance).
# TYPE gitops_placement_instance_applications gauge
gitops_placement_instance_applications{argocd_instance="lost"} 1
gitops_placement_instance_applications{argocd_instance="main"} 7
gitops_placement_instance_applications{argocd_instance="old"} 0
# HELP gitops_placement_instance_capacity [ALPHA] The most tenant namespaces placed on each Argo CD instance (spec.capacity of its ArgoCDInstance).
# TYPE gitops_placement_instance_capacity gauge
gitops_placement_instance_capacity{argocd_instance="lost"} 5
gitops_placement_instance_capacity{argocd_instance="main"} 2
gitops_placement_instance_capacity{argocd_instance="old"} 1
# HELP gitops_placement_instance_draining [ALPHA] 1 for an Argo CD instance being drained (spec.draining), else 0.
# TYPE gitops_placement_instance_draining gauge
gitops_placement_instance_draining{argocd_instance="lost"} 0
gitops_placement_instance_draining{argocd_instance="main"} 0
gitops_placement_instance_draining{argocd_instance="old"} 1
# HELP gitops_placement_instance_ready [ALPHA] 1 while an Argo CD instance is Ready and its agent has reported within 30 s (it may take new tenants), else 0.
# TYPE gitops_placement_instance_ready gauge
gitops_placement_instance_ready{argocd_instance="lost"} 0
gitops_placement_instance_ready{argocd_instance="main"} 1
gitops_placement_instance_ready{argocd_instance="old"} 0
# HELP gitops_placement_instance_tenants [ALPHA] Tenant namespaces placed on each Argo CD instance (TenantPlacements whose spec.instance names it), which its capacity bounds.
# TYPE gitops_placement_instance_tenants gauge
gitops_placement_instance_tenants{argocd_instance="lost"} 1
gitops_placement_instance_tenants{argocd_instance="main"} 3
gitops_placement_instance_tenants{argocd_instance="old"} 0
# HELP gitops_placement_tenants [ALPHA] TenantPlacements by state: held (served by the instance it is placed on), moving (placed on an instance that does not hold it yet: a hand-over under way), waiting (placed nowhere: no instance has room).
# TYPE gitops_placement_tenants gauge
gitops_placement_tenants{state="held"} 3
gitops_placement_tenants{state="moving"} 1
gitops_placement_tenants{state="waiting"} 1
`)
	// A standby reports nothing.
	running = false
	collect("")
}
