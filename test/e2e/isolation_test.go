//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
)

// A tenant's GitOpsDeployments deploy through a deployer that can write only in the tenant's
// namespace, so nothing a tenant puts in its repository or its objects reaches another
// namespace or the cluster scope.
var _ = Describe("tenant isolation", Ordered, func() {
	var own, other string

	BeforeAll(func(ctx context.Context) {
		suffix := time.Now().UnixNano() % 100000
		own, other = fmt.Sprintf("e2e-iso-a-%d", suffix), fmt.Sprintf("e2e-iso-b-%d", suffix)
		createNamespace(ctx, own)
		createNamespace(ctx, other)
	})

	It("refuses a destination namespace other than the tenant's own", func(ctx context.Context) {
		d := &managedv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"},
			Spec: managedv1alpha1.GitOpsDeploymentSpec{
				Source:      managedv1alpha1.ApplicationSource{RepoURL: "file:///nonexistent", Path: "p"},
				Destination: managedv1alpha1.ApplicationDestination{Namespace: other},
				Type:        managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(own).Create(ctx, d, metav1.CreateOptions{})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.destination.namespace"))
	})

	It("deploys only into the tenant's namespace, whatever the manifests say", func(ctx context.Context) {
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"other-namespace/own.yaml":   configMap("stays-home", "own"),
			"other-namespace/other.yaml": configMapIn("escaped", other),
			"cluster-scope/own.yaml":     configMap("stays-home-too", "own"),
			"cluster-scope/cluster.yaml": clusterRole("escaped-" + own),
		})
		// One cache of the whole cluster serves every tenant: the tenant's project is what
		// refuses, at sync time, a namespace or a cluster-scoped kind it does not allow (and the
		// deployer Argo CD impersonates could not write there either).
		for path, refusal := range map[string]string{
			"other-namespace": fmt.Sprintf("namespace %s is not permitted in project '%s'", other, argocd.ProjectName(own)),
			"cluster-scope":   fmt.Sprintf("resource rbac.authorization.k8s.io:ClusterRole is not permitted in project %s", argocd.ProjectName(own)),
		} {
			By("deploying " + path)
			createDeployment(ctx, own, path, repoURL, path, true)
			Eventually(func(g Gomega, ctx context.Context) {
				op := getDeployment(ctx, own, path).Status.OperationState
				g.Expect(op).NotTo(BeNil(), "no sync yet")
				g.Expect(op.SyncResult).NotTo(BeNil(), "no sync result yet: %+v", op)
				g.Expect(op.SyncResult.Resources).To(ContainElement(HaveField("Message", ContainSubstring(refusal))))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		}
		Consistently(func(ctx context.Context) bool {
			_, errCM := kube.CoreV1().ConfigMaps(other).Get(ctx, "escaped", metav1.GetOptions{})
			_, errCR := kube.RbacV1().ClusterRoles().Get(ctx, "escaped-"+own, metav1.GetOptions{})
			return apierrors.IsNotFound(errCM) && apierrors.IsNotFound(errCR)
		}).WithContext(ctx).WithTimeout(10*time.Second).WithPolling(time.Second).Should(BeTrue(),
			"a tenant's repository wrote outside its namespace")

		By("the deployer is bound in the tenant's namespace alone")
		bound := func(ns string) []string {
			rbs, err := kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			var subjects []string
			for _, rb := range rbs.Items {
				for _, s := range rb.Subjects {
					subjects = append(subjects, s.Namespace+"/"+s.Name)
				}
			}
			return subjects
		}
		deployerAccount := own + "/" + deployer.DeployerName
		Expect(bound(own)).To(ContainElement(deployerAccount))
		Expect(bound(other)).NotTo(ContainElement(deployerAccount))
		crbs, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, crb := range crbs.Items {
			for _, s := range crb.Subjects {
				Expect(s.Namespace + "/" + s.Name).NotTo(Equal(deployerAccount))
			}
		}

		By("a widened AppProject is put back")
		argo := argoclient.NewForConfigOrDie(adminConfig)
		_, err = argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Patch(ctx, argocd.ProjectName(own), types.MergePatchType,
			[]byte(`{"spec":{"sourceRepos":["*"],"destinations":[{"server":"*","namespace":"*"}]}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			p, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(own), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.SourceRepos).To(Equal([]string{repoURL}))
			g.Expect(p.Spec.Destinations).To(ConsistOf(HaveField("Namespace", own)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		for _, path := range []string{"other-namespace", "cluster-scope"} {
			Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeployments(own).Delete(ctx, path, metav1.DeleteOptions{})).To(Succeed())
		}
		By("the deployer goes with the namespace's last deployment")
		Eventually(func(ctx context.Context) []string { return bound(own) }).WithContext(ctx).
			WithTimeout(2 * time.Minute).ShouldNot(ContainElement(deployerAccount))
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().ServiceAccounts(own).Get(ctx, deployer.DeployerName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
	})

	It("lets a tenant namespace holding live GitOps deployments be deleted, Applications and all", func(ctx context.Context) {
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"app/cm.yaml": configMap("doomed", "x")})
		createDeployment(ctx, other, "doomed", repoURL, "app", false)
		waitSyncedHealthy(ctx, other, "doomed", "doomed")
		createDeployment(ctx, other, "left-behind", "file:///nonexistent", "p", false)
		Expect(kube.CoreV1().Namespaces().Delete(ctx, other, metav1.DeleteOptions{})).To(Succeed())
		// kube-controller-manager deletes the namespace's GitOps objects through the aggregated
		// API, with the metadata client, before the namespace itself goes; the agent then deletes
		// their Applications, although the deployer can no longer write there.
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().Namespaces().Get(ctx, other, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(),
			"namespace %s is stuck terminating", other)
		argo := argoclient.NewForConfigOrDie(adminConfig)
		Eventually(applicationsOf(argo, other)).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).
			Should(BeEmpty(), "Applications outlived their namespace")
	})

	It("keeps Argo CD's objects and credentials away from tenants", func() {
		for _, args := range [][]string{
			{"get", "applications.argoproj.io", "-n", argoNamespace},
			{"get", "appprojects.argoproj.io", "-n", argoNamespace},
			{"get", "secrets", "-n", argoNamespace},
			{"get", "applications.argoproj.io", "--all-namespaces"},
		} {
			Expect(fails("alice", "", args...)).To(ContainSubstring("forbidden"))
		}
	})
})

func configMapIn(name, namespace string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: x\n", name, namespace)
}

func clusterRole(name string) string {
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\nrules: []\n", name)
}
