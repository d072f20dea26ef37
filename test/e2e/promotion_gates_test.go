//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/autopromotion"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	appstudioclient "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/appstudio/v1alpha1"
)

// gitopsAs is a client of the GitOps Service acting as user through impersonation.
func gitopsAs(user string) versioned.Interface {
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return versioned.NewForConfigOrDie(cfg)
}

// Promotion gates and rollback (PromotionGate, PromotionApproval, EnvironmentHold) on automated
// promotion through dev → staging → prod, all AppStudioAutomated, with application-service
// played in the background (appservice_player_test.go), the real Argo CD, and the kubelet
// played for the verification Jobs (kubelet_player_test.go). staging soaks for 30 s and is
// verified by a Job; prod takes two approvals. eve edits the namespace; alice and bob edit it and
// may approve promotions into prod; dave administers it.
var _ = Describe("Promotion gates and rollback", Ordered, func() {
	const (
		app, component = "shop", "web"
		soak           = 30 * time.Second
	)
	var ns string
	studio := func() appstudioclient.AppStudioV1alpha1Interface { return gitops.AppStudioV1alpha1() }

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-gates-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		startAppServicePlayer(ctx, ns)
		_, err := studio().Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: app}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range [][2]string{{"dev", ""}, {"staging", "dev"}, {"prod", "staging"}} {
			createEnvironment(ctx, ns, e[0], appstudiov1alpha1.DeploymentStrategyAppStudioAutomated, e[1])
		}

		By("gating staging with a 30 s soak and a verification Job, prod with two approvals")
		_, err = studio().PromotionGates(ns).Create(ctx, &appstudiov1alpha1.PromotionGate{
			ObjectMeta: metav1.ObjectMeta{Name: "staging"},
			Spec: appstudiov1alpha1.PromotionGateSpec{
				SoakTime: &metav1.Duration{Duration: soak},
				Verification: &appstudiov1alpha1.Verification{
					Timeout: &metav1.Duration{Duration: 3 * time.Minute},
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
						// One Pod, not retried: a failed verification fails the Job at once
						// (with the default of 6 retries, the Job controller's back-off would
						// outlast the timeout). restartPolicy and serviceAccountName are left to
						// the service.
						BackoffLimit: ptr.To[int32](0),
						Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "verify", Image: "registry.invalid/verify:1", Command: []string{"true"},
						}}}},
					}},
				},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = studio().PromotionGates(ns).Create(ctx, &appstudiov1alpha1.PromotionGate{
			ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Spec:       appstudiov1alpha1.PromotionGateSpec{Approvals: &appstudiov1alpha1.ApprovalGate{Required: 2}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("eve editing the namespace; alice and bob editing it and approving promotions into prod")
		rbac := kube.RbacV1()
		_, err = rbac.Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "prod-approver"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{appstudiov1alpha1.GroupName}, Resources: []string{"environments"},
				ResourceNames: []string{"prod"}, Verbs: []string{"approve"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		bind := func(name, kind, role string, users ...string) {
			GinkgoHelper()
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}}
			for _, u := range users {
				rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
			}
			_, err := rbac.RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		bind("editors", "ClusterRole", "edit", "eve", "alice", "bob")
		bind("prod-approvers", "Role", "prod-approver", "alice", "bob")
		bind("admins", "ClusterRole", "admin", "dave")
		Eventually(func(g Gomega) {
			for _, u := range []string{"eve", "alice", "bob"} {
				out, _, _ := run("admin", "", "auth", "can-i", "create", "promotionapprovals."+appstudiov1alpha1.GroupName, "-n", ns, "--as", u)
				g.Expect(strings.TrimSpace(out)).To(Equal("yes"), "%s may create PromotionApprovals", u)
			}
			for _, u := range []string{"alice", "bob"} {
				out, _, _ := run("admin", "", "auth", "can-i", "approve", "environments/prod", "-n", ns, "--as", u)
				g.Expect(strings.TrimSpace(out)).To(Equal("yes"), "%s may approve environments/prod", u)
			}
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	newSnapshot := func(ctx context.Context, name, tag string) {
		GinkgoHelper()
		// Newest by creation time, to the second: one Snapshot a second.
		time.Sleep(1100 * time.Millisecond)
		_, err := studio().Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
				Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:" + tag}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	runName := func(snapshot string) string { return autopromotion.RunName(snapshot, "dev") }
	getRun := func(g Gomega, ctx context.Context, snapshot string) *appstudiov1alpha1.PromotionRun {
		r, err := studio().PromotionRuns(ns).Get(ctx, runName(snapshot), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "no automated PromotionRun for Snapshot %s", snapshot)
		return r
	}
	// steps are the run's steps as "<step> <environment> <status>".
	steps := func(r *appstudiov1alpha1.PromotionRun) []string {
		var out []string
		for _, e := range r.Status.EnvironmentStatus {
			out = append(out, fmt.Sprintf("%d %s %s", e.Step, e.EnvironmentName, e.Status))
		}
		return out
	}
	// describe is the run as a failure message shows it: its steps with what each waits for,
	// its state and conditions, and the status of the gates.
	describe := func(ctx context.Context, r *appstudiov1alpha1.PromotionRun) string {
		var b strings.Builder
		fmt.Fprintf(&b, "\nPromotionRun %s: state %q, result %q\n", r.Name, r.Status.State, r.Status.CompletionResult)
		for _, e := range r.Status.EnvironmentStatus {
			fmt.Fprintf(&b, "  step %d %s %s: %q\n", e.Step, e.EnvironmentName, e.Status, e.DisplayStatus)
		}
		for _, c := range r.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, env := range []string{"staging", "prod"} {
			gate, err := studio().PromotionGates(ns).Get(ctx, env, metav1.GetOptions{})
			if err != nil {
				fmt.Fprintf(&b, "PromotionGate %s: %v\n", env, err)
				continue
			}
			status, _ := json.MarshalIndent(gate.Status, "  ", "  ")
			fmt.Fprintf(&b, "PromotionGate %s: %s\n", env, status)
		}
		return b.String()
	}
	step := func(r *appstudiov1alpha1.PromotionRun, env string) appstudiov1alpha1.PromotionRunEnvironmentStatus {
		for _, e := range r.Status.EnvironmentStatus {
			if e.EnvironmentName == env {
				return e
			}
		}
		return appstudiov1alpha1.PromotionRunEnvironmentStatus{}
	}
	// gated is snapshot's run's entry in the status of the gate of env.
	gated := func(g Gomega, ctx context.Context, env, snapshot string) appstudiov1alpha1.GatedPromotion {
		gate, err := studio().PromotionGates(ns).Get(ctx, env, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range gate.Status.Promotions {
			if p.PromotionRun == runName(snapshot) {
				g.Expect(p.Snapshot).To(Equal(snapshot))
				return p
			}
		}
		g.Expect(gate.Status.Promotions).To(ContainElement(HaveField("PromotionRun", runName(snapshot))),
			"PromotionGate %s has no entry for the run", env)
		return appstudiov1alpha1.GatedPromotion{}
	}
	// waitForStep waits until snapshot's run has exactly the steps want and the step of env
	// displays every one of display.
	waitForStep := func(ctx context.Context, snapshot string, want []string, env string, display ...string) *appstudiov1alpha1.PromotionRun {
		GinkgoHelper()
		var r *appstudiov1alpha1.PromotionRun
		Eventually(func(g Gomega, ctx context.Context) {
			r = getRun(g, ctx, snapshot)
			g.Expect(steps(r)).To(Equal(want), describe(ctx, r))
			for _, d := range display {
				g.Expect(step(r, env).DisplayStatus).To(ContainSubstring(d), describe(ctx, r))
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		return r
	}
	waitForEnd := func(ctx context.Context, snapshot string, result appstudiov1alpha1.PromotionRunCompleteResult, want []string) *appstudiov1alpha1.PromotionRun {
		GinkgoHelper()
		var r *appstudiov1alpha1.PromotionRun
		Eventually(func(g Gomega, ctx context.Context) {
			r = getRun(g, ctx, snapshot)
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete), describe(ctx, r))
			g.Expect(r.Status.CompletionResult).To(Equal(result), describe(ctx, r))
			g.Expect(steps(r)).To(Equal(want), describe(ctx, r))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		return r
	}
	// verifying waits until staging's verification Job of snapshot's run is made, while its
	// deployment is Synced and Healthy, and returns the gate's entry.
	verifying := func(ctx context.Context, snapshot string) appstudiov1alpha1.GatedPromotion {
		GinkgoHelper()
		var p appstudiov1alpha1.GatedPromotion
		Eventually(func(g Gomega, ctx context.Context) {
			r := getRun(g, ctx, snapshot)
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging In Progress"}), describe(ctx, r))
			p = gated(g, ctx, "staging", snapshot)
			g.Expect(p.Phase).To(Equal(appstudiov1alpha1.GatePhaseVerifying), describe(ctx, r))
			g.Expect(p.HealthyTime).NotTo(BeNil(), describe(ctx, r))
			g.Expect(p.Verification).NotTo(BeNil(), describe(ctx, r))
			g.Expect(p.Verification.Job).NotTo(BeEmpty(), describe(ctx, r))
			g.Expect(p.Verification.Namespace).To(Equal(ns), "the Environments have no DeploymentTarget: the Job runs in the tenant's namespace")
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		return p
	}
	configMap := func(ctx context.Context, env string) string {
		GinkgoHelper()
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-"+component+"-"+env, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		return cm.Data["value"]
	}
	expectDeployed := func(ctx context.Context, tag string, envs ...string) {
		GinkgoHelper()
		for _, env := range envs {
			Expect(configMap(ctx, env)).To(Equal("registry.invalid/web:"+tag), "the ConfigMap of %s", env)
		}
	}
	binding := func(ctx context.Context, env string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
		GinkgoHelper()
		b, err := studio().SnapshotEnvironmentBindings(ns).Get(ctx, app+"-"+env+"-generated-binding", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		return b
	}
	approve := func(ctx context.Context, user, snapshot, env string, decision appstudiov1alpha1.ApprovalDecision, name string) (*appstudiov1alpha1.PromotionApproval, error) {
		return gitopsAs(user).AppStudioV1alpha1().PromotionApprovals(ns).Create(ctx, &appstudiov1alpha1.PromotionApproval{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: runName(snapshot), Environment: env, Decision: decision,
				Comment: user + " checked " + snapshot},
		}, metav1.CreateOptions{})
	}
	// approveProd has alice and bob approve snapshot's promotion into prod.
	approveProd := func(ctx context.Context, snapshot string) {
		GinkgoHelper()
		for _, user := range []string{"alice", "bob"} {
			a, err := approve(ctx, user, snapshot, "prod", appstudiov1alpha1.ApprovalApprove, snapshot+"-prod-"+user)
			Expect(err).NotTo(HaveOccurred(), user)
			Expect(a.Spec.Username).To(Equal(user), "the server records who approved")
		}
	}
	// soaked waits for staging's verification of snapshot, plays its Job's Pod Succeeded, and
	// waits until staging passes, not before its soak time since it was healthy.
	soaked := func(ctx context.Context, snapshot string) {
		GinkgoHelper()
		p := verifying(ctx, snapshot)
		playJobPods(ctx, ns, p.Verification.Job, true)
		Eventually(func(g Gomega, ctx context.Context) {
			r := getRun(g, ctx, snapshot)
			g.Expect(step(r, "staging").Status).To(Equal(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess), describe(ctx, r))
			g.Expect(step(r, "staging").CompletionTime).NotTo(BeNil(), describe(ctx, r))
			g.Expect(step(r, "staging").CompletionTime.Time.Before(p.HealthyTime.Add(soak))).To(BeFalse(),
				"staging passed before its soak time: %s", describe(ctx, r))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}

	It("holds a promotion for its verification Job, its soak time and two approvals", func(ctx context.Context) {
		newSnapshot(ctx, "shop-1", "1")

		By("staging verifies once the deployment is Synced and Healthy, with a Job run as the namespace's deployer")
		p := verifying(ctx, "shop-1")
		Expect(p.PreviousSnapshot).To(BeEmpty(), "staging ran no Snapshot before shop-1")
		job := p.Verification.Job
		waitForStep(ctx, "shop-1", []string{"1 dev Success", "2 staging In Progress"}, "staging",
			fmt.Sprintf("Verifying: Job %s in namespace %s", job, ns))
		j, err := kube.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(j.Spec.Template.Spec.ServiceAccountName).To(Equal("gitops-deployer"))
		Expect(j.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		Expect(j.Spec.Template.Spec.Containers).To(ConsistOf(And(HaveField("Image", "registry.invalid/verify:1"), HaveField("Command", []string{"true"}))))

		By("the Job succeeding at once does not end the 30 s soak")
		playJobPods(ctx, ns, job, true)
		soakEnd := p.HealthyTime.Add(soak)
		if time.Until(soakEnd) < 5*time.Second {
			// A loaded machine made or played the Job late: the soak is nearly over, and what
			// follows would prove nothing. The soak's table tests cover it.
			GinkgoWriter.Printf("the soak ends in %s: not watched after the Job succeeded\n", time.Until(soakEnd))
		} else {
			soakingUntil := regexp.MustCompile(`Soaking until (\S+)`)
			var sawSoaking string
			Consistently(func(g Gomega, ctx context.Context) {
				r := getRun(g, ctx, "shop-1")
				// Status written to the second: the soak ends no earlier than soakEnd.
				if time.Now().Before(soakEnd) {
					g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging In Progress"}), "before the soak's end: %s", describe(ctx, r))
				}
				// Once the Job succeeded, the step says it soaks, and no longer that it verifies.
				if d := step(r, "staging").DisplayStatus; !strings.Contains(d, "Verifying:") {
					if m := soakingUntil.FindStringSubmatch(d); m != nil {
						sawSoaking = m[1]
					}
				}
			}).WithContext(ctx).WithTimeout(time.Until(soakEnd)).WithPolling(time.Second).Should(Succeed())
			Expect(sawSoaking).NotTo(BeEmpty(), "the staging step never said `Soaking until ...` after its Job succeeded")
			until, err := time.Parse(time.RFC3339, sawSoaking)
			Expect(err).NotTo(HaveOccurred(), "Soaking until %q", sawSoaking)
			Expect(until).To(BeTemporally("~", soakEnd, time.Second), "the soak ends healthyTime %s + 30 s", p.HealthyTime.UTC().Format(time.RFC3339))
		}

		By("staging passes after its soak; prod waits for two approvals, its binding untouched")
		Eventually(func(g Gomega, ctx context.Context) {
			r := getRun(g, ctx, "shop-1")
			g.Expect(step(r, "staging").Status).To(Equal(appstudiov1alpha1.PromotionRunEnvironmentStatusSuccess), describe(ctx, r))
			p := gated(g, ctx, "staging", "shop-1")
			g.Expect(p.Phase).To(Equal(appstudiov1alpha1.GatePhasePassed), describe(ctx, r))
			g.Expect(p.Verification.Result).To(Equal("Succeeded"), describe(ctx, r))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		waitForStep(ctx, "shop-1", []string{"1 dev Success", "2 staging Success", "3 prod In Progress"}, "prod",
			"Waiting for approvals: 0 of 2")
		_, err = studio().SnapshotEnvironmentBindings(ns).Get(ctx, app+"-prod-generated-binding", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "prod's binding was made before the approvals: %v", err)

		By("eve, an editor, may not approve")
		_, err = approve(ctx, "eve", "shop-1", "prod", appstudiov1alpha1.ApprovalApprove, "shop-1-prod-eve")
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "eve's approval: %v", err)
		Expect(err.Error()).To(And(ContainSubstring("approve"), ContainSubstring("environments/prod")))
		out, _, err := run("admin", "", "auth", "can-i", "approve", "environments/prod", "-n", ns, "--as", "eve")
		Expect(strings.TrimSpace(out)).To(Equal("no"))
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "kubectl auth can-i as eve: %v", err)
		Expect(exit.ExitCode()).To(Equal(1))
		out, _, err = run("admin", "", "auth", "can-i", "approve", "environments/prod", "-n", ns, "--as", "alice")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal("yes"))
		out, _, _ = run("admin", "", "auth", "can-i", "approve", "environments/prod", "-n", ns, "--as", "dave")
		Expect(strings.TrimSpace(out)).To(Equal("yes"), "a namespace admin may approve (gitops-service:approve is aggregated to admin)")

		By("an approval of a run or an Environment that does not exist is invalid")
		_, err = gitopsAs("alice").AppStudioV1alpha1().PromotionApprovals(ns).Create(ctx, &appstudiov1alpha1.PromotionApproval{
			ObjectMeta: metav1.ObjectMeta{Name: "no-such-run"},
			Spec: appstudiov1alpha1.PromotionApprovalSpec{PromotionRun: "no-such-run", Environment: "prod",
				Decision: appstudiov1alpha1.ApprovalApprove},
		}, metav1.CreateOptions{})
		Expect(statusCode(err)).To(Equal(int32(422)), "an approval of no run: %v", err)
		// Asked as dave, the namespace admin, who may approve any Environment: alice may approve
		// prod alone, and the verb is checked first (403), as authorization comes before
		// validation in every request.
		_, err = approve(ctx, "dave", "shop-1", "nowhere", appstudiov1alpha1.ApprovalApprove, "shop-1-nowhere-dave")
		Expect(statusCode(err)).To(Equal(int32(422)), "an approval into no Environment: %v", err)

		By("alice approves, once")
		a, err := approve(ctx, "alice", "shop-1", "prod", appstudiov1alpha1.ApprovalApprove, "shop-1-prod-alice")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Spec.Username).To(Equal("alice"), "the server records who approved")
		_, err = approve(ctx, "alice", "shop-1", "prod", appstudiov1alpha1.ApprovalApprove, "shop-1-prod-alice-again")
		Expect(statusCode(err)).To(Equal(int32(409)), "alice's second approval: %v", err)
		waitForStep(ctx, "shop-1", []string{"1 dev Success", "2 staging Success", "3 prod In Progress"}, "prod",
			"Waiting for approvals: 1 of 2 (alice)")

		By("bob's approval is the second: shop-1 enters prod")
		a, err = approve(ctx, "bob", "shop-1", "prod", appstudiov1alpha1.ApprovalApprove, "shop-1-prod-bob")
		Expect(err).NotTo(HaveOccurred())
		Expect(a.Spec.Username).To(Equal("bob"))
		waitForEnd(ctx, "shop-1", appstudiov1alpha1.PromotionRunCompleteResultSuccess,
			[]string{"1 dev Success", "2 staging Success", "3 prod Success"})
		expectDeployed(ctx, "1", "dev", "staging", "prod")
		Eventually(func(g Gomega, ctx context.Context) {
			p := gated(g, ctx, "prod", "shop-1")
			g.Expect(p.Phase).To(Equal(appstudiov1alpha1.GatePhasePassed))
			g.Expect(p.Approvers).To(ConsistOf("alice", "bob"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("keeps a promotion out of a frozen Environment until the freeze expires", func(ctx context.Context) {
		newSnapshot(ctx, "shop-2", "2")
		p := verifying(ctx, "shop-2")
		Expect(p.PreviousSnapshot).To(Equal("shop-1"))
		playJobPods(ctx, ns, p.Verification.Job, true)

		// Frozen from now, while staging soaks, until 25 s after the soak ends: prod, entered
		// once staging passes, meets the freeze for about 25 s however late this runs.
		until := p.HealthyTime.Add(soak + 26*time.Second).Truncate(time.Second).UTC()
		By("freezing prod until " + until.Format(time.RFC3339))
		patch := fmt.Sprintf(`{"spec":{"freezes":[{"name":"release-freeze","reason":"Quarterly close","until":%q}]}}`, until.Format(time.RFC3339))
		_, err := studio().PromotionGates(ns).Patch(ctx, "prod", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("staging passes; prod is frozen, its binding still at shop-1")
		Eventually(func(g Gomega, ctx context.Context) {
			r := getRun(g, ctx, "shop-2")
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging Success", "3 prod In Progress"}), describe(ctx, r))
			g.Expect(step(r, "prod").DisplayStatus).To(And(ContainSubstring("Frozen by release-freeze"), ContainSubstring("Quarterly close"),
				ContainSubstring("Frozen by release-freeze until "+until.Format(time.RFC3339)+": Quarterly close")), describe(ctx, r))
			g.Expect(gated(g, ctx, "prod", "shop-2").Phase).To(Equal(appstudiov1alpha1.GatePhaseWaiting), describe(ctx, r))
		}).WithContext(ctx).WithTimeout(time.Until(until)).WithPolling(time.Second).Should(Succeed(),
			"prod was not seen frozen before the freeze expired")
		Expect(binding(ctx, "prod").Spec.Snapshot).To(Equal("shop-1"), "prod was entered while frozen")

		By("the freeze expires: prod waits for its approvals")
		waitForStep(ctx, "shop-2", []string{"1 dev Success", "2 staging Success", "3 prod In Progress"}, "prod",
			"Waiting for approvals: 0 of 2")
		Expect(time.Now()).NotTo(BeTemporally("<", until), "prod stopped waiting for the freeze before it expired")
		Expect(binding(ctx, "prod").Spec.Snapshot).To(Equal("shop-1"), "prod was entered before the approvals")
		approveProd(ctx, "shop-2")
		waitForEnd(ctx, "shop-2", appstudiov1alpha1.PromotionRunCompleteResultSuccess,
			[]string{"1 dev Success", "2 staging Success", "3 prod Success"})
		expectDeployed(ctx, "2", "dev", "staging", "prod")
	})

	It("rolls staging back when its verification fails, and holds it there until released", func(ctx context.Context) {
		newSnapshot(ctx, "shop-3", "3")
		p := verifying(ctx, "shop-3")
		Expect(p.PreviousSnapshot).To(Equal("shop-2"))
		Expect(configMap(ctx, "staging")).To(Equal("registry.invalid/web:3"), "staging is verified at shop-3")

		By("the verification Job fails: staging goes back to shop-2, and nothing below it is entered")
		playJobPods(ctx, ns, p.Verification.Job, false)
		r := waitForEnd(ctx, "shop-3", appstudiov1alpha1.PromotionRunCompleteResultFailure,
			[]string{"1 dev Success", "2 staging Failed"})
		Expect(step(r, "staging").DisplayStatus).To(ContainSubstring("rolled back to Snapshot shop-2"), describe(ctx, r))
		Eventually(func(g Gomega, ctx context.Context) {
			p := gated(g, ctx, "staging", "shop-3")
			g.Expect(p.Phase).To(Equal(appstudiov1alpha1.GatePhaseRolledBack), describe(ctx, r))
			g.Expect(p.PreviousSnapshot).To(Equal("shop-2"))
			g.Expect(p.Verification.Result).To(Equal("Failed"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(binding(ctx, "staging").Spec.Snapshot).To(Equal("shop-2"))
		Eventually(func(ctx context.Context) string {
			cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-"+component+"-staging", metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return cm.Data["value"]
		}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Equal("registry.invalid/web:2"),
			"Argo CD deploys shop-2 into staging again")
		hold, err := studio().EnvironmentHolds(ns).Get(ctx, "staging", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the rollback holds staging")
		Expect(hold.Spec.Snapshot).To(Equal("shop-2"))
		Expect(hold.Spec.PromotionRun).To(Equal(runName("shop-3")))
		Expect(configMap(ctx, "prod")).To(Equal("registry.invalid/web:2"))
		prod := binding(ctx, "prod")
		Expect(prod.Spec.Snapshot).To(Equal("shop-2"))
		Expect(prod.Generation).To(Equal(int64(2)), "prod was pointed at shop-1 and shop-2 only, never at shop-3")

		By("a new Snapshot waits at the held staging")
		newSnapshot(ctx, "shop-4", "4")
		waitForStep(ctx, "shop-4", []string{"1 dev Success", "2 staging In Progress"}, "staging", "Held by EnvironmentHold staging")
		Consistently(func(g Gomega, ctx context.Context) {
			r := getRun(g, ctx, "shop-4")
			g.Expect(steps(r)).To(Equal([]string{"1 dev Success", "2 staging In Progress"}), describe(ctx, r))
			g.Expect(step(r, "staging").DisplayStatus).To(ContainSubstring("Held by EnvironmentHold staging"), describe(ctx, r))
			b, err := studio().SnapshotEnvironmentBindings(ns).Get(ctx, app+"-staging-generated-binding", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.Spec.Snapshot).To(Equal("shop-2"), "staging was entered while held")
		}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(configMap(ctx, "dev")).To(Equal("registry.invalid/web:4"))

		By("releasing the hold lets it on: staging verifies and soaks, prod takes two approvals")
		must("admin", "-n", ns, "delete", "environmenthold", "staging")
		soaked(ctx, "shop-4")
		waitForStep(ctx, "shop-4", []string{"1 dev Success", "2 staging Success", "3 prod In Progress"}, "prod",
			"Waiting for approvals: 0 of 2")
		approveProd(ctx, "shop-4")
		waitForEnd(ctx, "shop-4", appstudiov1alpha1.PromotionRunCompleteResultSuccess,
			[]string{"1 dev Success", "2 staging Success", "3 prod Success"})
		expectDeployed(ctx, "4", "dev", "staging", "prod")
	})
})

// statusCode is the HTTP status code of an API error, 0 for none.
func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}
