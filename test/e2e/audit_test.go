//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var _ = Describe("The audit trail", func() {
	It("shows tenants who wrote what, and nobody can write it", func(ctx context.Context) {
		ns := "e2e-audit-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		bindClusterRole(ctx, ns, "edit", "alice", "bob")
		waitCanI("bob", "list", "auditentries.managed-gitops.redhat.com", ns)

		By("alice creating a GitOpsDeployment, bob annotating it")
		createdRV := strings.TrimSpace(mustIn("alice", deployment("web", ns), "create", "-f", "-", "-o", "jsonpath={.metadata.resourceVersion}"))
		annotatedRV := strings.TrimSpace(must("bob", "annotate", "gitopsdeployment", "web", "-n", ns, "team=shop",
			"-o", "jsonpath={.metadata.resourceVersion}"))

		By("reading the trail as bob")
		entries := func(user string, args ...string) []gitopsv1alpha1.AuditEntry {
			GinkgoHelper()
			var list gitopsv1alpha1.AuditEntryList
			Expect(json.Unmarshal([]byte(must(user, append([]string{"get", "auditentries", "-n", ns, "-o", "json"}, args...)...)), &list)).To(Succeed())
			return list.Items
		}
		var byUsers []gitopsv1alpha1.AuditEntry
		for _, e := range entries("bob", "--field-selector", "object.name=web") {
			if e.User.Username == "alice" || e.User.Username == "bob" {
				byUsers = append(byUsers, e)
			}
		}
		Expect(byUsers).To(HaveLen(2), "%+v", byUsers)
		Expect(byUsers[0].User.Username).To(Equal("alice"))
		Expect(byUsers[0].Verb).To(Equal("create"))
		Expect(byUsers[0].Object).To(Equal(gitopsv1alpha1.AuditObject{APIGroup: gitopsv1alpha1.GroupName, Resource: "gitopsdeployments",
			Name: "web", UID: byUsers[0].Object.UID, ResourceVersion: createdRV}))
		Expect(byUsers[0].Object.UID).NotTo(BeEmpty())
		Expect(byUsers[0].Name).To(Equal(fmt.Sprintf("%020s", createdRV)), "an entry is named after its write's resourceVersion")
		Expect(byUsers[1].User.Username).To(Equal("bob"))
		Expect(byUsers[1].Verb).To(Equal("patch"))
		Expect(byUsers[1].Object.ResourceVersion).To(Equal(annotatedRV))
		Expect(byUsers[1].User.Groups).To(ContainElement("system:authenticated"))

		// The agent's status writes are in the trail too, under its own name.
		Eventually(func(g Gomega) {
			status := entries("bob", "-l", gitopsv1alpha1.LabelAuditName+"=web", "--field-selector", "object.subresource=status")
			g.Expect(status).NotTo(BeEmpty())
			g.Expect(status[0].User.Username).To(HavePrefix("system:serviceaccount:"))
		}).WithTimeout(time.Minute).Should(Succeed())

		table := must("bob", "get", "auditentries", "-n", ns, "-l", gitopsv1alpha1.LabelAuditVerb+"=create")
		Expect(table).To(MatchRegexp(`NAME\s+TIME\s+USER\s+VERB\s+OBJECT\s+AGE`))
		Expect(table).To(MatchRegexp(`\d{20}\s+\S+Z\s+alice\s+create\s+gitopsdeployments/web\s`))

		By("bob may not create, change or delete an entry, even with every right on the group")
		entry := byUsers[0].Name
		forbidden := func(stderr string) {
			GinkgoHelper()
			Expect(stderr).To(ContainSubstring("forbidden"))
			Expect(stderr).To(ContainSubstring(`resource "auditentries"`))
		}
		forged := fmt.Sprintf(`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"AuditEntry","metadata":{"name":"forged","namespace":%q},`+
			`"verb":"create","object":{"apiGroup":"x","resource":"y","name":"z","resourceVersion":"1"},"user":{"username":"alice"},"time":"2026-01-01T00:00:00.000000Z"}`, ns)
		forbidden(fails("bob", forged, "create", "--validate=false", "-f", "-"))
		forbidden(fails("bob", "", "label", "auditentry", entry, "-n", ns, "forged=yes"))
		forbidden(fails("bob", "", "delete", "auditentry", entry, "-n", ns))
		forbidden(fails("bob", "", "delete", "auditentries", "--all", "-n", ns))
		grantEverythingOnGitOps(ctx, ns, "bob")
		waitCanI("bob", "delete", "auditentries.managed-gitops.redhat.com", ns)
		stderr := fails("bob", "", "delete", "auditentry", entry, "-n", ns)
		forbidden(stderr)
		Expect(stderr).To(ContainSubstring("audit entries are written by gitops-apiserver only"))
		Expect(entries("admin", "--field-selector", "metadata.name="+entry)).To(HaveLen(1))

		By("carol, of another namespace, may not read it; a cluster admin reads every namespace's")
		Expect(fails("carol", "", "get", "auditentries", "-n", ns)).To(ContainSubstring("forbidden"))
		Expect(fails("carol", "", "get", "auditentries", "-A")).To(ContainSubstring("forbidden"))
		Expect(must("admin", "get", "auditentries", "-A", "--field-selector", "metadata.name="+entry, "-o", "name")).
			To(Equal("auditentry.managed-gitops.redhat.com/" + entry + "\n"))

		By("deleting the namespace removes its trail")
		deleteAllDeployments(ctx, ns)
		Expect(kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(BeTrue())
		list, err := gitops.ManagedGitopsV1alpha1().AuditEntries(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(BeEmpty())
	})
})
