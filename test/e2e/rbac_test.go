//go:build e2e

package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("RBAC of the host cluster", func() {
	It("lets a tenant work only in the namespaces where it holds a role", func() {
		mustIn("alice", deployment("alices", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "alices")
		Expect(must("alice", "get", "gitopsdeployments", "-n", tenantA, "-o", "name")).To(ContainSubstring("/alices"))

		stderr := fails("alice", deployment("intruder", tenantB), "apply", "-f", "-")
		Expect(stderr).To(ContainSubstring("forbidden"))
		stderr = fails("alice", "", "get", "gitopsdeployments", "-n", tenantB)
		Expect(stderr).To(ContainSubstring("forbidden"))
		stderr = fails("alice", "", "get", "gitopsdeployments", "--all-namespaces")
		Expect(stderr).To(ContainSubstring("forbidden"))

		mustIn("bob", deployment("bobs", tenantB), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantB, "bobs")
		Expect(must("bob", "get", "gitopsdeployments", "-n", tenantB, "-o", "name")).NotTo(ContainSubstring("/alices"))
	})

	It("lets a viewer read but not write", func() {
		mustIn("alice", deployment("viewed", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "viewed")
		Expect(must("carol", "get", "gitopsdeployments", "-n", tenantA, "-o", "name")).To(ContainSubstring("/viewed"))
		stderr := fails("carol", deployment("viewers", tenantA), "apply", "-f", "-")
		Expect(stderr).To(ContainSubstring("forbidden"))
		stderr = fails("carol", "", "delete", "gitopsdeployment", "viewed", "-n", tenantA)
		Expect(stderr).To(ContainSubstring("forbidden"))
	})

	It("keeps status writable only by the service", func() {
		mustIn("alice", deployment("status-of-alices", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "status-of-alices")
		stderr := fails("alice", "", "patch", "gitopsdeployment", "status-of-alices", "-n", tenantA, "--subresource=status",
			"--type=merge", "-p", `{"status":{"health":{"status":"Healthy"}}}`)
		Expect(stderr).To(ContainSubstring("forbidden"))
	})

	It("keeps Operations and the fleet's kinds away from tenants, even in their own namespace", func() {
		for _, args := range [][]string{
			{"get", "operations", "-n", tenantA},
			{"get", "operations", "--all-namespaces"},
			{"get", "argocdinstances"},
			{"get", "tenantplacements"},
			{"get", "tenantplacement", tenantA},
		} {
			stderr := fails("alice", "", args...)
			Expect(stderr).To(ContainSubstring("forbidden"))
		}
		Expect(must("admin", "get", "operations", "--all-namespaces")).To(Or(BeEmpty(), ContainSubstring("NAMESPACE")))
		Expect(must("admin", "get", "argocdinstances")).To(ContainSubstring("main"))
	})

	It("keeps the internal kinds away even from a user the host cluster's RBAC grants them", func(ctx context.Context) {
		// A cluster-wide grant of the group, as a careless ClusterRole might give: gitops-apiserver
		// refuses before the host cluster's RBAC is asked.
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-managed-gitops-everything"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"managed-gitops.redhat.com"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
		_, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
		})
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-bob-managed-gitops-everything"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}}}
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
		// The grant is in force: bob lists every namespace's GitOpsDeployments.
		Eventually(func() error { _, _, err := run("bob", "", "get", "gitopsdeployments", "--all-namespaces"); return err }).
			WithTimeout(30 * time.Second).Should(Succeed())
		for _, resource := range []string{"argocdinstances", "tenantplacements", "operations"} {
			stderr := fails("bob", "", "get", resource, "--all-namespaces")
			Expect(stderr).To(ContainSubstring(resource + ".managed-gitops.redhat.com are internal to the GitOps Service"))
		}
	})

	// gitops-apiserver asks the host first whether a user may act on every object of a resource
	// (one cached SubjectAccessReview for all names): a grant limited by resourceNames must still
	// reach exactly its objects.
	It("honours a grant limited to named objects", func(ctx context.Context) {
		mustIn("alice", deployment("named-web", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "named-web")
		mustIn("alice", deployment("named-db", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "named-db")
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "e2e-get-named-web", Namespace: tenantA},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"managed-gitops.redhat.com"}, Resources: []string{"gitopsdeployments"},
				ResourceNames: []string{"named-web"}, Verbs: []string{"get"}}}}
		_, err := kube.RbacV1().Roles(tenantA).Create(ctx, role, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().Roles(tenantA).Delete(ctx, role.Name, metav1.DeleteOptions{})
		})
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: tenantA},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "dave"}}}
		_, err = kube.RbacV1().RoleBindings(tenantA).Create(ctx, binding, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = kube.RbacV1().RoleBindings(tenantA).Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
		// Denials are cached for 10 s: wait for the grant to be seen.
		Eventually(func() (string, error) {
			stdout, _, err := run("admin", "", "--as", "dave", "get", "gitopsdeployment", "named-web", "-n", tenantA, "-o", "name")
			return stdout, err
		}).WithTimeout(45 * time.Second).WithPolling(time.Second).Should(ContainSubstring("named-web"))
		for _, args := range [][]string{
			{"get", "gitopsdeployment", "named-db", "-n", tenantA},
			{"get", "gitopsdeployments", "-n", tenantA},
			{"delete", "gitopsdeployment", "named-web", "-n", tenantA},
			{"get", "gitopsdeployment", "named-web", "-n", tenantB},
		} {
			stderr := fails("admin", "", append([]string{"--as", "dave"}, args...)...)
			Expect(stderr).To(ContainSubstring("forbidden"), "dave %v", args)
		}
	})

	It("answers kubectl auth can-i as it enforces", func() {
		for _, c := range []struct {
			user, verb, resource, subresource, namespace, want string
		}{
			{"alice", "create", "gitopsdeployments.managed-gitops.redhat.com", "", tenantA, "yes"},
			{"alice", "create", "gitopsdeployments.managed-gitops.redhat.com", "", tenantB, "no"},
			{"alice", "update", "gitopsdeployments.managed-gitops.redhat.com", "status", tenantA, "no"},
			{"alice", "get", "gitopsdeployments.managed-gitops.redhat.com", "status", tenantA, "yes"},
			{"carol", "list", "snapshotenvironmentbindings.appstudio.redhat.com", "", tenantA, "yes"},
			{"carol", "create", "snapshotenvironmentbindings.appstudio.redhat.com", "", tenantA, "no"},
			{"bob", "delete", "environments.appstudio.redhat.com", "", tenantB, "yes"},
			// Deciding on a promotion: editors create the record, but gitops-apiserver admits it only
			// from who holds approve (or override) on the Environment, which admin has and view not.
			{"alice", "approve", "environments.appstudio.redhat.com/prod", "", tenantA, "yes"},
			{"alice", "override", "environments.appstudio.redhat.com/prod", "", tenantA, "yes"},
			{"alice", "approve", "environments.appstudio.redhat.com/prod", "", tenantB, "no"},
			{"carol", "approve", "environments.appstudio.redhat.com/prod", "", tenantA, "no"},
			{"alice", "create", "promotionapprovals.appstudio.redhat.com", "", tenantA, "yes"},
			{"alice", "update", "promotionapprovals.appstudio.redhat.com", "", tenantA, "no"},
			{"alice", "delete", "promotionapprovals.appstudio.redhat.com", "", tenantA, "yes"},
			{"carol", "create", "promotionapprovals.appstudio.redhat.com", "", tenantA, "no"},
			{"carol", "list", "promotionapprovals.appstudio.redhat.com", "", tenantA, "yes"},
			{"alice", "update", "promotiongates.appstudio.redhat.com", "", tenantA, "yes"},
			{"alice", "update", "promotiongates.appstudio.redhat.com", "status", tenantA, "no"},
			{"carol", "get", "promotiongates.appstudio.redhat.com", "status", tenantA, "yes"},
			{"alice", "delete", "environmentholds.appstudio.redhat.com", "", tenantA, "yes"},
			{"carol", "delete", "environmentholds.appstudio.redhat.com", "", tenantA, "no"},
			// Holds of a deployment (rollback): editors make and release them, viewers read them;
			// their status is the agent's.
			{"alice", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", "", tenantA, "yes"},
			{"alice", "delete", "gitopsdeploymentholds.managed-gitops.redhat.com", "", tenantA, "yes"},
			{"alice", "update", "gitopsdeploymentholds.managed-gitops.redhat.com", "status", tenantA, "no"},
			{"carol", "get", "gitopsdeploymentholds.managed-gitops.redhat.com", "", tenantA, "yes"},
			{"carol", "create", "gitopsdeploymentholds.managed-gitops.redhat.com", "", tenantA, "no"},
		} {
			args := []string{"auth", "can-i", c.verb, c.resource, "-n", c.namespace}
			if c.subresource != "" {
				args = append(args, "--subresource", c.subresource)
			}
			stdout, _, _ := run(c.user, "", args...)
			Expect(strings.TrimSpace(stdout)).To(Equal(c.want), "%s %v", c.user, args)
		}
	})
})
