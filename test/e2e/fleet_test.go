//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The stack's Argo CD is instance "main" of a fleet (artifacts/argocd-local/instance.yaml), and
// its agent serves only the tenants placed on it.
var _ = Describe("fleet", func() {
	It("places a new tenant on the stack's instance, which takes it and reports its load", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-fleet-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"env/cm.yaml": configMap("cm-fleet", "one")})
		createDeployment(ctx, ns, "web", repoURL, "env", false)
		waitSyncedHealthy(ctx, ns, "web", "cm-fleet")

		p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, ns, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Spec.Instance).To(Equal("main"))
		Expect(p.Status.Instance).To(Equal("main"))
		Expect(must("admin", "get", "tenantplacement", ns)).To(MatchRegexp(ns + `\s+main\s+main\s+false\s+Placed`))

		Eventually(func(g Gomega, ctx context.Context) {
			inst, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, "main", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(inst.Status.Leader).To(Equal("local-agent"))
			g.Expect(inst.Status.Tenants).To(BeNumerically(">=", 1))
			g.Expect(inst.Status.Applications).To(BeNumerically(">=", 1))
			g.Expect(inst.Status.Conditions).To(ContainElement(And(
				HaveField("Type", managedv1alpha1.ArgoCDInstanceConditionReady), HaveField("Status", metav1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		deleteDeploymentAndWait(ctx, ns, "web")
	})
})
