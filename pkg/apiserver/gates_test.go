package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	appstudioapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	typedappstudio "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// approvers stands in for the host cluster's RBAC: system:masters may do anything; every other
// user may do anything but the verbs approve and override on environments, which it holds only
// on the Environments listed ("*": every one).
type approvers map[string]map[string][]string // user → Environment → verbs

func (a approvers) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return authorizer.DecisionAllow, "", nil
	}
	if attrs.GetResource() != "environments" || (attrs.GetVerb() != "approve" && attrs.GetVerb() != "override") {
		return authorizer.DecisionAllow, "", nil
	}
	for _, env := range []string{attrs.GetName(), "*"} {
		if slices.Contains(a[u.GetName()][env], attrs.GetVerb()) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// PromotionApprovals through the real server and database: who decided is the requesting
// user, whatever the client sent, on a create, a dry run and a server-side apply; a decision is
// admitted only from a user the authorizer allows its verb on the Environment (403 naming the
// verb), on a run and an Environment that exist (422 at the field), once per user (409 naming
// the first); an approval never changes, but its labels do.
func TestPromotionApprovals(t *testing.T) {
	authz := approvers{
		"alice": {"prod": {"approve"}},
		"bob":   {"*": {"approve", "override"}},
	}
	admin := startServerWith(t, pgtest.NewDatabase(t), func(c *Config) {
		c.GenericConfig.Authorization.Authorizer = authz
	})
	ctx := context.Background()
	as := func(name string, groups ...string) typedappstudio.PromotionApprovalInterface {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name, UID: name + "-uid", Groups: groups}
		return versioned.NewForConfigOrDie(cfg).AppStudioV1alpha1().PromotionApprovals("team")
	}
	alice, bob, carol := as("alice", "team-a"), as("bob"), as("carol")

	client := versioned.NewForConfigOrDie(admin).AppStudioV1alpha1()
	for _, env := range []string{"staging", "prod"} {
		if _, err := client.Environments("team").Create(ctx, &appstudiov1alpha1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: env},
			Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: env, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.PromotionRuns("team").Create(ctx, &appstudiov1alpha1.PromotionRun{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-42"},
		Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "shop-42", Application: "shop",
			ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "prod"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approval := func(name, run, env string, decision appstudiov1alpha1.ApprovalDecision) *appstudiov1alpha1.PromotionApproval {
		return &appstudiov1alpha1.PromotionApproval{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: run, Environment: env, Decision: decision, Comment: "why",
				// A forged user, which the server replaces.
				Username: "mallory", UID: "m", Groups: []string{"system:masters"}},
		}
	}
	wantStatus := func(what string, err error, code int32, says ...string) {
		t.Helper()
		if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != code {
			t.Errorf("%s: want %d, got %v", what, code, err)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v does not say %q", what, err, s)
			}
		}
	}

	created, err := alice.Create(ctx, approval("a1", "shop-42", "prod", appstudiov1alpha1.ApprovalApprove), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := created.Spec; s.Username != "alice" || s.UID != "alice-uid" || !slices.Contains(s.Groups, "team-a") || slices.Contains(s.Groups, "system:masters") {
		t.Errorf("alice's approval records %q %q %v, want alice as the server authenticated her", s.Username, s.UID, s.Groups)
	}

	_, err = alice.Create(ctx, approval("a2", "shop-42", "prod", appstudiov1alpha1.ApprovalReject), metav1.CreateOptions{})
	wantStatus("alice's second decision", err, 409, "user alice already decided on PromotionRun shop-42 for Environment prod: PromotionApproval a1")
	_, err = alice.Create(ctx, approval("a2", "shop-42", "prod", appstudiov1alpha1.ApprovalReject), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	wantStatus("alice's second decision, dry run", err, 409, "PromotionApproval a1")
	_, err = alice.Create(ctx, approval("a3", "shop-42", "prod", appstudiov1alpha1.ApprovalOverride), metav1.CreateOptions{})
	wantStatus("alice overriding", err, 403, `user "alice" may not override environments/prod in namespace team`,
		"(kubectl auth can-i override environments/prod)")
	_, err = alice.Create(ctx, approval("a4", "shop-42", "staging", appstudiov1alpha1.ApprovalApprove), metav1.CreateOptions{})
	wantStatus("alice approving staging", err, 403, "may not approve environments/staging")

	for what, create := range map[string]func() error{
		"create": func() error {
			_, err := carol.Create(ctx, approval("c1", "shop-42", "prod", appstudiov1alpha1.ApprovalApprove), metav1.CreateOptions{})
			return err
		},
		"dry run": func() error {
			_, err := carol.Create(ctx, approval("c1", "shop-42", "prod", appstudiov1alpha1.ApprovalApprove),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		},
		"server-side apply": func() error {
			_, err := carol.Apply(ctx, appstudioapply.PromotionApproval("c1", "team").WithSpec(appstudioapply.PromotionApprovalSpec().
				WithPromotionRun("shop-42").WithEnvironment("prod").WithDecision(appstudiov1alpha1.ApprovalApprove)),
				metav1.ApplyOptions{FieldManager: "carol"})
			return err
		},
	} {
		wantStatus("carol's "+what, create(), 403, `user "carol" may not approve environments/prod in namespace team: `+
			"approving takes the verb approve on the Environment (kubectl auth can-i approve environments/prod)")
	}

	dry, err := bob.Create(ctx, approval("b1", "shop-42", "prod", appstudiov1alpha1.ApprovalApprove), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.Username != "bob" {
		t.Errorf("bob's dry run: %v, %+v", err, dry)
	}
	if _, err := bob.Get(ctx, "b1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run stored its approval: %v", err)
	}
	applied, err := bob.Apply(ctx, appstudioapply.PromotionApproval("b1", "team").WithSpec(appstudioapply.PromotionApprovalSpec().
		WithPromotionRun("shop-42").WithEnvironment("prod").WithDecision(appstudiov1alpha1.ApprovalOverride).
		WithComment("INC-42 hotfix").WithUsername("alice")), metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil || applied.Spec.Username != "bob" || applied.Spec.UID != "bob-uid" {
		t.Errorf("bob's server-side apply: %v, %+v", err, applied)
	}

	for _, c := range []struct{ run, env, field string }{
		{"shop-42", "qa", "spec.environment"},
		{"shop-43", "staging", "spec.promotionRun"},
	} {
		_, err := bob.Create(ctx, approval("b2", c.run, c.env, appstudiov1alpha1.ApprovalApprove), metav1.CreateOptions{})
		wantStatus("a decision on "+c.run+" for "+c.env, err, 422)
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
			if got := status.Status().Details.Causes; len(got) != 1 || got[0].Field != c.field || got[0].Type != metav1.CauseTypeFieldValueNotFound {
				t.Errorf("a decision on %s for %s: causes %+v, want NotFound at %s", c.run, c.env, got, c.field)
			}
		}
	}

	// A record: labels change, the decision does not, and a user sent along changes nothing.
	created.Labels = map[string]string{"reviewed": "yes"}
	created.Spec.Username = "mallory"
	updated, err := alice.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil || updated.Spec.Username != "alice" || updated.Labels["reviewed"] != "yes" || updated.Generation != 1 {
		t.Errorf("alice's label update: %v, %+v", err, updated)
	}
	updated.Spec.Comment = "changed my mind"
	_, err = alice.Update(ctx, updated, metav1.UpdateOptions{})
	wantStatus("a changed comment", err, 422, "a PromotionApproval is immutable")

	for selector, want := range map[string][]string{
		"spec.username=bob":                               {"b1"},
		"spec.decision=Approve":                           {"a1"},
		"spec.promotionRun=shop-42,spec.environment=prod": {"a1", "b1"},
	} {
		list, err := client.PromotionApprovals("team").List(ctx, metav1.ListOptions{FieldSelector: selector})
		var names []string
		if err == nil {
			for _, a := range list.Items {
				names = append(names, a.Name)
			}
		}
		if err != nil || !slices.Equal(names, want) {
			t.Errorf("approvals with %s: %v, %v, want %v", selector, err, names, want)
		}
	}
}

// Of one user's racing decisions on a run's promotion into an Environment, exactly one is
// stored: the storage's unique index decides what the check before the create cannot. Another
// user's decision races with none of them.
func TestOneDecisionPerUserUnderRaces(t *testing.T) {
	admin := startServerWith(t, pgtest.NewDatabase(t), func(c *Config) {
		c.GenericConfig.Authorization.Authorizer = approvers{"alice": {"*": {"approve"}}, "bob": {"*": {"approve"}}}
	})
	ctx := context.Background()
	client := versioned.NewForConfigOrDie(admin).AppStudioV1alpha1()
	if _, err := client.Environments("team").Create(ctx, &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: "prod", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PromotionRuns("team").Create(ctx, &appstudiov1alpha1.PromotionRun{ObjectMeta: metav1.ObjectMeta{Name: "shop-42"},
		Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "shop-42", Application: "shop",
			ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "prod"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := func(name string) typedappstudio.PromotionApprovalInterface {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
		return versioned.NewForConfigOrDie(cfg).AppStudioV1alpha1().PromotionApprovals("team")
	}
	alice := as("alice")
	const racers = 8
	errs := make(chan error, racers+1)
	for i := range racers {
		go func() {
			_, err := alice.Create(ctx, &appstudiov1alpha1.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("a%d", i)},
				Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: "shop-42", Environment: "prod", Decision: appstudiov1alpha1.ApprovalApprove}},
				metav1.CreateOptions{})
			errs <- err
		}()
	}
	go func() {
		_, err := as("bob").Create(ctx, &appstudiov1alpha1.PromotionApproval{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: "shop-42", Environment: "prod", Decision: appstudiov1alpha1.ApprovalApprove}},
			metav1.CreateOptions{})
		errs <- err
	}()
	won := 0
	for range racers + 1 {
		switch err := <-errs; {
		case err == nil:
			won++
		case !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "user alice already decided on PromotionRun shop-42 for Environment prod: PromotionApproval a"):
			t.Errorf("a losing decision: want a 409 naming alice's first, got %v", err)
		}
	}
	list, err := client.PromotionApprovals("team").List(ctx, metav1.ListOptions{FieldSelector: "spec.username=alice"})
	if err != nil || len(list.Items) != 1 || won != 2 {
		t.Errorf("%d of %d racing decisions stored (%v), alice's: %d, want bob's and one of alice's", won, racers+1, err, len(list.Items))
	}
}

// PromotionGates have a status that only /status writes; EnvironmentHolds have none.
func TestGatesAndHolds(t *testing.T) {
	admin := startServer(t, pgtest.NewDatabase(t))
	client := versioned.NewForConfigOrDie(admin).AppStudioV1alpha1()
	ctx := context.Background()
	gates := client.PromotionGates("team")
	gate := &appstudiov1alpha1.PromotionGate{
		ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: appstudiov1alpha1.PromotionGateSpec{
			Approvals: &appstudiov1alpha1.ApprovalGate{Required: 2},
			ChangeWindows: []appstudiov1alpha1.ChangeWindow{{Name: "office-hours", Type: appstudiov1alpha1.ChangeWindowAllow,
				Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}, TimeZone: "Europe/Paris"}},
			Verification: &appstudiov1alpha1.Verification{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "smoke", Image: "quay.io/org/smoke:1"}}}},
			}}},
		},
		Status: appstudiov1alpha1.PromotionGateStatus{Promotions: []appstudiov1alpha1.GatedPromotion{
			{PromotionRun: "forged", Phase: appstudiov1alpha1.GatePhasePassed}}},
	}
	created, err := gates.Create(ctx, gate, metav1.CreateOptions{})
	if err != nil || len(created.Status.Promotions) != 0 || created.Generation != 1 {
		t.Fatalf("created gate: %v, %+v", err, created)
	}
	created.Status.Promotions = []appstudiov1alpha1.GatedPromotion{{PromotionRun: "shop-42", Snapshot: "shop-42",
		Phase: appstudiov1alpha1.GatePhaseWaiting, Message: "Waiting for 2 approvals"}}
	if st, err := gates.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil || len(st.Status.Promotions) != 1 {
		t.Errorf("status update: %v, %+v", err, st)
	}
	bad := gate.DeepCopy()
	bad.Name = "staging"
	bad.Spec.ChangeWindows[0].Schedule = "CRON_TZ=UTC 0 9 * * *"
	bad.Spec.Verification.JobTemplate.Spec.Template.Spec.ServiceAccountName = "default"
	_, err = gates.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || len(err.(apierrors.APIStatus).Status().Details.Causes) != 2 {
		t.Errorf("a gate with a zone in its schedule and another account: want 422 with 2 causes, got %v", err)
	}

	holds := client.EnvironmentHolds("team")
	if _, err := holds.Create(ctx, &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
		Spec: appstudiov1alpha1.EnvironmentHoldSpec{Reason: "release freeze"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = holds.Create(ctx, &appstudiov1alpha1.EnvironmentHold{ObjectMeta: metav1.ObjectMeta{Name: "staging"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a hold without a reason: want 422, got %v", err)
	}
	err = client.RESTClient().Put().Namespace("team").Resource("environmentholds").Name("prod").SubResource("status").
		Body([]byte(`{"apiVersion":"appstudio.redhat.com/v1alpha1","kind":"EnvironmentHold","metadata":{"name":"prod"},"spec":{"reason":"x"}}`)).
		Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Errorf("environmentholds/status: want 404, got %v", err)
	}
}
