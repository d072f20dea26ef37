//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
)

// The Dev Sandbox provisioner (reference §3.11): the spec installs a SpaceRequest
// CustomResourceDefinition, plays the Dev Sandbox operator (it makes the namespace and the
// credentials, and writes the SpaceRequest's status), and removes the CRD at its end, so that
// the rest of the suite still runs on a cluster that does not serve the API. The provisioner
// looks for the API at most once a minute: the spec may wait that long for its first
// SpaceRequest.
var _ = Describe("Dev Sandbox provisioner (SpaceRequest)", Ordered, func() {
	var ns, suffix, class, space string
	var dyn dynamic.Interface

	BeforeAll(func(ctx context.Context) {
		suffix = fmt.Sprintf("%d", time.Now().UnixNano()%100000)
		ns = "e2e-sandbox-" + suffix
		space = ns + "-space"
		createNamespace(ctx, ns)
		dyn = dynamic.NewForConfigOrDie(adminConfig)

		crd, err := filepath.Abs("testdata/spacerequest-crd.yaml")
		Expect(err).NotTo(HaveOccurred())
		must("admin", "apply", "-f", crd)
		DeferCleanup(func() {
			// The rest of the suite runs on a cluster that does not serve the API again.
			_, _, _ = run("admin", "", "delete", "-f", crd, "--wait=true", "--timeout=60s")
		})
		must("admin", "wait", "--for=condition=Established", "--timeout=60s", "crd/spacerequests.toolchain.dev.openshift.com")

		class = "sandbox-" + suffix
		_, err = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: appstudiov1alpha1.ProvisionerDevSandbox,
				ReclaimPolicy: appstudiov1alpha1.ReclaimPolicyDelete},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Delete(ctx, class, metav1.DeleteOptions{})
			_ = kube.CoreV1().Namespaces().Delete(ctx, space, metav1.DeleteOptions{})
		})
	})

	spaceRequests := func() dynamic.ResourceInterface { return dyn.Resource(spacerequest.Resource).Namespace(ns) }

	It("requests a space for a claim, binds the target made from it, connects an Environment to it, and deletes the SpaceRequest with the claim", func(ctx context.Context) {
		started := time.Now()
		const claimName = "sandbox"
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(ctx, &appstudiov1alpha1.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claimName},
			Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("requesting a space: a SpaceRequest labelled for the claim (the API may take up to a minute to be noticed)")
		var sr *unstructured.Unstructured
		Eventually(func(g Gomega, ctx context.Context) {
			list, err := spaceRequests().List(ctx, metav1.ListOptions{LabelSelector: spacerequest.LabelClaim + "=" + claimName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(1))
			sr = &list.Items[0]
		}).WithContext(ctx).WithTimeout(150 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(sr.GetGenerateName()).To(Equal(claimName + "-"))
		Expect(spacerequest.TierName(sr)).To(Equal("appstudio-env"))
		GinkgoWriter.Printf("SpaceRequest %s after %s\n", sr.GetName(), time.Since(started))
		Consistently(func(ctx context.Context) ([]unstructured.Unstructured, error) {
			list, err := spaceRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return list.Items, nil
		}).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(250*time.Millisecond).Should(HaveLen(1), "one SpaceRequest per claim")

		By("playing the Dev Sandbox operator: a namespace, a ServiceAccount that may edit it, an Opaque Secret with its kubeconfig, and the status")
		createNamespace(ctx, space)
		_, err = kube.CoreV1().ServiceAccounts(space).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "namespace-manager"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = kube.RbacV1().RoleBindings(space).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "namespace-manager"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "namespace-manager", Namespace: space}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		tr, err := kube.CoreV1().ServiceAccounts(space).CreateToken(ctx, "namespace-manager", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		ca := adminConfig.CAData
		if len(ca) == 0 && adminConfig.CAFile != "" {
			ca, err = os.ReadFile(adminConfig.CAFile)
			Expect(err).NotTo(HaveOccurred())
		}
		secretName := sr.GetName() + "-" + space
		createSecret(ctx, ns, secretName, corev1.SecretTypeOpaque,
			map[string]string{"kubeconfig": kubeconfigYAML(adminConfig.Host, tr.Status.Token, ca)})
		Eventually(func(g Gomega, ctx context.Context) {
			cur, err := spaceRequests().Get(ctx, sr.GetName(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			cur.Object["status"] = map[string]interface{}{
				"targetClusterURL": adminConfig.Host,
				"namespaceAccess":  []interface{}{map[string]interface{}{"name": space, "secretRef": secretName}},
				"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": "True", "reason": "Provisioned",
					"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
			}
			_, err = spaceRequests().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("making the DeploymentTarget <claim>-dt from the SpaceRequest, which the binder binds to the claim")
		dtName := devsandboxprovisioner.TargetName(claimName)
		var dt *appstudiov1alpha1.DeploymentTarget
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetClaimPhaseBound))
			g.Expect(c.Spec.TargetName).To(Equal(dtName))
			dt, err = gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(ctx, dtName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dt.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetPhaseBound))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(dt.Spec).To(Equal(appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class), ClaimRef: claimName,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: space, APIURL: adminConfig.Host, ClusterCredentialsSecret: secretName}}))
		Expect(dt.Annotations).To(HaveKeyWithValue(appstudiov1alpha1.AnnDynamicallyProvisioned, "appstudio.redhat.com/devsandbox"))
		Expect(dt.Finalizers).To(ContainElement(devsandboxprovisioner.Finalizer))
		Eventually(func(ctx context.Context) (map[string]string, error) {
			cur, err := spaceRequests().Get(ctx, sr.GetName(), metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return cur.GetLabels(), nil
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(HaveKeyWithValue(spacerequest.LabelTarget, dtName))
		GinkgoWriter.Printf("claim bound after %s\n", time.Since(started))

		By("an Environment through the claim getting a ManagedEnvironment of the space, with a managed-environment copy of the Opaque Secret")
		env := &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "sandbox"},
			Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: "Sandbox", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual}}
		env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = claimName
		_, err = gitops.AppStudioV1alpha1().Environments(ns).Create(ctx, env, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			me, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Get(ctx, "managed-environment-sandbox", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(me.Spec.APIURL).To(Equal(adminConfig.Host))
			g.Expect(me.Spec.Namespaces).To(Equal([]string{space}))
			g.Expect(me.Spec.ClusterCredentialsSecret).To(Equal("managed-environment-secret-sandbox"))
			cond := meta.FindStatusCondition(me.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(gitops.AppStudioV1alpha1().Environments(ns).Delete(ctx, "sandbox", metav1.DeleteOptions{})).To(Succeed())

		By("deleting the claim: the target goes, and its SpaceRequest is deleted with the operator's finalizer")
		Expect(gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, claimName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			cur, err := spaceRequests().Get(ctx, sr.GetName(), metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cur.GetDeletionTimestamp()).NotTo(BeNil())
			g.Expect(cur.GetFinalizers()).To(ContainElement(spacerequest.Finalizer))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Consistently(func(ctx context.Context) error {
			_, err := gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(ctx, dtName, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(2*time.Second).Should(Succeed(), "the target waits for its SpaceRequest")

		By("the operator removing its finalizer once the space is gone: then the target goes")
		Expect(kube.CoreV1().Namespaces().Delete(ctx, space, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			cur, err := spaceRequests().Get(ctx, sr.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == spacerequest.Finalizer }))
			_, err = spaceRequests().Update(ctx, cur, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			_, err := spaceRequests().Get(ctx, sr.GetName(), metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "SpaceRequest: %v", err)
			_, err = gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(ctx, dtName, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "target: %v", err)
			_, err = gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim: %v", err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("done after %s\n", time.Since(started))
	})

	It("deletes the SpaceRequest of a claim deleted before its space was ready (Delete class)", func(ctx context.Context) {
		const claimName = "short-lived"
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(ctx, &appstudiov1alpha1.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claimName},
			Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		selector := metav1.ListOptions{LabelSelector: spacerequest.LabelClaim + "=" + claimName}
		Eventually(func(ctx context.Context) (int, error) {
			list, err := spaceRequests().List(ctx, selector)
			if err != nil {
				return 0, err
			}
			return len(list.Items), nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Equal(1))
		Expect(gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, claimName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) (int, error) {
			list, err := spaceRequests().List(ctx, selector)
			if err != nil {
				return 0, err
			}
			return len(list.Items), nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Equal(0))
	})
})
