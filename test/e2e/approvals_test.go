//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// promotionApproval is a PromotionApproval manifest that claims to be mallory's: the server
// records who really sent it.
func promotionApproval(name, decision, comment string) string {
	return fmt.Sprintf(`apiVersion: appstudio.redhat.com/v1alpha1
kind: PromotionApproval
metadata:
  name: %s
spec:
  promotionRun: shop-42
  environment: prod
  decision: %s
  comment: %q
  username: mallory
  groups: ["system:masters"]
`, name, decision, comment)
}

// Deciding on a promotion takes the verb approve (or override) on the Environment, by name,
// as the host cluster's RBAC answers gitops-apiserver's SubjectAccessReview: the namespace's
// admin holds it (ClusterRole gitops-service:approve), an editor does not, and a Role naming
// the Environment gives it to whoever a team chooses.
var _ = Describe("promotion approvals", func() {
	It("are admitted only from who may approve the Environment, and record who made them", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-approvals-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		_, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "prod-approvers"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"appstudio.redhat.com"}, Resources: []string{"environments"},
				ResourceNames: []string{"prod"}, Verbs: []string{"approve"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// dave and frank edit the namespace, erin administers it; frank may also approve prod.
		for _, b := range []struct{ user, kind, role string }{
			{"dave", "ClusterRole", "edit"}, {"frank", "ClusterRole", "edit"}, {"frank", "Role", "prod-approvers"}, {"erin", "ClusterRole", "admin"},
		} {
			_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: b.user + "-" + b.role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b.kind, Name: b.role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: b.user}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		canI := func(user, verb, what string) string {
			out, _, _ := run("admin", "", "--as", user, "auth", "can-i", verb, what, "-n", ns)
			return strings.TrimSpace(out)
		}
		// RBAC's caches take the bindings in; what can-i answers, gitops-apiserver is told.
		Eventually(func() []string {
			return []string{canI("frank", "approve", "environments.appstudio.redhat.com/prod"), canI("erin", "override", "environments.appstudio.redhat.com/prod"),
				canI("dave", "create", "promotionapprovals.appstudio.redhat.com")}
		}).WithTimeout(30 * time.Second).Should(Equal([]string{"yes", "yes", "yes"}))
		Expect(canI("dave", "approve", "environments.appstudio.redhat.com/prod")).To(Equal("no"))
		Expect(canI("frank", "approve", "environments.appstudio.redhat.com/staging")).To(Equal("no"))
		Expect(canI("frank", "override", "environments.appstudio.redhat.com/prod")).To(Equal("no"))

		client := gitops.AppStudioV1alpha1()
		_, err = client.Environments(ns).Create(ctx, &appstudiov1alpha1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: "Production", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = client.PromotionRuns(ns).Create(ctx, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-42"},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: "shop-42", Application: "shop",
				ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: "prod"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("an editor creates the object, but may not approve")
		stderr := fails("admin", promotionApproval("daves", "Approve", ""), "--as", "dave", "-n", ns, "create", "-f", "-")
		Expect(stderr).To(ContainSubstring(fmt.Sprintf(`user "dave" may not approve environments/prod in namespace %s: `, ns) +
			"approving takes the verb approve on the Environment (kubectl auth can-i approve environments/prod)"))
		stderr = fails("admin", promotionApproval("daves", "Approve", ""), "--as", "dave", "-n", ns, "create", "--dry-run=server", "-f", "-")
		Expect(stderr).To(ContainSubstring("may not approve environments/prod"))
		// Server-side apply is a patch, which edit does not give on approvals (records, immutable):
		// RBAC refuses it before the server is asked.
		stderr = fails("admin", promotionApproval("daves", "Approve", ""), "--as", "dave", "-n", ns, "apply", "--server-side", "-f", "-")
		Expect(stderr).To(ContainSubstring(`User "dave" cannot patch resource "promotionapprovals"`))

		By("whom a Role names approves, once, as themselves")
		mustIn("admin", promotionApproval("franks", "Approve", "LGTM"), "--as", "frank", "-n", ns, "create", "-f", "-")
		franks, err := client.PromotionApprovals(ns).Get(ctx, "franks", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(franks.Spec.Username).To(Equal("frank"))
		Expect(franks.Spec.Groups).To(ContainElement("system:authenticated"))
		Expect(franks.Spec.Groups).NotTo(ContainElement("system:masters"))
		stderr = fails("admin", promotionApproval("franks-again", "Reject", "changed my mind"), "--as", "frank", "-n", ns, "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("user frank already decided on PromotionRun shop-42 for Environment prod: PromotionApproval franks"))
		stderr = fails("admin", promotionApproval("franks-override", "Override", "hotfix"), "--as", "frank", "-n", ns, "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("may not override environments/prod"))
		stderr = fails("admin", "", "--as", "frank", "-n", ns, "patch", "promotionapproval", "franks", "--type=merge", "-p", `{"spec":{"comment":"edited"}}`)
		Expect(stderr).To(ContainSubstring("forbidden"))

		By("the namespace's admin overrides, and deletes a decision")
		mustIn("admin", promotionApproval("erins", "Override", "INC-42 hotfix"), "--as", "erin", "-n", ns, "create", "-f", "-")
		Expect(must("admin", "-n", ns, "get", "approval", "-o", "custom-columns=NAME:.metadata.name,USER:.spec.username,DECISION:.spec.decision", "--sort-by=.metadata.name")).
			To(MatchRegexp(`erins\s+erin\s+Override\n.*franks\s+frank\s+Approve`))
		stderr = fails("admin", "", "--as", "dave", "-n", ns, "delete", "promotionapproval", "franks")
		Expect(stderr).To(ContainSubstring("forbidden"))
		must("admin", "--as", "erin", "-n", ns, "delete", "promotionapproval", "franks")
	})
})
