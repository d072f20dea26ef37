//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	appstudioapply "github.com/gitops-service/gitops-service/pkg/generated/applyconfiguration/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// The tenant of a provisioned namespace holds edit there, which aggregates our kinds, claims
// included: were claims admitted in it, each would make another namespace with its own limit of
// claims, and so on, escaping the per-namespace limit. gitops-apiserver refuses them.
var _ = Describe("Claims in provisioned namespaces", func() {
	It("refuses a claim that a provisioned namespace's deployer makes in that namespace, saying why", func(ctx context.Context) {
		suffix := time.Now().UnixNano() % 100000
		ns, class := fmt.Sprintf("e2e-nested-%d", suffix), fmt.Sprintf("nested-%d", suffix)
		createNamespace(ctx, ns)
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: appstudiov1alpha1.ProvisionerNamespace, ReclaimPolicy: appstudiov1alpha1.ReclaimPolicyDelete},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Delete(ctx, class, metav1.DeleteOptions{})
		})
		claim := func(name string) *appstudiov1alpha1.DeploymentTargetClaim {
			return &appstudiov1alpha1.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)}}
		}
		_, err = gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(ctx, claim("outer"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, "outer", metav1.DeleteOptions{})
		})
		var dt *appstudiov1alpha1.DeploymentTarget
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(ctx, "outer", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetClaimPhaseBound))
			dt, err = gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(ctx, c.Spec.TargetName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		provisioned := dt.Spec.KubernetesClusterCredentials.DefaultNamespace

		By("acting with the provisioned namespace's deployer token, which RBAC lets create claims there")
		secret, err := kube.CoreV1().Secrets(ns).Get(ctx, dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		review, err := kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: provisioned, Verb: "create", Group: appstudiov1alpha1.GroupName, Resource: "deploymenttargetclaims"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(review.Status.Allowed).To(BeTrue(), "edit aggregates claims: the refusal below is gitops-apiserver's, not RBAC's")
		deployer := versioned.NewForConfigOrDie(cfg).AppStudioV1alpha1().DeploymentTargetClaims(provisioned)

		expectRefused := func(err error) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a claim in the provisioned namespace: %v", err)
			Expect(err.Error()).To(And(
				ContainSubstring("namespace "+provisioned+" was made by the namespace provisioner for a claim in namespace "+ns),
				ContainSubstring("make the claim in "+ns)))
		}
		_, err = deployer.Create(ctx, claim("inner"), metav1.CreateOptions{})
		expectRefused(err)
		_, err = deployer.Create(ctx, claim("inner"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		expectRefused(err)
		_, err = deployer.Apply(ctx, appstudioapply.DeploymentTargetClaim("inner", provisioned).WithSpec(
			appstudioapply.DeploymentTargetClaimSpec().WithDeploymentTargetClassName(appstudiov1alpha1.DeploymentTargetClassName(class))),
			metav1.ApplyOptions{FieldManager: "tenant"})
		expectRefused(err)
		Consistently(func(g Gomega, ctx context.Context) {
			list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: appstudiov1alpha1.LabelProvisionedClaimNamespace + "=" + provisioned})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(BeEmpty(), "a namespace made for a claim in the provisioned namespace")
		}).WithContext(ctx).WithTimeout(2 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
