package cli

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func promotionRun(name string, state appstudiov1alpha1.PromotionRunState, result appstudiov1alpha1.PromotionRunCompleteResult,
	steps ...appstudiov1alpha1.PromotionRunEnvironmentStatus) *appstudiov1alpha1.PromotionRun {
	return &appstudiov1alpha1.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: appstudiov1alpha1.PromotionRunSpec{Application: "shop", Snapshot: "shop-42",
			ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "staging"}},
		Status: appstudiov1alpha1.PromotionRunStatus{State: state, CompletionResult: result, EnvironmentStatus: steps},
	}
}

func step(n int32, env string, status appstudiov1alpha1.PromotionRunEnvironmentStatusField, display string) appstudiov1alpha1.PromotionRunEnvironmentStatus {
	return appstudiov1alpha1.PromotionRunEnvironmentStatus{Step: n, EnvironmentName: env, Status: status, DisplayStatus: display}
}

func TestWhy(t *testing.T) {
	stuck := `Deployment "web" exceeded its progress deadline`
	ready := "1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: " + stuck
	bad := withCondition(deployment("shop-staging-web", auto, synced, degraded,
		res("ConfigMap", "cm", synced, "", ""), res("Deployment", "web", synced, degraded, stuck)),
		managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, ready)
	good := deployment("shop-dev-web", auto, synced, healthy, res("ConfigMap", "cm", synced, "", ""))
	deployments := map[string]*managedv1alpha1.GitOpsDeployment{bad.Name: bad, good.Name: good}
	bindings := []appstudiov1alpha1.SnapshotEnvironmentBinding{
		*binding("shop", "dev", "shop-42", metav1.ConditionTrue, "1 of 1 components deployed", good.Name),
		*binding("shop", "staging", "shop-42", metav1.ConditionFalse, "0 of 1 components deployed; web: "+ready, bad.Name),
	}
	waiting := "Waiting for following GitOpsDeployments to be Synced/Healthy: shop-staging-web. shop-staging-web: " + ready
	for _, tc := range []struct {
		name        string
		node        *Node
		want, claim string
	}{{
		name: "a run waiting at staging, down to the Deployment",
		node: whyRun(promotionRun("shop-42-to-staging", appstudiov1alpha1.PromotionRunStateWaiting, "",
			step(1, "dev", appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, "All GitOpsDeployments are Synced/Healthy"),
			step(2, "staging", appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, waiting)), bindings, deployments),
		want: `PromotionRun/shop-42-to-staging  Waiting
└── Environment/staging  step 2 In Progress  ` + waiting + `
    └── SnapshotEnvironmentBinding/shop-staging-generated-binding  snapshot shop-42  0 of 1 components deployed  web: ` + ready + `
        └── GitOpsDeployment/shop-staging-web  Synced  Degraded  ` + ready + `
            └── Deployment/web  Synced  Degraded  ` + stuck + `
`,
		claim: "PromotionRun shop-42-to-staging is not well; where it fails: Deployment/web.",
	}, {
		name: "a failed run says its condition",
		node: func() *Node {
			r := promotionRun("shop-42-to-staging", appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure,
				step(1, "staging", appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, "Promotion Failed. Could not be completed in 10 Minutes."))
			r.Status.Conditions = []appstudiov1alpha1.PromotionRunCondition{{Type: appstudiov1alpha1.PromotionRunConditionErrorOccurred,
				Status: appstudiov1alpha1.PromotionRunConditionStatusTrue, Message: "Promotion Failed. Could not be completed in 10 Minutes."}}
			return whyRun(r, bindings[:1], deployments)
		}(),
		want: `PromotionRun/shop-42-to-staging  Complete Failure  Promotion Failed. Could not be completed in 10 Minutes.
└── Environment/staging  step 1 Failed  Promotion Failed. Could not be completed in 10 Minutes.
`,
		claim: "PromotionRun shop-42-to-staging is not well; where it fails: Environment/staging.",
	}, {
		name:  "a run that succeeded",
		node:  whyRun(promotionRun("ok", appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultSuccess, step(1, "dev", appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, "")), bindings, deployments),
		want:  "PromotionRun/ok  Complete Success\n",
		claim: "PromotionRun ok succeeded: nothing to explain.",
	}, {
		name:  "a run not taken up",
		node:  whyRun(promotionRun("new", "", ""), nil, nil),
		want:  "PromotionRun/new  Pending  not started yet: the service has not taken it up\n",
		claim: "PromotionRun new is not well; where it fails: PromotionRun/new.",
	}, {
		name: "a binding keeps only its failing deployments",
		node: whyBinding(binding("shop", "staging", "shop-42", metav1.ConditionFalse, "1 of 2 components deployed; web: "+ready, good.Name, bad.Name), deployments),
		want: `SnapshotEnvironmentBinding/shop-staging-generated-binding  snapshot shop-42  1 of 2 components deployed  web: ` + ready + `
└── GitOpsDeployment/shop-staging-web  Synced  Degraded  ` + ready + `
    └── Deployment/web  Synced  Degraded  ` + stuck + `
`,
		claim: "SnapshotEnvironmentBinding shop-staging-generated-binding is not well; where it fails: Deployment/web.",
	}, {
		name:  "a healthy deployment",
		node:  whyDeployment(good),
		want:  "GitOpsDeployment/shop-dev-web  Synced  Healthy\n",
		claim: "GitOpsDeployment shop-dev-web is Synced and Healthy: nothing to explain.",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renderString([]*Node{tc.node}, false); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if got := verdict(tc.node); got != tc.claim {
				t.Errorf("verdict %q, want %q", got, tc.claim)
			}
		})
	}
}
