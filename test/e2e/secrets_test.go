//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Secrets in a tenant's Git path. The stack's cluster is deployed into through one Argo CD
// cache for every tenant, which holds no Secrets (its identity may not read the control
// plane's): there a Secret is left out and the status says why and what to do; through a
// ManagedEnvironment of the tenant's own credentials (a cache of its own) it is deployed.
var _ = Describe("Secrets in Git", Ordered, func() {
	var (
		ns, repoURL string
	)

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-secrets-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"app/cm.yaml":     configMap("cm-with-secret", "one"),
			"app/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-password\nstringData:\n  password: from-git\n",
		})
		DeferCleanup(func(ctx context.Context) { deleteAllDeployments(ctx, ns) })
	})

	secretIn := func(ctx context.Context, name string) (*corev1.Secret, error) {
		return kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}

	It("leaves a Secret out of the shared cluster and tells the tenant why", func(ctx context.Context) {
		createDeployment(ctx, ns, "shared", repoURL, "app", false)
		waitSyncedHealthy(ctx, ns, "shared", "cm-with-secret")
		Eventually(func(g Gomega, ctx context.Context) {
			st := getDeployment(ctx, ns, "shared").Status
			var warning *managedv1alpha1.GitOpsDeploymentCondition
			for i := range st.Conditions {
				if st.Conditions[i].Type == managedv1alpha1.GitOpsDeploymentConditionExcludedResourceWarning {
					warning = &st.Conditions[i]
				}
			}
			g.Expect(warning).NotTo(BeNil(), "conditions: %+v", st.Conditions)
			g.Expect(warning.Status).To(Equal(managedv1alpha1.GitOpsConditionStatusTrue))
			g.Expect(warning.Message).To(And(ContainSubstring("/Secret db-password"),
				ContainSubstring("GitOpsDeploymentManagedEnvironment"), ContainSubstring("docs/deploying-secrets.md")))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		_, err := secretIn(ctx, "db-password")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the shared cache deployed a Secret: %v", err)
		deleteDeploymentAndWait(ctx, ns, "shared")
	})

	It("deploys the Secret through a ManagedEnvironment of the tenant's own credentials", func(ctx context.Context) {
		By("the tenant's admin makes a ServiceAccount that may edit the namespace, as docs/deploying-secrets.md says")
		_, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "secrets-deployer"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "secrets-deployer-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "secrets-deployer", Namespace: ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "secrets-deployer", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ca := adminConfig.CAData
		if len(ca) == 0 {
			ca, err = os.ReadFile(adminConfig.CAFile)
			Expect(err).NotTo(HaveOccurred())
		}
		createSecret(ctx, ns, "own-cluster", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(adminConfig.Host, tr.Status.Token, ca)})
		_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: "own-cluster"},
			Spec: managedv1alpha1.ManagedEnvironmentSpec{APIURL: adminConfig.Host, ClusterCredentialsSecret: "own-cluster",
				Namespaces: []string{ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		createDeploymentTo(ctx, ns, "own", repoURL, "app",
			managedv1alpha1.ApplicationDestination{Environment: "own-cluster", Namespace: ns}, false)
		Eventually(func(g Gomega, ctx context.Context) {
			s, err := secretIn(ctx, "db-password")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(s.Data["password"])).To(Equal("from-git"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			st := getDeployment(ctx, ns, "own").Status
			g.Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", st)
			g.Expect(st.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy))
			g.Expect(st.Resources).To(ContainElement(managedv1alpha1.ResourceStatus{
				Version: "v1", Kind: "Secret", Namespace: ns, Name: "db-password", Status: managedv1alpha1.SyncStatusCodeSynced,
			}))
			for _, c := range st.Conditions {
				g.Expect(c.Type).NotTo(Equal(managedv1alpha1.GitOpsDeploymentConditionExcludedResourceWarning))
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
