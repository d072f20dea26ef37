//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
)

// Self-service deployment targets (issue 21): claims bound by the binder to targets a user made
// or the namespace provisioner made for them, reclaimed by their class's policy.
var _ = Describe("DeploymentTargets", Ordered, func() {
	var ns, suffix string

	BeforeAll(func(ctx context.Context) {
		suffix = fmt.Sprintf("%d", time.Now().UnixNano()%100000)
		ns = "e2e-targets-" + suffix
		createNamespace(ctx, ns)
	})

	createClass := func(ctx context.Context, name string, provisioner appstudiov1alpha1.Provisioner, policy appstudiov1alpha1.ReclaimPolicy,
		params appstudiov1alpha1.DeploymentTargetParameters) string {
		GinkgoHelper()
		name += "-" + suffix
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: provisioner, ReclaimPolicy: policy, Parameters: params},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Delete(ctx, name, metav1.DeleteOptions{})
		})
		return name
	}
	createClaim := func(ctx context.Context, name, class, target string) {
		GinkgoHelper()
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Create(ctx, &appstudiov1alpha1.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{
				DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class), TargetName: target},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	claim := func(ctx context.Context, name string) (*appstudiov1alpha1.DeploymentTargetClaim, error) {
		return gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Get(ctx, name, metav1.GetOptions{})
	}
	target := func(ctx context.Context, name string) (*appstudiov1alpha1.DeploymentTarget, error) {
		return gitops.AppStudioV1alpha1().DeploymentTargets(ns).Get(ctx, name, metav1.GetOptions{})
	}
	// waitBound waits for the claim to be bound and returns its target.
	waitBound := func(ctx context.Context, name string) *appstudiov1alpha1.DeploymentTarget {
		GinkgoHelper()
		var t *appstudiov1alpha1.DeploymentTarget
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := claim(ctx, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetClaimPhaseBound))
			g.Expect(c.Annotations).To(HaveKeyWithValue(appstudiov1alpha1.AnnBindCompleted, "true"))
			g.Expect(c.Spec.TargetName).NotTo(BeEmpty())
			t, err = target(ctx, c.Spec.TargetName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Spec.ClaimRef).To(Equal(name))
			g.Expect(t.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetPhaseBound))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return t
	}
	// waitProblem waits for the claim's ErrorOccurred condition to say message.
	waitProblem := func(ctx context.Context, name string, message types.GomegaMatcher) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := claim(ctx, name)
			g.Expect(err).NotTo(HaveOccurred())
			cond := meta.FindStatusCondition(c.Status.Conditions, appstudiov1alpha1.DeploymentTargetConditionErrorOccurred)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Message).To(message)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	createUserTarget := func(ctx context.Context, name, class string) {
		GinkgoHelper()
		createSecret(ctx, ns, name+"-creds", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML("https://127.0.0.1:9", "not-a-token", nil)})
		_, err := gitops.AppStudioV1alpha1().DeploymentTargets(ns).Create(ctx, &appstudiov1alpha1.DeploymentTarget{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.DeploymentTargetSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class),
				KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
					DefaultNamespace: "target", APIURL: "https://127.0.0.1:9", ClusterCredentialsSecret: name + "-creds"}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	It("provisions a namespace for a claim, deploys into it through an Environment, confines the credentials to it, and removes it all with the claim", func(ctx context.Context) {
		class := createClass(ctx, "preview", appstudiov1alpha1.ProvisionerNamespace, appstudiov1alpha1.ReclaimPolicyDelete,
			appstudiov1alpha1.DeploymentTargetParameters{Namespace: &appstudiov1alpha1.NamespaceProvisionerParameters{
				TokenExpiration: &metav1.Duration{Duration: time.Hour}}})
		createClaim(ctx, "preview", class, "")

		By("binding the claim to the target provisioned for it")
		dt := waitBound(ctx, "preview")
		Expect(dt.Annotations).To(HaveKeyWithValue(appstudiov1alpha1.AnnDynamicallyProvisioned, string(appstudiov1alpha1.ProvisionerNamespace)))
		provisioned := dt.Spec.KubernetesClusterCredentials.DefaultNamespace
		Expect(kube.CoreV1().Namespaces().Get(ctx, provisioned, metav1.GetOptions{})).Error().NotTo(HaveOccurred())
		secret, err := kube.CoreV1().Secrets(ns).Get(ctx, dt.Spec.KubernetesClusterCredentials.ClusterCredentialsSecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(secret.Type).To(BeEquivalentTo(managedv1alpha1.ManagedEnvironmentSecretType))

		By("confining the provisioned credentials to the provisioned namespace")
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[managedv1alpha1.ManagedEnvironmentSecretKubeconfigKey])
		Expect(err).NotTo(HaveOccurred())
		provisionedClient := kubernetes.NewForConfigOrDie(cfg)
		_, err = provisionedClient.CoreV1().ConfigMaps(provisioned).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred(), "the credentials may edit their namespace")
		for _, other := range []string{ns, "default", "kube-system", "gitops-service-argocd"} {
			_, err = provisionedClient.CoreV1().ConfigMaps(other).List(ctx, metav1.ListOptions{})
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing ConfigMaps of %s: %v", other, err)
		}
		_, err = provisionedClient.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing namespaces: %v", err)
		_, err = provisionedClient.RbacV1().RoleBindings(provisioned).List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "edit has no right over RBAC, even in its namespace: %v", err)

		By("deploying a component into the namespace through an Environment that references the claim")
		dir := GinkgoT().TempDir()
		repoURL := "file://" + gitRepository(dir, map[string]string{"components/web/overlays/preview/cm.yaml": configMap("web-preview", "v1")})
		commit := gitIn(dir, "rev-parse", "HEAD")
		studio := gitops.AppStudioV1alpha1()
		_, err = studio.Applications(ns).Create(ctx, &appstudiov1alpha1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: "Shop"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		env := &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "preview"},
			Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: "Preview", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual}}
		env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "preview"
		_, err = studio.Environments(ns).Create(ctx, env, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			me, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Get(ctx, "managed-environment-preview", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(me.Spec.ClusterCredentialsSecret).To(Equal(secret.Name))
			cond := meta.FindStatusCondition(me.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		_, err = studio.SnapshotEnvironmentBindings(ns).Create(ctx, &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "shop-preview"},
			Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "shop", Environment: "preview", Snapshot: "snap",
				Components: []appstudiov1alpha1.BindingComponent{{Name: "web"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := studio.SnapshotEnvironmentBindings(ns).Get(ctx, "shop-preview", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			b.Status.Components = []appstudiov1alpha1.BindingComponentStatus{{Name: "web",
				GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{URL: repoURL, Branch: commit,
					Path: "components/web/overlays/preview", GeneratedResources: []string{"cm.yaml"}, CommitID: commit}}}
			meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
				Status: metav1.ConditionTrue, Reason: "GenerateSuccess", ObservedGeneration: b.Generation})
			_, err = studio.SnapshotEnvironmentBindings(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		expectDeployed(ctx, ns, "shop-preview", snapshotenvironmentbinding.DeploymentName("shop-preview", "shop", "preview", "web"))
		Expect(configMapValueIn(ctx, provisioned, "web-preview")).To(Equal("v1"))

		By("removing the deployment, then the claim: Delete removes the namespace, target, ServiceAccount and Secret")
		Expect(studio.SnapshotEnvironmentBindings(ns).Delete(ctx, "shop-preview", metav1.DeleteOptions{})).To(Succeed())
		deleteAllDeployments(ctx, ns)
		Expect(studio.Environments(ns).Delete(ctx, "preview", metav1.DeleteOptions{})).To(Succeed())
		Expect(studio.DeploymentTargetClaims(ns).Delete(ctx, "preview", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			_, err := claim(ctx, "preview")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim: %v", err)
			_, err = target(ctx, dt.Name)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "target: %v", err)
			_, err = kube.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret: %v", err)
			_, err = kube.CoreV1().Namespaces().Get(ctx, provisioned, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace: %v", err)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("with Retain releases a provisioned target when its claim goes, and a second claim binds it", func(ctx context.Context) {
		class := createClass(ctx, "kept", appstudiov1alpha1.ProvisionerNamespace, appstudiov1alpha1.ReclaimPolicyRetain,
			appstudiov1alpha1.DeploymentTargetParameters{})
		createClaim(ctx, "first", class, "")
		dt := waitBound(ctx, "first")
		Expect(gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns).Delete(ctx, "first", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			t, err := target(ctx, dt.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(t.Spec.ClaimRef).To(BeEmpty())
			g.Expect(t.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetPhaseReleased))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		createClaim(ctx, "second", class, "")
		Expect(waitBound(ctx, "second").Name).To(Equal(dt.Name))
		Expect(kube.CoreV1().Namespaces().Get(ctx, dt.Spec.KubernetesClusterCredentials.DefaultNamespace, metav1.GetOptions{})).Error().NotTo(HaveOccurred())
	})

	It("binds a user's targets by name and by best match, and reports conflicts, a lost target and a missing class", func(ctx context.Context) {
		class := createClass(ctx, "manual", "example.com/manual", appstudiov1alpha1.ReclaimPolicyRetain, appstudiov1alpha1.DeploymentTargetParameters{})
		createUserTarget(ctx, "dt-a", class)
		createUserTarget(ctx, "dt-b", class)

		By("binding an explicit claim to the target it names")
		createClaim(ctx, "by-name", class, "dt-b")
		Expect(waitBound(ctx, "by-name").Name).To(Equal("dt-b"))

		By("binding a claim without a name to the best match")
		createClaim(ctx, "by-match", class, "")
		Expect(waitBound(ctx, "by-match").Name).To(Equal("dt-a"))
		c, err := claim(ctx, "by-match")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Annotations).To(HaveKeyWithValue(appstudiov1alpha1.AnnBoundByController, "true"))

		By("reporting a claim of a target another claim holds")
		createClaim(ctx, "conflict", class, "dt-a")
		waitProblem(ctx, "conflict", Equal("DeploymentTargetClaim wants to claim a DeploymentTarget that is already claimed"))

		By("reporting a claim of a class that does not exist")
		createClaim(ctx, "no-class", "missing-"+suffix, "")
		waitProblem(ctx, "no-class", ContainSubstring("does not have a matching DeploymentTargetClass missing-"+suffix))

		By("marking a bound claim Lost when its target is deleted")
		Expect(gitops.AppStudioV1alpha1().DeploymentTargets(ns).Delete(ctx, "dt-b", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			c, err := claim(ctx, "by-name")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Status.Phase).To(Equal(appstudiov1alpha1.DeploymentTargetClaimPhaseLost))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		waitProblem(ctx, "by-name", ContainSubstring("DeploymentTarget not found for a bounded DeploymentTargetClaim by-name"))
	})
})
