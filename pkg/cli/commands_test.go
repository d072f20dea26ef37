package cli

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func TestSync(t *testing.T) {
	f := newFixture(t, deployment("web-manual", manual, synced, healthy), deployment("web", auto, synced, healthy))
	code, out, errOut := f.run("sync", "web-manual", "--revision", "abc123")
	if code != 0 || out != "gitopsdeploymentsyncrun.managed-gitops.redhat.com/web-manual-fghij created\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	runs, _ := f.client.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(testNS).List(context.Background(), metav1.ListOptions{})
	if len(runs.Items) != 1 || runs.Items[0].Spec.GitopsDeploymentName != "web-manual" || runs.Items[0].Spec.RevisionID != "abc123" {
		t.Errorf("SyncRuns: %+v", runs.Items)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sync", "nope"}, `Error: gitopsdeployment "nope" not found in namespace "team-a"` + "\n"},
		{[]string{"sync", "web"}, `Error: gitopsdeployment "web" in namespace "team-a" is automated: Argo CD syncs it by itself on every change; a SyncRun is for manual deployments (spec.type: manual)` + "\n"},
		{[]string{"sync"}, "Error: sync takes the name of a manual GitOpsDeployment (got 0 arguments); see kubectl gitops sync --help\n"},
	} {
		if code, _, errOut := f.run(tc.args...); code != 1 || errOut != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}

	f.forbid("create", "gitopsdeploymentsyncruns", managedv1alpha1.GroupName, "carol")
	code, _, errOut = f.run("sync", "web-manual")
	want := `Error: you may not create gitopsdeploymentsyncruns.managed-gitops.redhat.com in namespace "team-a": User "carol" cannot create resource "gitopsdeploymentsyncruns" in API group "managed-gitops.redhat.com" in the namespace "team-a"` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("forbidden: exit %d, stderr %q", code, errOut)
	}
}

func TestSyncWaitFailure(t *testing.T) {
	f := newFixture(t, deployment("web-manual", manual, synced, healthy))
	// The agent ends every SyncRun as created with a failed sync.
	f.client.PrependReactor("get", "gitopsdeploymentsyncruns", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := f.client.Tracker().Get(a.GetResource(), a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		run := obj.(*managedv1alpha1.GitOpsDeploymentSyncRun).DeepCopy()
		run.Status.Conditions = []managedv1alpha1.GitOpsDeploymentSyncRunCondition{{Type: managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred,
			Status: managedv1alpha1.GitOpsConditionStatusTrue, Message: "the sync operation ended with phase Failed: boom"}}
		return true, run, nil
	})
	code, out, errOut := f.run("sync", "web-manual", "--wait")
	if code != 1 || !strings.Contains(out, "gitopsdeploymentsyncrun/web-manual-fghij: failed: the sync operation ended with phase Failed: boom\n") ||
		errOut != "Error: gitopsdeploymentsyncrun/web-manual-fghij will not be synced: the sync operation ended with phase Failed: boom\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestWait(t *testing.T) {
	stuck := withCondition(deployment("stuck", auto, synced, degraded, res("Deployment", "web", synced, degraded, "exceeded its progress deadline")),
		managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, "1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: exceeded its progress deadline")
	failed := promotionRun("failed", appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultFailure,
		step(1, "staging", appstudiov1alpha1.PromotionRunEnvironmentStatusFailed, "Promotion Failed. Could not be completed in 10 Minutes."))
	f := newFixture(t, deployment("web", auto, synced, healthy), stuck, failed,
		promotionRun("done", appstudiov1alpha1.PromotionRunStateComplete, appstudiov1alpha1.PromotionRunCompleteResultSuccess))
	for _, tc := range []struct {
		args          []string
		code          int
		stdout, error string
	}{
		{[]string{"wait", "web", "--for=healthy"}, 0, "gitopsdeployment/web: sync Synced, health Healthy\ngitopsdeployment/web is healthy (after 0s)\n", ""},
		{[]string{"wait", "gitopsdeployment/stuck", "--for=synced"}, 0, "", ""},
		{[]string{"wait", "stuck", "--for=healthy", "--timeout=50ms"}, 1,
			"gitopsdeployment/stuck: sync Synced, health Degraded: 1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: exceeded its progress deadline\n",
			"Error: timed out after 50ms waiting for gitopsdeployment/stuck to be healthy; last seen: sync Synced, health Degraded: 1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: exceeded its progress deadline\n"},
		{[]string{"wait", "stuck", "--for=healthy", "--timeout=0"}, 1, "",
			"Error: gitopsdeployment/stuck is not healthy: sync Synced, health Degraded: 1 of 1 resources not Synced and Healthy: Deployment/web: Degraded: exceeded its progress deadline\n"},
		{[]string{"wait", "done", "--for=promoted"}, 0, "promotionrun/done: Complete Success\npromotionrun/done is promoted (after 0s)\n", ""},
		{[]string{"wait", "failed", "--for=promoted"}, 1, "",
			"Error: promotionrun/failed will not be promoted: Complete Failure; staging Failed: Promotion Failed. Could not be completed in 10 Minutes.\n"},
		{[]string{"wait", "nope", "--for=healthy"}, 1, "", `Error: gitopsdeployment "nope" not found in namespace "team-a"` + "\n"},
		{[]string{"wait", "web", "--for=ready"}, 1, "", `Error: --for="ready": wait for one of synced, healthy or promoted` + "\n"},
		{[]string{"wait", "promotionrun/done", "--for=healthy"}, 1, "", "Error: a promotionrun is never healthy: --for=healthy applies to gitopsdeployment, snapshotenvironmentbinding\n"},
		{[]string{"wait", "widget/x", "--for=healthy"}, 1, "", `Error: "widget/x": unknown kind "widget"; use gitopsdeployment/NAME, syncrun/NAME, binding/NAME, promotionrun/NAME or application/NAME` + "\n"},
	} {
		code, out, errOut := f.run(tc.args...)
		if code != tc.code || (tc.stdout != "" && out != tc.stdout) || errOut != tc.error {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", tc.args, code, out, errOut, tc.code, tc.stdout, tc.error)
		}
	}
}

func TestWaitPrintsEachChange(t *testing.T) {
	f := newFixture(t, deployment("web", auto, synced, progress))
	gets := 0
	f.client.PrependReactor("get", "gitopsdeployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		health := map[bool]managedv1alpha1.HealthStatusCode{true: progress, false: healthy}[gets < 4]
		return true, deployment("web", auto, synced, health), nil
	})
	code, out, _ := f.run("wait", "web", "--for=healthy")
	want := "gitopsdeployment/web: sync Synced, health Progressing\ngitopsdeployment/web: sync Synced, health Healthy\ngitopsdeployment/web is healthy (after 0s)\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout %q, want %q", code, out, want)
	}
}

func TestPromote(t *testing.T) {
	snap := &appstudiov1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "shop-42", Namespace: testNS}, Spec: appstudiov1alpha1.SnapshotSpec{Application: "shop"}}
	other := &appstudiov1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "blog-1", Namespace: testNS}, Spec: appstudiov1alpha1.SnapshotSpec{Application: "blog"}}
	f := newFixture(t, application("shop"), environment("prod", ""), snap, other)
	code, out, errOut := f.run("promote", "shop", "--snapshot", "shop-42", "--to", "prod")
	if code != 0 || out != "promotionrun.appstudio.redhat.com/shop-42-to-prod-fghij created\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	run, err := f.client.AppStudioV1alpha1().PromotionRuns(testNS).Get(context.Background(), "shop-42-to-prod-fghij", metav1.GetOptions{})
	if err != nil || run.Spec.Application != "shop" || run.Spec.Snapshot != "shop-42" || run.Spec.ManualPromotion.TargetEnvironment != "prod" {
		t.Errorf("run %+v, %v", run, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"promote", "shop", "--snapshot", "shop-42"}, "Error: promote needs --snapshot and --to: kubectl gitops promote shop --snapshot SNAPSHOT --to ENVIRONMENT\n"},
		{[]string{"promote", "blog", "--snapshot", "blog-1", "--to", "prod"}, `Error: application "blog" not found in namespace "team-a"` + "\n"},
		{[]string{"promote", "shop", "--snapshot", "shop-43", "--to", "prod"}, `Error: snapshot "shop-43" not found in namespace "team-a"` + "\n"},
		{[]string{"promote", "shop", "--snapshot", "blog-1", "--to", "prod"}, `Error: snapshot "blog-1" is of application "blog", not "shop"` + "\n"},
		{[]string{"promote", "shop", "--snapshot", "shop-42", "--to", "qa"}, `Error: environment "qa" not found in namespace "team-a"` + "\n"},
	} {
		if code, _, errOut := f.run(tc.args...); code != 1 || errOut != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestApproveAndReject(t *testing.T) {
	waiting := promotionRun("shop-42.dev-auto", appstudiov1alpha1.PromotionRunStateActive, "",
		step(1, "dev", appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess, ""),
		step(2, "staging", appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, "Soaking until 12:00"),
		step(2, "prod", appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, "Waiting for approvals: 0 of 2"))
	waiting.Spec.ManualPromotion = appstudiov1alpha1.ManualPromotionConfiguration{}
	twoSteps := promotionRun("two", appstudiov1alpha1.PromotionRunStateActive, "",
		step(1, "a", appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, "Deploying"),
		step(1, "b", appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress, "Deploying"))
	twoSteps.Spec.ManualPromotion = appstudiov1alpha1.ManualPromotionConfiguration{}
	f := newFixture(t, waiting, twoSteps, promotionRun("manual", "", ""))
	// The server records who decided.
	f.client.PrependReactor("create", "promotionapprovals", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*appstudiov1alpha1.PromotionApproval).Spec.Username = "alice"
		return false, nil, nil
	})
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
		env, decision  string
	}{
		{[]string{"approve", "shop-42.dev-auto"}, 0,
			`promotionapproval.appstudio.redhat.com/shop-42-dev-auto-prod-fghij: Approve of promotionrun "shop-42.dev-auto" into environment "prod", recorded as alice's` + "\n", "", "prod", "Approve"},
		{[]string{"reject", "manual", "-m", "not now"}, 0, "", "", "staging", "Reject"},
		{[]string{"approve", "two", "--env", "b", "--override", "-m", "hotfix"}, 0, "", "", "b", "Override"},
		{[]string{"reject", "manual"}, 1, "", "Error: a rejection says why: give -m COMMENT\n", "", ""},
		{[]string{"approve", "two"}, 1, "", `Error: promotionrun "two" is in progress in environments a, b: name one with --env` + "\n", "", ""},
		{[]string{"approve", "nope"}, 1, "", `Error: promotionrun "nope" not found in namespace "team-a"` + "\n", "", ""},
	} {
		before, _ := f.client.AppStudioV1alpha1().PromotionApprovals(testNS).List(context.Background(), metav1.ListOptions{})
		code, out, errOut := f.run(tc.args...)
		if code != tc.code || (tc.stdout != "" && out != tc.stdout) || errOut != tc.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
			continue
		}
		after, _ := f.client.AppStudioV1alpha1().PromotionApprovals(testNS).List(context.Background(), metav1.ListOptions{})
		if tc.code != 0 {
			if len(after.Items) != len(before.Items) {
				t.Errorf("%v: a PromotionApproval was created", tc.args)
			}
			continue
		}
		var made *appstudiov1alpha1.PromotionApproval
		for i := range after.Items {
			found := false
			for _, b := range before.Items {
				found = found || b.Name == after.Items[i].Name
			}
			if !found {
				made = &after.Items[i]
			}
		}
		if made == nil || made.Spec.Environment != tc.env || string(made.Spec.Decision) != tc.decision || made.Spec.PromotionRun != tc.args[1] {
			t.Errorf("%v: made %+v", tc.args, made)
		}
	}
	f.forbid("create", "promotionapprovals", appstudiov1alpha1.GroupName, "carol")
	if code, _, errOut := f.run("approve", "manual"); code != 1 || !strings.HasPrefix(errOut, `Error: you may not create promotionapprovals.appstudio.redhat.com in namespace "team-a": `) {
		t.Errorf("forbidden: exit %d, stderr %q", code, errOut)
	}
}

func TestStatusAndWhy(t *testing.T) {
	stuck := withCondition(deployment("stuck", auto, synced, degraded, res("ConfigMap", "cm", synced, "", ""), res("Deployment", "web", synced, degraded, "exceeded")),
		managedv1alpha1.GitOpsDeploymentConditionResourcesReady, managedv1alpha1.GitOpsConditionStatusFalse, "1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: exceeded")
	f := newFixture(t, deployment("web", auto, synced, healthy), stuck, application("shop"), environment("dev", ""))
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"status"}, 0, "Application/shop  deployed to 0 of 1 Environments\n└── Environment/dev  not deployed\n" +
			"GitOpsDeployment/stuck  Synced  Degraded  1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: exceeded\n├── ConfigMap/cm  Synced\n└── Deployment/web  Synced  Degraded  exceeded\n" +
			"GitOpsDeployment/web  Synced  Healthy\n", ""},
		{[]string{"status", "web"}, 0, "GitOpsDeployment/web  Synced  Healthy\n", ""},
		{[]string{"status", "shop", "-o", "json"}, 0, "", ""},
		{[]string{"status", "nope"}, 1, "", `Error: no application or gitopsdeployment "nope" in namespace "team-a"` + "\n"},
		{[]string{"status", "app/nope"}, 1, "", `Error: application "nope" not found in namespace "team-a"` + "\n"},
		{[]string{"status", "-n", "empty"}, 0, "", "No Applications or GitOpsDeployments found in namespace \"empty\".\n"},
		{[]string{"status", "-o", "table"}, 1, "", "Error: --output \"table\" is not supported: use wide, json or yaml\n"},
		{[]string{"why", "stuck"}, 0, "GitOpsDeployment/stuck  Synced  Degraded  1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: exceeded\n└── Deployment/web  Synced  Degraded  exceeded\n" +
			"GitOpsDeployment stuck is not well; where it fails: Deployment/web.\n", ""},
		{[]string{"why", "gitopsdeployment/web"}, 0, "GitOpsDeployment/web  Synced  Healthy\nGitOpsDeployment web is Synced and Healthy: nothing to explain.\n", ""},
		{[]string{"why", "nope"}, 1, "", `Error: no promotionrun, snapshotenvironmentbinding or gitopsdeployment "nope" in namespace "team-a"` + "\n"},
		{[]string{"why", "binding/nope"}, 1, "", `Error: snapshotenvironmentbinding "nope" not found in namespace "team-a"` + "\n"},
	} {
		code, out, errOut := f.run(tc.args...)
		if code != tc.code || (tc.stdout != "" && out != tc.stdout) || errOut != tc.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
		if strings.Contains(strings.Join(tc.args, " "), "json") && !strings.Contains(out, `"kind": "Application"`) {
			t.Errorf("json: %s", out)
		}
	}
	f.forbid("list", "gitopsdeployments", managedv1alpha1.GroupName, "mallory")
	if code, _, errOut := f.run("status"); code != 1 || !strings.HasPrefix(errOut, `Error: you may not list gitopsdeployments.managed-gitops.redhat.com in namespace "team-a": User "mallory" cannot list`) {
		t.Errorf("forbidden: exit %d, stderr %q", code, errOut)
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"/usr/local/bin/kubectl-gitops", "status", "-n", "x"}, "status -n x"},
		{[]string{"/home/me/bin/kubectl_complete-gitops", "why", ""}, "__complete why "},
		{nil, ""},
	} {
		if got := strings.Join(Args(tc.argv), " "); got != tc.want {
			t.Errorf("Args(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}
