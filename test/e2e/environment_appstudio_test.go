//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The Environment controller: an appstudio Environment that points at a cluster gets a
// GitOpsDeploymentManagedEnvironment managed-environment-<environment>.
var _ = Describe("Environment (appstudio)", Ordered, func() {
	// The clusters named here are never reached: the specs look at what the controller writes,
	// not at whether the ManagedEnvironment connects (the ManagedEnvironment specs do that).
	const apiURL = "https://127.0.0.1:9"
	var ns string

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-appenv-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
	})

	environments := func() interface {
		Create(context.Context, *appstudiov1alpha1.Environment, metav1.CreateOptions) (*appstudiov1alpha1.Environment, error)
		Get(context.Context, string, metav1.GetOptions) (*appstudiov1alpha1.Environment, error)
		Update(context.Context, *appstudiov1alpha1.Environment, metav1.UpdateOptions) (*appstudiov1alpha1.Environment, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
	} {
		return gitops.AppStudioV1alpha1().Environments(ns)
	}
	newEnvironment := func(name string) *appstudiov1alpha1.Environment {
		return &appstudiov1alpha1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.EnvironmentSpec{
				DisplayName: name, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyAppStudioAutomated,
			},
		}
	}
	withCredentials := func(env *appstudiov1alpha1.Environment, secret string) *appstudiov1alpha1.Environment {
		env.Spec.UnstableConfigurationFields = &appstudiov1alpha1.UnstableEnvironmentConfiguration{
			KubernetesClusterCredentials: appstudiov1alpha1.KubernetesClusterCredentials{
				TargetNamespace: "target", APIURL: apiURL, ClusterCredentialsSecret: secret,
				AllowInsecureSkipTLSVerify: true, Namespaces: []string{"target"},
			},
		}
		return env
	}
	withClaim := func(env *appstudiov1alpha1.Environment, claim string) *appstudiov1alpha1.Environment {
		env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = claim
		return env
	}
	create := func(ctx context.Context, env *appstudiov1alpha1.Environment) *appstudiov1alpha1.Environment {
		GinkgoHelper()
		created, err := environments().Create(ctx, env, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = environments().Delete(ctx, env.Name, metav1.DeleteOptions{})
		})
		return created
	}
	managedEnvironment := func(ctx context.Context, env string) (*managedv1alpha1.GitOpsDeploymentManagedEnvironment, error) {
		return gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Get(ctx, "managed-environment-"+env, metav1.GetOptions{})
	}
	waitManagedEnvironment := func(ctx context.Context, env string, spec gomegatypes.GomegaMatcher) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
		GinkgoHelper()
		var me *managedv1alpha1.GitOpsDeploymentManagedEnvironment
		Eventually(func(g Gomega, ctx context.Context) {
			var err error
			me, err = managedEnvironment(ctx, env)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(me.Spec).To(spec)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return me
	}
	// waitConditions waits for the Reconciled condition to have the status, reason and message
	// given, and for ErrorOccurred to say the opposite.
	waitConditions := func(ctx context.Context, env string, reconciled metav1.ConditionStatus, reason, message string) {
		GinkgoHelper()
		errorOccurred, errorReason := metav1.ConditionTrue, "ErrorOccurred"
		if reconciled == metav1.ConditionTrue {
			errorOccurred, errorReason = metav1.ConditionFalse, "ErrorOccurredResolved"
		}
		Eventually(func(g Gomega, ctx context.Context) {
			e, err := environments().Get(ctx, env, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(e.Status.Conditions, "Reconciled")
			g.Expect(c).NotTo(BeNil(), "no Reconciled condition yet")
			g.Expect(*c).To(And(HaveField("Status", reconciled), HaveField("Reason", reason), HaveField("Message", message)))
			c = meta.FindStatusCondition(e.Status.Conditions, "ErrorOccurred")
			g.Expect(c).NotTo(BeNil(), "no ErrorOccurred condition")
			g.Expect(*c).To(And(HaveField("Status", errorOccurred), HaveField("Reason", errorReason), HaveField("Message", message)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	expectNoManagedEnvironment := func(ctx context.Context, env string) {
		GinkgoHelper()
		Eventually(func(ctx context.Context) bool {
			_, err := managedEnvironment(ctx, env)
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "managed-environment-%s", env)
	}
	kubeconfigSecret := map[string]string{"kubeconfig": kubeconfigYAML(apiURL, "not-a-token", nil)}

	It("makes the ManagedEnvironment from kubernetesCredentials, reports a missing Secret until it appears, and deletes it with the Environment", func(ctx context.Context) {
		env := create(ctx, withCredentials(newEnvironment("staging"), "staging-creds"))

		By("reporting the missing Secret")
		msg := "the secret staging-creds referenced by the Environment resource was not found"
		waitConditions(ctx, "staging", metav1.ConditionFalse, "SecretNotFound", msg)
		Consistently(func(ctx context.Context) bool {
			_, err := managedEnvironment(ctx, "staging")
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2*time.Second).Should(BeTrue(), "no ManagedEnvironment without its Secret")

		By("making the ManagedEnvironment once the Secret appears, and marking the problem resolved")
		createSecret(ctx, ns, "staging-creds", managedv1alpha1.ManagedEnvironmentSecretType, kubeconfigSecret)
		me := waitManagedEnvironment(ctx, "staging", Equal(managedv1alpha1.ManagedEnvironmentSpec{
			APIURL: apiURL, ClusterCredentialsSecret: "staging-creds", AllowInsecureSkipTLSVerify: true, Namespaces: []string{"target"},
		}))
		Expect(me.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
			APIVersion: "managed-gitops.redhat.com/v1alpha1", Kind: "Environment", Name: "staging", UID: env.UID,
		}))
		waitConditions(ctx, "staging", metav1.ConditionTrue, "SecretNotFoundResolved", "")

		By("following a change of the Environment")
		Eventually(func(ctx context.Context) error {
			e, err := environments().Get(ctx, "staging", metav1.GetOptions{})
			if err != nil {
				return err
			}
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.ClusterResources = true
			e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.AllowInsecureSkipTLSVerify = false
			_, err = environments().Update(ctx, e, metav1.UpdateOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		waitManagedEnvironment(ctx, "staging", And(HaveField("ClusterResources", true), HaveField("AllowInsecureSkipTLSVerify", false)))

		By("recording Events on the Environment, which kubectl describe shows")
		Eventually(func() string {
			return must("admin", "describe", "environment", "staging", "-n", ns)
		}).WithTimeout(30 * time.Second).Should(And(
			MatchRegexp(`Warning\s+SecretNotFound\s+.*gitops-service-agent\s+`+msg),
			MatchRegexp(`Normal\s+ManagedEnvironmentCreated\s+.*Created GitOpsDeploymentManagedEnvironment managed-environment-staging`),
			MatchRegexp(`Normal\s+ManagedEnvironmentUpdated\s+`),
		))

		By("deleting the ManagedEnvironment with the Environment")
		Expect(environments().Delete(ctx, "staging", metav1.DeleteOptions{})).To(Succeed())
		expectNoManagedEnvironment(ctx, "staging")
	})

	It("writes no condition when nothing was ever wrong", func(ctx context.Context) {
		createSecret(ctx, ns, "quiet-creds", managedv1alpha1.ManagedEnvironmentSecretType, kubeconfigSecret)
		create(ctx, withCredentials(newEnvironment("quiet"), "quiet-creds"))
		waitManagedEnvironment(ctx, "quiet", HaveField("ClusterCredentialsSecret", "quiet-creds"))
		Consistently(func(ctx context.Context) ([]metav1.Condition, error) {
			e, err := environments().Get(ctx, "quiet", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return e.Status.Conditions, nil
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(BeEmpty())
	})

	It("refuses a DeploymentTargetClaim and credentials together (InvalidEnvironment is left for objects stored before)", func(ctx context.Context) {
		_, err := environments().Create(ctx, withClaim(withCredentials(newEnvironment("both"), "creds"), "claim"), metav1.CreateOptions{})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("cannot have both a DeploymentTargetClaim"))
	})

	It("reports a missing DeploymentTargetClaim, waits for its binding, and copies the bound DeploymentTarget's Opaque Secret", func(ctx context.Context) {
		env := create(ctx, withClaim(newEnvironment("claimed"), "claimed-claim"))
		waitConditions(ctx, "claimed", metav1.ConditionFalse, "DeploymentTargetClaimNotFound",
			"DeploymentTargetClaim not found while generating the desired Environment resource")

		By("waiting, with no problem, while the claim is not Bound")
		class := appstudiov1alpha1.DeploymentTargetClassName(ns + "-spaces")
		_, err := gitops.AppStudioV1alpha1().DeploymentTargetClasses().Create(ctx, &appstudiov1alpha1.DeploymentTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: string(class)},
			Spec:       appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: "example.com/spaces", ReclaimPolicy: appstudiov1alpha1.ReclaimPolicyRetain},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = gitops.AppStudioV1alpha1().DeploymentTargetClasses().Delete(ctx, string(class), metav1.DeleteOptions{})
		})
		claims := gitops.AppStudioV1alpha1().DeploymentTargetClaims(ns)
		_, err = claims.Create(ctx, &appstudiov1alpha1.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "claimed-claim"},
			Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: class, TargetName: "claimed-target"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitConditions(ctx, "claimed", metav1.ConditionTrue, "DeploymentTargetClaimNotFoundResolved", "")
		expectNoManagedEnvironment(ctx, "claimed")

		By("the binder binding the claim to the target it names, whose Secret is Opaque, as a SpaceRequest's is")
		createSecret(ctx, ns, "space-secret", corev1.SecretTypeOpaque, map[string]string{"kubeconfig": "one"})
		_, err = gitops.AppStudioV1alpha1().DeploymentTargets(ns).Create(ctx, &appstudiov1alpha1.DeploymentTarget{
			ObjectMeta: metav1.ObjectMeta{Name: "claimed-target"},
			Spec: appstudiov1alpha1.DeploymentTargetSpec{
				DeploymentTargetClassName: class, ClaimRef: "claimed-claim",
				KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
					DefaultNamespace: "space", APIURL: apiURL, ClusterCredentialsSecret: "space-secret",
				},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		waitManagedEnvironment(ctx, "claimed", Equal(managedv1alpha1.ManagedEnvironmentSpec{
			APIURL: apiURL, ClusterCredentialsSecret: "managed-environment-secret-claimed", Namespaces: []string{"space"},
		}))
		copied, err := kube.CoreV1().Secrets(ns).Get(ctx, "managed-environment-secret-claimed", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(copied.Type).To(Equal(corev1.SecretType(managedv1alpha1.ManagedEnvironmentSecretType)))
		Expect(copied.Labels).To(HaveKeyWithValue("appstudio.openshift.io/environment-secret", "claimed"))
		Expect(string(copied.Data["kubeconfig"])).To(Equal("one"))
		Expect(copied.OwnerReferences).To(ConsistOf(And(
			HaveField("APIVersion", "appstudio.redhat.com/v1alpha1"), HaveField("Kind", "Environment"),
			HaveField("UID", env.UID), HaveField("Controller", HaveValue(BeTrue())))))

		By("keeping the copy in line with the Secret")
		source, err := kube.CoreV1().Secrets(ns).Get(ctx, "space-secret", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		source.Data["kubeconfig"] = []byte("two")
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, source, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(ctx context.Context) (string, error) {
			s, err := kube.CoreV1().Secrets(ns).Get(ctx, "managed-environment-secret-claimed", metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return string(s.Data["kubeconfig"]), nil
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Equal("two"))

		By("deleting ManagedEnvironment and copy with the Environment")
		Expect(environments().Delete(ctx, "claimed", metav1.DeleteOptions{})).To(Succeed())
		expectNoManagedEnvironment(ctx, "claimed")
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().Secrets(ns).Get(ctx, "managed-environment-secret-claimed", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "the copied Secret")
	})

	It("deletes the ManagedEnvironment of an Environment deleted while the agent was down", func(ctx context.Context) {
		createSecret(ctx, ns, "offline-creds", managedv1alpha1.ManagedEnvironmentSecretType, kubeconfigSecret)
		create(ctx, withCredentials(newEnvironment("offline"), "offline-creds"))
		waitManagedEnvironment(ctx, "offline", HaveField("ClusterCredentialsSecret", "offline-creds"))

		killStackProcess("agent")
		DeferCleanup(func() { // should the spec fail while the agent is down
			if syscall.Kill(stackPID("agent"), 0) != nil {
				startStackProcess("agent")
			}
		})
		Expect(environments().Delete(ctx, "offline", metav1.DeleteOptions{})).To(Succeed())
		Consistently(func(ctx context.Context) error {
			_, err := managedEnvironment(ctx, "offline")
			return err
		}).WithContext(ctx).WithTimeout(time.Second).Should(Succeed(), "nothing else deletes it")
		startStackProcess("agent")
		expectNoManagedEnvironment(ctx, "offline")
	})
})
