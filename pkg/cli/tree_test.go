package cli

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

const (
	synced   = managedv1alpha1.SyncStatusCodeSynced
	outOf    = managedv1alpha1.SyncStatusCodeOutOfSync
	healthy  = managedv1alpha1.HealthStatusCodeHealthy
	degraded = managedv1alpha1.HealthStatusCodeDegraded
	progress = managedv1alpha1.HealthStatusCodeProgressing
	auto     = managedv1alpha1.GitOpsDeploymentSpecTypeAutomated
	manual   = managedv1alpha1.GitOpsDeploymentSpecTypeManual
)

func renderString(nodes []*Node, wide bool) string {
	var b bytes.Buffer
	render(&b, nodes, wide)
	return b.String()
}

func TestDeploymentNode(t *testing.T) {
	stuck := `Deployment "web" exceeded its progress deadline`
	notReady := "1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: " + stuck
	for _, tc := range []struct {
		name         string
		d            *managedv1alpha1.GitOpsDeployment
		onlyProblems bool
		want         string
	}{{
		name: "synced and healthy, every resource",
		d:    deployment("web", auto, synced, healthy, res("ConfigMap", "cm", synced, "", ""), res("Deployment", "web", synced, healthy, "")),
		want: "GitOpsDeployment/web  Synced  Healthy\n├── ConfigMap/cm  Synced\n└── Deployment/web  Synced  Healthy\n",
	}, {
		name: "a degraded resource: the deployment says ResourcesReady's message, the resource Argo CD's",
		d: withCondition(deployment("web", auto, synced, degraded, res("ConfigMap", "cm", synced, "", ""), res("Deployment", "web", synced, degraded, stuck)),
			managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, notReady),
		want: "GitOpsDeployment/web  Synced  Degraded  " + notReady + "\n├── ConfigMap/cm  Synced\n└── Deployment/web  Synced  Degraded  " + stuck + "\n",
	}, {
		name: "only the problems, for why",
		d: withCondition(deployment("web", auto, synced, degraded, res("ConfigMap", "cm", synced, "", ""), res("Deployment", "web", synced, degraded, stuck)),
			managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, notReady),
		onlyProblems: true,
		want:         "GitOpsDeployment/web  Synced  Degraded  " + notReady + "\n└── Deployment/web  Synced  Degraded  " + stuck + "\n",
	}, {
		name: "held by a rollback: Argo CD compares the hold's revision, not the spec's",
		d: withCondition(func() *managedv1alpha1.GitOpsDeployment {
			d := deployment("web", auto, synced, healthy)
			d.Status.ReconciledState.Source.Branch = "4f9c2a1"
			return d
		}(), managedv1alpha1.GitOpsDeploymentConditionHeld, managedv1alpha1.GitOpsConditionStatusTrue, `Held at revision 4f9c2a1 by "alice"`),
		want: `GitOpsDeployment/web  Synced  Healthy  Held at revision 4f9c2a1 by "alice"` + "\n",
	}, {
		name: "the agent's error comes before ResourcesReady",
		d: withCondition(withCondition(deployment("web", auto, outOf, "", nil...),
			managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, "the Application is OutOfSync, Missing"),
			managedv1alpha1.GitOpsDeploymentConditionErrorOccurred, managedv1alpha1.GitOpsConditionStatusTrue, "Unable to reconcile the ManagedEnvironment."),
		want: "GitOpsDeployment/web  OutOfSync  Unknown  ErrorOccurred: Unable to reconcile the ManagedEnvironment.\n",
	}, {
		name: "a resource the sync could not apply says the sync's message",
		d: func() *managedv1alpha1.GitOpsDeployment {
			d := deployment("web", manual, outOf, "", res("ClusterRole", "x", outOf, "", ""))
			d.Status.OperationState = &managedv1alpha1.OperationState{Phase: managedv1alpha1.OperationPhaseFailed, Message: "one or more objects failed to apply",
				SyncResult: &managedv1alpha1.SyncOperationResult{Resources: []managedv1alpha1.ResourceResult{{Kind: "ClusterRole", Namespace: testNS, Name: "x",
					Status: managedv1alpha1.ResultCodeSyncFailed, Message: "resource rbac.authorization.k8s.io:ClusterRole is not permitted in project gitops-tenant-team-a"}}}}
			return d
		}(),
		want: "GitOpsDeployment/web  OutOfSync  Unknown  sync Failed: one or more objects failed to apply\n" +
			"└── ClusterRole/x  OutOfSync  resource rbac.authorization.k8s.io:ClusterRole is not permitted in project gitops-tenant-team-a\n",
	}, {
		name: "Synced and Healthy, but of the spec before: not done",
		d: func() *managedv1alpha1.GitOpsDeployment {
			d := deployment("web", auto, synced, healthy)
			d.Spec.Source.Path = "deploy/new"
			return d
		}(),
		want: "GitOpsDeployment/web  Synced  Healthy  Argo CD has not compared the current spec yet\n",
	}, {
		name: "a resource in another namespace is named with it; a message on several lines is one",
		d: func() *managedv1alpha1.GitOpsDeployment {
			r := res("ConfigMap", "cm", synced, progress, "waiting\nfor it")
			r.Namespace = "other"
			return deployment("web", auto, synced, progress, r)
		}(),
		want: "GitOpsDeployment/web  Synced  Progressing\n└── ConfigMap/other/cm  Synced  Progressing  waiting for it\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderString([]*Node{deploymentNode(tc.d, tc.onlyProblems)}, false); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestDeploymentNodeWide(t *testing.T) {
	d := deployment("web", auto, synced, healthy)
	got := renderString([]*Node{deploymentNode(d, false)}, true)
	want := "GitOpsDeployment/web  Synced  Healthy  (type automated, https://git.example.com/team-a/web.git deploy/web@HEAD, revision 8768384c)\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestApplicationNode(t *testing.T) {
	ok := deployment("shop-dev-web", auto, synced, healthy, res("ConfigMap", "cm-web-dev", synced, "", ""))
	bad := withCondition(deployment("shop-staging-web", auto, synced, degraded, res("Deployment", "web", synced, degraded, "stuck")),
		managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, "1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: stuck")
	deployments := map[string]*managedv1alpha1.GitOpsDeployment{ok.Name: ok, bad.Name: bad}
	envs := []appstudiov1alpha1.Environment{*environment("prod", "staging"), *environment("staging", "dev"), *environment("dev", ""), *environment("a-lab", "")}
	bindings := []appstudiov1alpha1.SnapshotEnvironmentBinding{
		*binding("shop", "dev", "shop-42", metav1.ConditionTrue, "1 of 1 components deployed", ok.Name),
		*binding("shop", "staging", "shop-41", metav1.ConditionFalse, "0 of 1 components deployed; web: 1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: stuck", bad.Name),
		*binding("other", "dev", "other-1", metav1.ConditionTrue, "1 of 1 components deployed"),
		*binding("shop", "gone", "shop-40", "", ""),
	}
	n := applicationNode(application("shop"), envs, bindings, deployments)
	want := `Application/shop  deployed to 3 of 4 Environments
├── Environment/a-lab  not deployed
├── Environment/dev
│   └── SnapshotEnvironmentBinding/shop-dev-generated-binding  snapshot shop-42  1 of 1 components deployed
│       └── GitOpsDeployment/shop-dev-web  Synced  Healthy
│           └── ConfigMap/cm-web-dev  Synced
├── Environment/staging
│   └── SnapshotEnvironmentBinding/shop-staging-generated-binding  snapshot shop-41  0 of 1 components deployed  web: 1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: stuck
│       └── GitOpsDeployment/shop-staging-web  Synced  Degraded  1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: stuck
│           └── Deployment/web  Synced  Degraded  stuck
├── Environment/prod  not deployed
└── Environment/gone  no such Environment
    └── SnapshotEnvironmentBinding/shop-gone-generated-binding  snapshot shop-40  no GitOpsDeployment yet
`
	if got := renderString([]*Node{n}, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !n.Problem {
		t.Errorf("the Application is not flagged although staging fails")
	}
}

func TestBindingListsMissingAndOwnedDeployments(t *testing.T) {
	b := binding("shop", "dev", "shop-42", metav1.ConditionFalse, "0 of 2 components deployed", "listed-but-gone")
	owned := deployment("owned", auto, synced, healthy)
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "SnapshotEnvironmentBinding", Name: b.Name, UID: b.UID, Controller: ptrTrue()}}
	stranger := deployment("stranger", auto, synced, healthy)
	got := renderString([]*Node{bindingNode(b, map[string]*managedv1alpha1.GitOpsDeployment{"owned": owned, "stranger": stranger}, false)}, false)
	want := `SnapshotEnvironmentBinding/shop-dev-generated-binding  snapshot shop-42  0 of 2 components deployed
├── GitOpsDeployment/listed-but-gone  not found: the binding lists it, but it does not exist (yet)
└── GitOpsDeployment/owned  Synced  Healthy
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func ptrTrue() *bool { b := true; return &b }

func TestBindingNotReconciled(t *testing.T) {
	b := binding("shop", "dev", "shop-42", "", "")
	b.Status.BindingConditions = []metav1.Condition{{Type: appstudiov1alpha1.BindingConditionReconciled, Status: metav1.ConditionFalse,
		Reason: appstudiov1alpha1.BindingReasonWaitingForComponentStatus, Message: "SnapshotEventBinding Component status is required"}}
	n := bindingNode(b, nil, false)
	want := "SnapshotEnvironmentBinding/shop-dev-generated-binding  snapshot shop-42  not reconciled  WaitingForComponentStatus: SnapshotEventBinding Component status is required\n"
	if got := renderString([]*Node{n}, false); got != want || !n.Problem {
		t.Errorf("got %q (problem %v), want %q", got, n.Problem, want)
	}
}

func TestOrderEnvironments(t *testing.T) {
	for _, tc := range []struct {
		name string
		envs []*appstudiov1alpha1.Environment
		want string
	}{
		{"a chain, parents first", []*appstudiov1alpha1.Environment{environment("prod", "staging"), environment("dev", ""), environment("staging", "dev")}, "dev staging prod"},
		{"level by level, siblings by name", []*appstudiov1alpha1.Environment{environment("z", "dev"), environment("a", "dev"), environment("dev", ""), environment("deep", "a")}, "dev a z deep"},
		{"a missing parent makes a root", []*appstudiov1alpha1.Environment{environment("b", "nowhere"), environment("a", "")}, "a b"},
		{"a cycle comes last", []*appstudiov1alpha1.Environment{environment("x", "y"), environment("y", "x"), environment("dev", "")}, "dev x y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var envs []appstudiov1alpha1.Environment
			for _, e := range tc.envs {
				envs = append(envs, *e)
			}
			var names []string
			for _, e := range orderEnvironments(envs) {
				names = append(names, e.Name)
			}
			if got := strings.Join(names, " "); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatusTreeAcrossNamespaces(t *testing.T) {
	a := deployment("web", auto, synced, healthy)
	b := deployment("api", auto, synced, healthy)
	b.Namespace = "team-b"
	generated := deployment("shop-dev-web", auto, synced, healthy)
	generated.OwnerReferences = []metav1.OwnerReference{{Kind: "SnapshotEnvironmentBinding", Name: "x", UID: "u", Controller: ptrTrue()}}
	tree := statusTree("", nil, nil, nil, map[string]*managedv1alpha1.GitOpsDeployment{
		"team-a/web": a, "team-b/api": b, "team-a/shop-dev-web": generated})
	want := "Namespace/team-a\n└── GitOpsDeployment/web  Synced  Healthy\nNamespace/team-b\n└── GitOpsDeployment/api  Synced  Healthy\n"
	if got := renderString(tree.Items, false); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
