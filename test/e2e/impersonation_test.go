//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
)

// Argo CD's application-controller only reads (artifacts/argocd-controller): every write of a
// sync into a tenant namespace is made by impersonating that namespace's deployer, which may do
// what the namespace's edit role allows. So whatever succeeds below was impersonated, and what
// an editor may not do fails.
var _ = Describe("sync impersonation", func() {
	It("gives a repository no more than the namespace's edit role: an editor cannot make itself admin", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-escalate-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		_, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		canI := func() string {
			out, _, _ := run("alice", "", "auth", "can-i", "create", "rolebindings", "-n", ns)
			return strings.TrimSpace(out)
		}
		Eventually(canI).WithTimeout(30 * time.Second).Should(Equal("no"))

		By("alice, an editor, deploys a RoleBinding that would make her admin of the namespace")
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"escalate/rb.yaml": fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: alice-admin\n" +
				"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: admin\n" +
				"subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: alice\n"),
			"escalate/cm.yaml": configMap("escalate", "x"),
		})
		mustIn("alice", fmt.Sprintf("apiVersion: managed-gitops.redhat.com/v1alpha1\nkind: GitOpsDeployment\n"+
			"metadata:\n  name: escalate\nspec:\n  source:\n    repoURL: %s\n    path: escalate\n  destination: {}\n  type: automated\n", repoURL),
			"apply", "-n", ns, "-f", "-")

		By("Argo CD tries, and the API server refuses the deployer")
		deployerUser := "system:serviceaccount:" + ns + ":" + deployer.DeployerName
		Eventually(func(g Gomega, ctx context.Context) {
			op := getDeployment(ctx, ns, "escalate").Status.OperationState
			g.Expect(op).NotTo(BeNil(), "no sync yet")
			g.Expect(op.SyncResult).NotTo(BeNil(), "no sync result yet: %+v", op)
			g.Expect(op.SyncResult.Resources).To(ContainElement(And(HaveField("Name", "alice-admin"),
				HaveField("Message", And(ContainSubstring("forbidden"), ContainSubstring(deployerUser))))))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(func(ctx context.Context) bool {
			_, err := kube.RbacV1().RoleBindings(ns).Get(ctx, "alice-admin", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && canI() == "no"
		}).WithContext(ctx).WithTimeout(15*time.Second).WithPolling(time.Second).Should(BeTrue(),
			"a deployment made its editor admin of the namespace")
	})

	It("runs hooks, prunes and deletes as the deployer", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-impersonate-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(func(ctx context.Context) {
			_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		hook := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: presync\n  annotations:\n" +
			"    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/hook-delete-policy: HookSucceeded\ndata:\n  value: x\n"
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"one/cm.yaml":   configMap("hooked", "one"),
			"one/hook.yaml": hook,
			"two/cm.yaml":   configMap("second", "two"),
		})
		d := createDeployment(ctx, ns, "hooked", repoURL, "one", true)
		waitSyncedHealthy(ctx, ns, d.Name, "hooked")

		By("the PreSync hook was created, and deleted once it succeeded")
		argo := argoclient.NewForConfigOrDie(adminConfig)
		app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(app.Status.OperationState).NotTo(BeNil())
		Expect(app.Status.OperationState.SyncResult.Resources).To(ContainElement(And(
			HaveField("Name", "presync"), HaveField("HookType", BeEquivalentTo("PreSync")),
			HaveField("HookPhase", BeEquivalentTo("Succeeded")))))
		waitConfigMapGone(ctx, ns, "presync", "the hook's delete policy")

		By("pruning what the new path no longer has")
		updateDeployment(ctx, ns, d.Name, func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.Path = "two" })
		waitSyncedHealthy(ctx, ns, d.Name, "second")
		waitConfigMapGone(ctx, ns, "hooked", "pruning")

		By("deleting what it deployed with the deployment")
		deleteDeploymentAndWait(ctx, ns, d.Name)
		_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "second", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap outlived its GitOpsDeployment: %v", err)
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, deployer.DeployerName, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "the deployer outlived the namespace's last deployment")
	})
})
