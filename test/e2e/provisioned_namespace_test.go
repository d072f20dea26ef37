//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/namespaceprovisioner"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
)

// The tenant-facing half of issue 32: a provisioned namespace carries its class's policy, a
// tenant's claims are limited at admission, and neither a hand-written target nor a relabel
// gets around the provisioner.
var _ = Describe("Provisioned namespaces", Ordered, func() {
	var ns, other, suffix string
	// tenant is alice, admin of ns and other, acting with her own token.
	var tenant versioned.Interface

	BeforeAll(func(ctx context.Context) {
		suffix = fmt.Sprintf("%d", time.Now().UnixNano()%100000)
		ns, other = "e2e-pns-"+suffix, "e2e-pns-other-"+suffix
		for _, n := range []string{ns, other} {
			createNamespace(ctx, n)
			_, err := kube.RbacV1().RoleBindings(n).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "alice-admin"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig("alice"))
		Expect(err).NotTo(HaveOccurred())
		tenant = versioned.NewForConfigOrDie(cfg)
	})

	createClass := func(ctx context.Context, name string, policy appstudiov1alpha1.ReclaimPolicy, params *appstudiov1alpha1.NamespaceProvisionerParameters) string {
		GinkgoHelper()
		name += "-" + suffix
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: appstudiov1alpha1.ProvisionerNamespace, ReclaimPolicy: policy,
				Parameters: appstudiov1alpha1.DeploymentTargetParameters{Namespace: params}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Delete(ctx, name, metav1.DeleteOptions{})
		})
		return name
	}
	newClaim := func(name, class string) *appstudiov1alpha1.DeploymentTargetClaim {
		return &appstudiov1alpha1.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)}}
	}
	// claimAs creates a claim in namespace with the tenant's token.
	claimAs := func(ctx context.Context, namespace, name, class string) error {
		_, err := tenant.AppStudioV1alpha1().DeploymentTargetClaims(namespace).Create(ctx, newClaim(name, class), metav1.CreateOptions{})
		return err
	}
	// waitBound waits for the claim to be bound and returns its target.
	waitBound := func(ctx context.Context, namespace, name string) *appstudiov1alpha1.DeploymentTarget {
		GinkgoHelper()
		var t *appstudiov1alpha1.DeploymentTarget
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(namespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetClaimPhaseBound))
			t, err = gitops.AppStudioV1alpha1().DeploymentTargets(namespace).Get(ctx, c.Spec.TargetName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetPhaseBound))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return t
	}

	It("gives a provisioned namespace its class's Pod Security level, quota, limits and NetworkPolicy, and Pod Security refuses a hostPath pod of the tenant", func(ctx context.Context) {
		class := createClass(ctx, "safe", appstudiov1alpha1.ReclaimPolicyDelete, nil)
		Expect(claimAs(ctx, ns, "safe", class)).To(Succeed())
		dt := waitBound(ctx, ns, "safe")
		provisioned := dt.Spec.KubernetesClusterCredentials.DefaultNamespace

		n, err := kube.CoreV1().Namespaces().Get(ctx, provisioned, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, l := range []string{"enforce", "audit", "warn"} {
			Expect(n.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/"+l, "restricted"))
		}
		Expect(n.Annotations).To(HaveKeyWithValue(namespaceprovisioner.AnnTargetUID, string(dt.UID)))
		Eventually(func(g Gomega, ctx context.Context) {
			q, err := kube.CoreV1().ResourceQuotas(provisioned).Get(ctx, namespaceprovisioner.ResourceQuotaName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(q.Spec.Hard).To(HaveKey(corev1.ResourceName("requests.cpu")))
			_, err = kube.CoreV1().LimitRanges(provisioned).Get(ctx, namespaceprovisioner.LimitRangeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			np, err := kube.NetworkingV1().NetworkPolicies(provisioned).Get(ctx, namespaceprovisioner.NetworkPolicyName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(np.Spec.PodSelector.Size()).To(BeZero(), "every pod of the namespace")
			g.Expect(np.Spec.Ingress).To(HaveLen(1), "from the namespace's own pods only")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("creating a hostPath pod with the provisioned credentials: Pod Security refuses it")
		secret, err := kube.CoreV1().Secrets(ns).Get(ctx, dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		deployer := kubernetes.NewForConfigOrDie(cfg)
		_, err = deployer.CoreV1().Pods(provisioned).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "host"},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}}},
				Volumes: []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
			},
		}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a hostPath pod: %v", err)
		Expect(err.Error()).To(ContainSubstring("violates PodSecurity"))
		Expect(err.Error()).To(ContainSubstring("hostPath"))
	})

	It("refuses a claim over the namespace's limit at admission, with no namespace made, and keeps provisioning other tenants", func(ctx context.Context) {
		class := createClass(ctx, "limited", appstudiov1alpha1.ReclaimPolicyDelete,
			&appstudiov1alpha1.NamespaceProvisionerParameters{MaxClaimsPerNamespace: ptr.To[int32](2)})
		Expect(claimAs(ctx, ns, "l1", class)).To(Succeed())
		// The namespace already holds the claim of the spec above: that is its second.
		err := claimAs(ctx, ns, "l2", class)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the claim over the limit: %v", err)
		Expect(err.Error()).To(ContainSubstring("already holds 2 DeploymentTargetClaims"))
		Expect(err.Error()).To(ContainSubstring("maxClaimsPerNamespace"))
		_, err = gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(ctx, "l2", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the refused claim: %v", err)
		waitBound(ctx, ns, "l1")
		Consistently(func(g Gomega, ctx context.Context) {
			list, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: namespaceprovisioner.LabelClaimNamespace + "=" + ns})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(2), "the namespaces of the two admitted claims only")
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("another namespace of the tenant keeps its own count, and is provisioned")
		Expect(claimAs(ctx, other, "o1", class)).To(Succeed())
		waitBound(ctx, other, "o1")

		By("deleting a claim frees its place")
		Expect(tenant.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, "l1", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() error { return claimAs(ctx, ns, "l2", class) }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(time.Second).Should(Succeed())
		waitBound(ctx, ns, "l2")
		for _, c := range []string{"safe", "l2"} {
			Expect(gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, c, metav1.DeleteOptions{})).To(Succeed())
		}
	})

	It("does not let a hand-written target re-take or delete a retained namespace", func(ctx context.Context) {
		kept := createClass(ctx, "kept", appstudiov1alpha1.ReclaimPolicyRetain, nil)
		deleting := createClass(ctx, "deleting", appstudiov1alpha1.ReclaimPolicyDelete, nil)
		Expect(claimAs(ctx, other, "kept", kept)).To(Succeed())
		dt := waitBound(ctx, other, "kept")
		provisioned := dt.Spec.KubernetesClusterCredentials.DefaultNamespace
		secretName := dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret

		By("deleting the claim, then the target: Retain keeps the namespace and the Secret, labelled retained")
		Expect(tenant.AppStudioV1alpha1().DeploymentTargetClaims(other).Delete(ctx, "kept", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			t, err := gitops.AppStudioV1alpha1().DeploymentTargets(other).Get(ctx, dt.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetPhaseReleased))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(tenant.AppStudioV1alpha1().DeploymentTargets(other).Delete(ctx, dt.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			_, err := gitops.AppStudioV1alpha1().DeploymentTargets(other).Get(ctx, dt.Name, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "target: %v", err)
			n, err := kube.CoreV1().Namespaces().Get(ctx, provisioned, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Labels).To(HaveKeyWithValue(namespaceprovisioner.LabelRetained, "true"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		before, err := kube.CoreV1().Secrets(other).Get(ctx, secretName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(before.Labels).To(HaveKeyWithValue(namespaceprovisioner.LabelRetained, "true"))

		By("writing, as the tenant, a target of the same name that carries everything the provisioner's did, of a Delete class")
		forged := dt.DeepCopy()
		forged.ObjectMeta = metav1.ObjectMeta{Name: dt.Name, Namespace: other, Labels: dt.Labels, Annotations: dt.Annotations,
			Finalizers: []string{namespaceprovisioner.Finalizer}}
		forged.Spec = appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(deleting),
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: "nowhere", APIURL: "https://127.0.0.1:9", ClusterCredentialsSecret: "none"}}
		forged.Status = appstudiov1alpha1.DeploymentTargetStatus{}
		_, err = tenant.AppStudioV1alpha1().DeploymentTargets(other).Create(ctx, forged, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Consistently(func(g Gomega, ctx context.Context) {
			t, err := gitops.AppStudioV1alpha1().DeploymentTargets(other).Get(ctx, dt.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Spec.KubernetesClusterCredentials.DefaultNamespace).To(Equal("nowhere"), "the provisioner gave it the retained namespace")
			s, err := kube.CoreV1().Secrets(other).Get(ctx, secretName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Labels).To(HaveKeyWithValue(namespaceprovisioner.LabelRetained, "true"))
			g.Expect(s.ResourceVersion).To(Equal(before.ResourceVersion), "the retained credentials were written again")
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("deleting the hand-written target: it goes, the retained namespace stays")
		Expect(tenant.AppStudioV1alpha1().DeploymentTargets(other).Delete(ctx, dt.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := gitops.AppStudioV1alpha1().DeploymentTargets(other).Get(ctx, dt.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
		Consistently(func(g Gomega, ctx context.Context) {
			n, err := kube.CoreV1().Namespaces().Get(ctx, provisioned, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.DeletionTimestamp).To(BeNil())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(kube.CoreV1().Namespaces().Delete(ctx, provisioned, metav1.DeleteOptions{})).To(Succeed())
	})

	It("applies the class's ttl to the claim whatever the tenant writes in the target's claim-uid label", func(ctx context.Context) {
		class := createClass(ctx, "short", appstudiov1alpha1.ReclaimPolicyDelete,
			&appstudiov1alpha1.NamespaceProvisionerParameters{TTL: &metav1.Duration{Duration: time.Minute}})
		Expect(claimAs(ctx, other, "short", class)).To(Succeed())
		dt := waitBound(ctx, other, "short")
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"not-the-claim"}}}`, namespaceprovisioner.LabelClaimUID)
		_, err := tenant.AppStudioV1alpha1().DeploymentTargets(other).Patch(ctx, dt.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			t, err := gitops.AppStudioV1alpha1().DeploymentTargets(other).Get(ctx, dt.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return // expired already
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Labels).To(HaveKeyWithValue(namespaceprovisioner.LabelClaimUID, dt.Labels[namespaceprovisioner.LabelClaimUID]))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func() bool {
			_, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(other).Get(ctx, "short", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the claim outlived its ttl")
	})
})
