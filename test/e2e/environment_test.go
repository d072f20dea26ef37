//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	managedtyped "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/managedgitops/v1alpha1"
)

// GitOpsDeploymentManagedEnvironments against the stack's second kube-apiserver, which plays a
// remote cluster (hack/local-up.sh, GITOPS_LOCAL_REMOTE_CLUSTER).
var _ = Describe("ManagedEnvironment", Ordered, func() {
	var (
		argo         argoclient.Interface
		remote       kubernetes.Interface
		remoteConfig *rest.Config
		remoteURL    string
		repoURL      string
		// ns exists in both clusters: the tenant's namespace here, the target namespace there,
		// so a deployment that went to the wrong cluster would land in an existing namespace.
		ns string
		// deployerToken may do anything in ns on the remote cluster; nobodyToken nothing;
		// adminToken anything anywhere.
		deployerToken, nobodyToken, adminToken string
	)

	BeforeAll(func(ctx context.Context) {
		argo = argoclient.NewForConfigOrDie(adminConfig)
		var err error
		remoteConfig, err = clientcmd.BuildConfigFromFlags("", filepath.Join(stackDir, "remote.kubeconfig"))
		Expect(err).NotTo(HaveOccurred(), "the stack has no remote cluster: run it with GITOPS_LOCAL_REMOTE_CLUSTER=1")
		remote = kubernetes.NewForConfigOrDie(remoteConfig)
		remoteURL = remoteConfig.Host
		ns = fmt.Sprintf("e2e-env-%d", time.Now().UnixNano()%100000)
		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"env1/cm.yaml":           configMap("cm-remote-one", "one"),
			"env2/cm.yaml":           configMap("cm-remote-two", "two"),
			"cluster-wide/cm.yaml":   configMap("cm-remote-three", "three"),
			"cluster-wide/role.yaml": clusterRole(ns + "-role"),
		})
		createNamespace(ctx, ns)
		_, err = remote.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("making ServiceAccounts on the remote cluster: one with every right in the namespace, one with none, one cluster admin")
		for _, sa := range []string{"deployer", "nobody", "admin"} {
			_, err := remote.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = remote.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = remote.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "deployer"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = remote.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "admin", Namespace: ns}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			_ = remote.RbacV1().ClusterRoleBindings().Delete(ctx, ns+"-admin", metav1.DeleteOptions{})
		})
		token := func(sa string) string {
			tr, err := remote.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		deployerToken, nobodyToken, adminToken = token("deployer"), token("nobody"), token("admin")
	})

	envClient := func() managedtyped.GitOpsDeploymentManagedEnvironmentInterface {
		return gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns)
	}
	createEnvironment := func(ctx context.Context, name, secret, apiURL string, mutate func(*managedv1alpha1.ManagedEnvironmentSpec)) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
		GinkgoHelper()
		env := &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       managedv1alpha1.ManagedEnvironmentSpec{APIURL: apiURL, ClusterCredentialsSecret: secret},
		}
		if mutate != nil {
			mutate(&env.Spec)
		}
		created, err := envClient().Create(ctx, env, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return created
	}
	// waitCondition waits for the environment's ConnectionInitializationSucceeded condition to
	// have the status and reason given, and returns it.
	waitCondition := func(ctx context.Context, name string, status metav1.ConditionStatus, reason managedv1alpha1.ManagedEnvironmentConditionReason) metav1.Condition {
		GinkgoHelper()
		var cond metav1.Condition
		Eventually(func(g Gomega, ctx context.Context) {
			env, err := envClient().Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(env.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
			g.Expect(c).NotTo(BeNil(), "no condition yet")
			g.Expect(c.Reason).To(Equal(string(reason)), "message: %s", c.Message)
			g.Expect(c.Status).To(Equal(status))
			cond = *c
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		return cond
	}
	// adminEnvironment is a working environment with the token of a cluster admin ServiceAccount
	// of the remote cluster, in a Secret of the same name.
	adminEnvironment := func(ctx context.Context, name string, mutate func(*managedv1alpha1.ManagedEnvironmentSpec)) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
		GinkgoHelper()
		createSecret(ctx, ns, name, managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(remoteURL, adminToken, remoteConfig.CAData)})
		env := createEnvironment(ctx, name, name, remoteURL, mutate)
		waitCondition(ctx, name, metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded)
		return env
	}
	clusterSecret := func(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (*corev1.Secret, error) {
		return environmentClusterSecret(ctx, env)
	}
	clusterConfig := func(s *corev1.Secret) argov1alpha1.ClusterConfig {
		GinkgoHelper()
		var c argov1alpha1.ClusterConfig
		Expect(json.Unmarshal(s.Data["config"], &c)).To(Succeed())
		return c
	}
	expectNoClusterSecret := func(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) {
		GinkgoHelper()
		Eventually(func(ctx context.Context) bool {
			_, err := clusterSecret(ctx, env)
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeTrue(), "cluster Secret of %s", env.Name)
	}
	deleteEnvironment := func(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) {
		GinkgoHelper()
		Expect(envClient().Delete(ctx, env.Name, metav1.DeleteOptions{})).To(Succeed())
		expectNoClusterSecret(ctx, env)
	}
	remoteConfigMap := func(ctx context.Context, name string) error {
		_, err := remote.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}

	It("connects with a ServiceAccount token, deploys into the remote cluster only, and cleans up", func(ctx context.Context) {
		createSecret(ctx, ns, "remote-sa", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(remoteURL, deployerToken, remoteConfig.CAData)})
		env := createEnvironment(ctx, "remote", "remote-sa", remoteURL, func(s *managedv1alpha1.ManagedEnvironmentSpec) {
			s.Namespaces = []string{ns}
		})
		cond := waitCondition(ctx, "remote", metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded)
		Expect(cond.Message).To(BeEmpty())

		By("writing the Argo CD cluster Secret")
		s, err := clusterSecret(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
		Expect(s.Name).To(HavePrefix("managed-cluster-"))
		Expect(string(s.Data["name"])).To(Equal(s.Name))
		Expect(string(s.Data["server"])).To(Equal(remoteURL + "?managedCluster=" + strings.TrimPrefix(s.Name, "managed-cluster-")))
		Expect(s.Annotations[managedenvironment.AnnotationClusterUsers]).NotTo(ContainSubstring(deployerToken))
		Expect(string(s.Data["namespaces"])).To(Equal(ns))
		Expect(string(s.Data["clusterResources"])).To(Equal("false"))
		cfg := clusterConfig(s)
		Expect(cfg.BearerToken).To(Equal(deployerToken))
		Expect(cfg.TLSClientConfig.CAData).To(Equal(remoteConfig.CAData))
		Expect(cfg.TLSClientConfig.Insecure).To(BeFalse())
		Expect(s.Annotations).To(HaveKeyWithValue("managed-gitops.redhat.com/impersonate", ns+":deployer"),
			"Argo CD must impersonate the ServiceAccount of the credentials")

		By("writing it again when someone deletes it")
		Expect(kube.CoreV1().Secrets(argoNamespace).Delete(ctx, s.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) (types.UID, error) {
			s, err := clusterSecret(ctx, env)
			if err != nil {
				return "", err
			}
			return s.UID, nil
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(And(Not(BeEmpty()), Not(Equal(s.UID))))

		By("deploying a GitOpsDeployment through it")
		createDeploymentTo(ctx, ns, "to-remote", repoURL, "env1", managedv1alpha1.ApplicationDestination{Environment: "remote", Namespace: ns}, true)
		waitSyncedHealthy(ctx, ns, "to-remote", "cm-remote-one")
		Expect(remoteConfigMap(ctx, "cm-remote-one")).To(Succeed())
		_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-remote-one", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap went to the local cluster too: %v", err)
		Eventually(func(ctx context.Context) managedv1alpha1.GitOpsDeploymentDestination {
			return getDeployment(ctx, ns, "to-remote").Status.ReconciledState.Destination
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(managedv1alpha1.GitOpsDeploymentDestination{Name: "remote", Namespace: ns}))
		proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s, err = clusterSecret(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		Expect(proj.Spec.Destinations).To(ContainElement(argov1alpha1.ApplicationDestination{Name: s.Name, Namespace: ns}))
		Expect(proj.Spec.DestinationServiceAccounts).To(ContainElement(And(
			HaveField("Server", ContainSubstring(strings.TrimPrefix(s.Name, "managed-cluster-"))), HaveField("DefaultServiceAccount", ns+":deployer"))))

		By("deleting the GitOpsDeployment: the remote ConfigMap goes before it")
		deleteDeploymentAndWait(ctx, ns, "to-remote")
		Expect(apierrors.IsNotFound(remoteConfigMap(ctx, "cm-remote-one"))).To(BeTrue(), "the remote ConfigMap outlived its GitOpsDeployment")

		By("deleting the environment: its cluster Secret goes")
		deleteEnvironment(ctx, env)
	})

	It("shares one cluster Secret between the environments of two tenants with the same credentials", func(ctx context.Context) {
		second := ns + "-two"
		createNamespace(ctx, second)
		kubeconfig := map[string]string{"kubeconfig": kubeconfigYAML(remoteURL, deployerToken, remoteConfig.CAData)}
		envs := map[string]*managedv1alpha1.GitOpsDeploymentManagedEnvironment{}
		for _, tenant := range []string{ns, second} {
			createSecret(ctx, tenant, "shared-sa", managedv1alpha1.ManagedEnvironmentSecretType, kubeconfig)
			env, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenant).Create(ctx, &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
				ObjectMeta: metav1.ObjectMeta{Name: "shared"},
				Spec:       managedv1alpha1.ManagedEnvironmentSpec{APIURL: remoteURL, ClusterCredentialsSecret: "shared-sa", Namespaces: []string{ns}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			envs[tenant] = env
		}

		By("both connect, through one cluster Secret that lists both")
		var shared *corev1.Secret
		Eventually(func(g Gomega, ctx context.Context) {
			var names []string
			for tenant, env := range envs {
				cur, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenant).Get(ctx, env.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)).To(BeTrue())
				s, err := clusterSecret(ctx, env)
				g.Expect(err).NotTo(HaveOccurred())
				names = append(names, s.Name)
				shared = s
			}
			g.Expect(names[0]).To(Equal(names[1]))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(string(shared.Data["namespaces"])).To(Equal(ns))
		Expect(clusterConfig(shared).BearerToken).To(Equal(deployerToken))

		By("both deploy through it, each through its own environment")
		paths := map[string]string{ns: "env1", second: "env2"}
		configMaps := map[string]string{ns: "cm-remote-one", second: "cm-remote-two"}
		for tenant := range envs {
			createDeploymentTo(ctx, tenant, "to-shared", repoURL, paths[tenant], managedv1alpha1.ApplicationDestination{Environment: "shared", Namespace: ns}, true)
		}
		for tenant := range envs {
			Eventually(func(g Gomega, ctx context.Context) {
				st := getDeployment(ctx, tenant, "to-shared").Status
				g.Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", st)
				g.Expect(st.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy))
				g.Expect(st.Resources).To(ContainElement(HaveField("Name", configMaps[tenant])))
				g.Expect(st.ReconciledState.Destination).To(Equal(managedv1alpha1.GitOpsDeploymentDestination{Name: "shared", Namespace: ns}))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
			Expect(remoteConfigMap(ctx, configMaps[tenant])).To(Succeed())
			proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(tenant), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(proj.Spec.Destinations).To(ContainElement(argov1alpha1.ApplicationDestination{Name: shared.Name, Namespace: ns}))
		}

		By("deleting the second tenant's deployment and environment: the Secret stays for the first")
		deleteDeploymentAndWait(ctx, second, "to-shared")
		Expect(apierrors.IsNotFound(remoteConfigMap(ctx, "cm-remote-two"))).To(BeTrue(), "the remote ConfigMap outlived its GitOpsDeployment")
		Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(second).Delete(ctx, "shared", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) (string, error) {
			s, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, shared.Name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return s.Annotations[managedenvironment.AnnotationClusterUsers], nil
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(
			And(ContainSubstring(ns+"/shared/"), Not(ContainSubstring(second+"/shared/"))))
		Consistently(func(ctx context.Context) error {
			_, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, shared.Name, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		st := getDeployment(ctx, ns, "to-shared").Status
		Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced))
		Expect(remoteConfigMap(ctx, "cm-remote-one")).To(Succeed())

		By("deleting the first: the Secret goes")
		deleteDeploymentAndWait(ctx, ns, "to-shared")
		Expect(apierrors.IsNotFound(remoteConfigMap(ctx, "cm-remote-one"))).To(BeTrue(), "the remote ConfigMap outlived its GitOpsDeployment")
		Expect(envClient().Delete(ctx, "shared", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			_, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, shared.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeTrue(), "the shared cluster Secret outlived its last environment")
	})

	It("refuses credentials that are not a ServiceAccount's, which Argo CD could not impersonate", func(ctx context.Context) {
		admin, err := os.ReadFile(filepath.Join(stackDir, "remote.kubeconfig")) // a client certificate of "admin"
		Expect(err).NotTo(HaveOccurred())
		createSecret(ctx, ns, "remote-user", managedv1alpha1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(admin)})
		env := createEnvironment(ctx, "remote-user", "remote-user", remoteURL, nil)
		cond := waitCondition(ctx, env.Name, metav1.ConditionUnknown, managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)
		Expect(cond.Message).To(ContainSubstring("not to a ServiceAccount"))
		expectNoClusterSecret(ctx, env)
		deleteEnvironment(ctx, env)
	})

	It("installs a ServiceAccount of its own with createNewServiceAccount, skipping TLS verification if asked", func(ctx context.Context) {
		admin, err := os.ReadFile(filepath.Join(stackDir, "remote.kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		adminCfg, err := clientcmd.Load(admin)
		Expect(err).NotTo(HaveOccurred())
		// Without the CA: only allowInsecureSkipTLSVerify makes the cluster's certificate acceptable.
		for _, c := range adminCfg.Clusters {
			c.CertificateAuthorityData = nil
		}
		admin, err = clientcmd.Write(*adminCfg)
		Expect(err).NotTo(HaveOccurred())
		createSecret(ctx, ns, "remote-admin", managedv1alpha1.ManagedEnvironmentSecretType, map[string]string{"kubeconfig": string(admin)})
		env := createEnvironment(ctx, "remote-own-sa", "remote-admin", remoteURL, func(s *managedv1alpha1.ManagedEnvironmentSpec) {
			s.CreateNewServiceAccount = true
			s.AllowInsecureSkipTLSVerify = true
		})
		waitCondition(ctx, env.Name, metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded)

		sa := "argocd-manager-" + string(env.UID)
		_, err = remote.CoreV1().ServiceAccounts("kube-system").Get(ctx, sa, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		crb, err := remote.RbacV1().ClusterRoleBindings().Get(ctx, "argocd-manager-cluster-role-binding-"+string(env.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: "kube-system"}))
		tokenSecret, err := remote.CoreV1().Secrets("kube-system").Get(ctx, "argocd-manager-token-"+string(env.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s, err := clusterSecret(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		cfg := clusterConfig(s)
		Expect(cfg.BearerToken).To(Equal(string(tokenSecret.Data["token"])), "Argo CD deploys as the new ServiceAccount, not as admin")
		Expect(cfg.TLSClientConfig.Insecure).To(BeTrue())
		Expect(s.Data).NotTo(HaveKey("namespaces"))
		cur, err := envClient().Get(ctx, env.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cur.Finalizers).To(ContainElement(managedenvironment.EnvironmentFinalizer))

		By("deploying through it")
		d := createDeploymentTo(ctx, ns, "to-remote-own-sa", repoURL, "env2", managedv1alpha1.ApplicationDestination{Environment: env.Name, Namespace: ns}, false)
		waitSyncedHealthy(ctx, ns, d.Name, "cm-remote-two")
		Expect(remoteConfigMap(ctx, "cm-remote-two")).To(Succeed())
		Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) bool {
			return apierrors.IsNotFound(remoteConfigMap(ctx, "cm-remote-two"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())

		By("limiting the environment to two namespaces, then one: the rights it no longer names are revoked")
		second := ns + "-second"
		_, err = remote.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: second}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		roleBinding := func(ctx context.Context, namespace string) error {
			_, err := remote.RbacV1().RoleBindings(namespace).Get(ctx, crb.Name, metav1.GetOptions{})
			return err
		}
		setNamespaces := func(namespaces ...string) {
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := envClient().Get(ctx, env.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Spec.Namespaces = namespaces
				_, err = envClient().Update(ctx, cur, metav1.UpdateOptions{})
				return err
			})).To(Succeed())
		}
		setNamespaces(ns, second)
		Eventually(func(g Gomega, ctx context.Context) {
			_, err := remote.RbacV1().ClusterRoleBindings().Get(ctx, crb.Name, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ClusterRoleBinding is still there: %v", err)
			g.Expect(roleBinding(ctx, ns)).To(Succeed())
			g.Expect(roleBinding(ctx, second)).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		setNamespaces(ns)
		Eventually(func(ctx context.Context) bool {
			return apierrors.IsNotFound(roleBinding(ctx, second))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "the RoleBinding in the namespace taken out was not revoked")
		_, err = remote.RbacV1().Roles(second).Get(ctx, crb.RoleRef.Name, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Role in the namespace taken out is still there: %v", err)
		Expect(roleBinding(ctx, ns)).To(Succeed())
		waitCondition(ctx, env.Name, metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded)

		By("deleting the environment: what it installed goes from the remote cluster before it goes")
		deleteEnvironment(ctx, env)
		Eventually(func(ctx context.Context) bool {
			_, err := envClient().Get(ctx, env.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
		for what, get := range map[string]func() error{
			"RoleBinding": func() error { return roleBinding(ctx, ns) },
			"Role": func() error {
				_, err := remote.RbacV1().Roles(ns).Get(ctx, crb.RoleRef.Name, metav1.GetOptions{})
				return err
			},
			"ServiceAccount": func() error {
				_, err := remote.CoreV1().ServiceAccounts("kube-system").Get(ctx, sa, metav1.GetOptions{})
				return err
			},
			"token Secret": func() error {
				_, err := remote.CoreV1().Secrets("kube-system").Get(ctx, tokenSecret.Name, metav1.GetOptions{})
				return err
			},
			"ClusterRoleBinding": func() error {
				_, err := remote.RbacV1().ClusterRoleBindings().Get(ctx, crb.Name, metav1.GetOptions{})
				return err
			},
			"ClusterRole": func() error {
				_, err := remote.RbacV1().ClusterRoles().Get(ctx, crb.RoleRef.Name, metav1.GetOptions{})
				return err
			},
		} {
			Expect(apierrors.IsNotFound(get())).To(BeTrue(), "the %s installed on the remote cluster outlived its environment", what)
		}
	})

	It("keeps a deployment to the namespaces of its environment, whatever its credentials may do", func(ctx context.Context) {
		env := adminEnvironment(ctx, "limited", func(s *managedv1alpha1.ManagedEnvironmentSpec) {
			s.Namespaces = []string{ns}
		})
		other := ns + "-other"
		_, err := remote.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		d := createDeploymentTo(ctx, ns, "outside", repoURL, "env1", managedv1alpha1.ApplicationDestination{Environment: env.Name, Namespace: other}, false)
		// Argo CD manages only the cluster Secret's namespaces, and says so (as it did for the original).
		Eventually(func(g Gomega, ctx context.Context) {
			var cond *managedv1alpha1.GitOpsDeploymentCondition
			for _, c := range getDeployment(ctx, ns, d.Name).Status.Conditions {
				if c.Type == managedv1alpha1.GitOpsDeploymentConditionType(argov1alpha1.ApplicationConditionComparisonError) {
					cond = &c
				}
			}
			g.Expect(cond).NotTo(BeNil(), "no ComparisonError")
			g.Expect(cond.Message).To(ContainSubstring(fmt.Sprintf(`Namespace %q for ConfigMap "cm-remote-one" is not managed`, other)))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		_, err = remote.CoreV1().ConfigMaps(other).Get(ctx, "cm-remote-one", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "deployed outside the environment's namespaces: %v", err)

		Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{})).To(Succeed())
		deleteEnvironment(ctx, env)
	})

	It("lets a deployment write cluster-scoped resources through an environment with clusterResources", func(ctx context.Context) {
		env := adminEnvironment(ctx, "cluster-wide", func(s *managedv1alpha1.ManagedEnvironmentSpec) {
			s.Namespaces = []string{ns}
			s.ClusterResources = true
		})
		s, err := clusterSecret(ctx, env)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(s.Data["clusterResources"])).To(Equal("true"))

		d := createDeploymentTo(ctx, ns, "cluster-wide", repoURL, "cluster-wide", managedv1alpha1.ApplicationDestination{Environment: env.Name, Namespace: ns}, true)
		waitSyncedHealthy(ctx, ns, d.Name, "cm-remote-three")
		_, err = remote.RbacV1().ClusterRoles().Get(ctx, ns+"-role", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the ClusterRole was not deployed to the remote cluster")
		proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(proj.Spec.ClusterResourceWhitelist).To(ConsistOf(metav1.GroupKind{Group: "*", Kind: "*"}))

		By("deleting it: the ClusterRole goes before it, and the project allows cluster-scoped resources no more")
		deleteDeploymentAndWait(ctx, ns, d.Name)
		_, err = remote.RbacV1().ClusterRoles().Get(ctx, ns+"-role", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ClusterRole outlived its GitOpsDeployment: %v", err)
		Eventually(func(ctx context.Context) []metav1.GroupKind {
			proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
			if err != nil {
				return nil // no deployment left: no project
			}
			return proj.Spec.ClusterResourceWhitelist
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
		deleteEnvironment(ctx, env)
	})

	It("re-reads the Secret when it changes", func(ctx context.Context) {
		createSecret(ctx, ns, "changing", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(remoteURL, "wrong-token", remoteConfig.CAData)})
		env := createEnvironment(ctx, "changing", "changing", remoteURL, func(s *managedv1alpha1.ManagedEnvironmentSpec) {
			s.Namespaces = []string{ns}
		})
		waitCondition(ctx, env.Name, metav1.ConditionUnknown, managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials)
		expectNoClusterSecret(ctx, env)

		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "changing", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.Data["kubeconfig"] = []byte(kubeconfigYAML(remoteURL, deployerToken, remoteConfig.CAData))
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitCondition(ctx, env.Name, metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded)
		_, err = clusterSecret(ctx, env)
		Expect(err).NotTo(HaveOccurred())

		By("breaking it again: the environment becomes invalid and its cluster Secret goes")
		s, err = kube.CoreV1().Secrets(ns).Get(ctx, "changing", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		delete(s.Data, "kubeconfig")
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitCondition(ctx, env.Name, metav1.ConditionFalse, managedv1alpha1.ManagedEnvironmentReasonMissingKubeConfigField)
		expectNoClusterSecret(ctx, env)
		deleteEnvironment(ctx, env)
	})

	type failure struct {
		secretType corev1.SecretType
		// data is the Secret's data given the remote URL, the CA and the tokens.
		data      func(url string, ca []byte, deployer, nobody string) map[string]string
		apiURL    string // default: the remote cluster's
		status    metav1.ConditionStatus
		reason    managedv1alpha1.ManagedEnvironmentConditionReason
		message   string
		noSecret  bool
		limitToNS bool
	}
	kubeconfigOf := func(url string, ca []byte, token string) map[string]string {
		return map[string]string{"kubeconfig": kubeconfigYAML(url, token, ca)}
	}
	DescribeTable("reports why it cannot connect",
		func(ctx context.Context, f failure) {
			name := fmt.Sprintf("fail-%d", time.Now().UnixNano()%1000000)
			apiURL := remoteURL
			if f.apiURL != "" {
				apiURL = f.apiURL
			}
			if !f.noSecret {
				createSecret(ctx, ns, name, f.secretType, f.data(apiURL, remoteConfig.CAData, deployerToken, nobodyToken))
			}
			env := createEnvironment(ctx, name, name, apiURL, func(s *managedv1alpha1.ManagedEnvironmentSpec) {
				if f.limitToNS {
					s.Namespaces = []string{ns}
				}
			})
			cond := waitCondition(ctx, name, f.status, f.reason)
			Expect(cond.Message).To(ContainSubstring(f.message))
			Expect(cond.ObservedGeneration).To(Equal(env.Generation))
			expectNoClusterSecret(ctx, env)
			// A later look finds the same condition: nothing flaps or is rewritten.
			Consistently(func(ctx context.Context) metav1.Condition {
				cur, err := envClient().Get(ctx, name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				return *meta.FindStatusCondition(cur.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
			}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Equal(cond))
			deleteEnvironment(ctx, env)
		},
		Entry("a Secret of the wrong type", failure{
			secretType: corev1.SecretTypeOpaque,
			data:       func(url string, ca []byte, tok, _ string) map[string]string { return kubeconfigOf(url, ca, tok) },
			status:     metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonInvalidSecretType,
			message: "invalid secret type: Opaque",
		}),
		Entry("no Secret", failure{
			noSecret: true,
			status:   metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonKubernetesError,
			message: "was not found",
		}),
		Entry("no kubeconfig field", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data: func(url string, ca []byte, tok, _ string) map[string]string {
				return map[string]string{"config": kubeconfigOf(url, ca, tok)["kubeconfig"]}
			},
			status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonMissingKubeConfigField,
			message: "missing kubeconfig field in Secret",
		}),
		Entry("a kubeconfig that does not parse", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data: func(string, []byte, string, string) map[string]string {
				return map[string]string{"kubeconfig": "apiVersion: v1\nkind: Config\nclusters: {[\n"}
			},
			status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
			message: "unable to parse kubeconfig data",
		}),
		Entry("no context for the API URL", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data: func(_ string, ca []byte, tok, _ string) map[string]string {
				return kubeconfigOf("https://some-other-cluster.example:6443", ca, tok)
			},
			status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToLocateContext,
			message: "the kubeconfig did not have a cluster entry that matched the API URL",
		}),
		Entry("an unknown host", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			apiURL:     "https://nonexistent.invalid:6443",
			data:       func(url string, ca []byte, tok, _ string) map[string]string { return kubeconfigOf(url, ca, tok) },
			status:     metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			message: "Unable to validate the credentials provided in the ManagedEnvironment Secret. Verify the API URL, and service account token are correct.",
		}),
		Entry("a wrong token", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data: func(url string, ca []byte, _, _ string) map[string]string {
				return kubeconfigOf(url, ca, "not-a-token")
			},
			status: metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			message: "Unable to validate the credentials provided in the ManagedEnvironment Secret. Verify the API URL, and service account token are correct.",
		}),
		Entry("a ServiceAccount without rights", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data:       func(url string, ca []byte, _, nobody string) map[string]string { return kubeconfigOf(url, ca, nobody) },
			limitToNS:  true,
			status:     metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			message: "Provided service account does not have permission to access resources in the cluster. Verify that the service account has the correct Role and RoleBinding.",
		}),
		Entry("a ServiceAccount with rights in one namespace, for the whole cluster", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data:       func(url string, ca []byte, tok, _ string) map[string]string { return kubeconfigOf(url, ca, tok) },
			status:     metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			message: "Provided service account does not have permission to access resources in the cluster.",
		}),
		Entry("a certificate of an unknown authority", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data:       func(url string, _ []byte, tok, _ string) map[string]string { return kubeconfigOf(url, nil, tok) },
			limitToNS:  true,
			status:     metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials,
			message: "Certificate signed by unknown authority.",
		}),
		Entry("a kubeconfig that points at a file of the agent's machine", failure{
			secretType: managedv1alpha1.ManagedEnvironmentSecretType,
			data: func(url string, _ []byte, _, _ string) map[string]string {
				return map[string]string{"kubeconfig": fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"+
					"contexts:\n- name: x\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user:\n    tokenFile: /etc/hostname\n", url)}
			},
			status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
			message: "references to files are not supported",
		}),
	)

	It("keeps a tenant to the environments and Secrets of its own namespace", func(ctx context.Context) {
		By("an environment naming a Secret that exists only in another namespace does not find it")
		createSecret(ctx, tenantB, "b-cluster", managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(remoteURL, deployerToken, remoteConfig.CAData)})
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentManagedEnvironment
metadata: {name: steal, namespace: %s}
spec: {apiURL: %q, credentialsSecret: b-cluster, allowInsecureSkipTLSVerify: false}
`, tenantA, remoteURL), "create", "-f", "-")
		Eventually(func(g Gomega, ctx context.Context) {
			env, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenantA).Get(ctx, "steal", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(env.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(string(managedv1alpha1.ManagedEnvironmentReasonKubernetesError)))
			g.Expect(c.Message).To(ContainSubstring("was not found in namespace '" + tenantA + "'"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("the API rejects a reference with a namespace in it")
		stderr := fails("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentManagedEnvironment
metadata: {name: steal-2, namespace: %s}
spec: {apiURL: %q, credentialsSecret: %s/b-cluster, allowInsecureSkipTLSVerify: false}
`, tenantA, remoteURL, tenantB), "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("spec.credentialsSecret"))
		stderr = fails("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: steal-env, namespace: %s}
spec:
  source: {repoURL: %q, path: env1}
  destination: {environment: %s/b-env, namespace: %s}
  type: automated
`, tenantA, repoURL, tenantB, tenantB), "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("spec.destination.environment"))

		By("a GitOpsDeployment naming an environment of another namespace gets the reference's error")
		mustIn("admin", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentManagedEnvironment
metadata: {name: b-env, namespace: %s}
spec: {apiURL: %q, credentialsSecret: b-cluster, allowInsecureSkipTLSVerify: false, namespaces: [%s]}
`, tenantB, remoteURL, ns), "create", "-f", "-")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: steal-env, namespace: %s}
spec:
  source: {repoURL: %q, path: env1}
  destination: {environment: b-env, namespace: %s}
  type: automated
`, tenantA, repoURL, ns), "create", "-f", "-")
		Eventually(func(g Gomega, ctx context.Context) {
			var found bool
			for _, c := range getDeployment(ctx, tenantA, "steal-env").Status.Conditions {
				if c.Type == managedv1alpha1.GitOpsDeploymentConditionErrorOccurred {
					found = true
					g.Expect(c.Status).To(Equal(managedv1alpha1.GitOpsConditionStatusTrue))
					g.Expect(c.Message).To(Equal("Unable to reconcile the ManagedEnvironment. Verify that the ManagedEnvironment and Secret are correctly defined, and have valid credentials"))
				}
			}
			g.Expect(found).To(BeTrue(), "no ErrorOccurred condition")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		// b-env itself is connected: only the namespace keeps tenant A from it.
		Eventually(func(ctx context.Context) bool {
			env, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenantB).Get(ctx, "b-env", metav1.GetOptions{})
			return err == nil && meta.IsStatusConditionTrue(env.Status.Conditions, managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
		Consistently(func(ctx context.Context) error {
			return remoteConfigMap(ctx, "cm-remote-one")
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Satisfy(apierrors.IsNotFound))

		for _, obj := range []struct{ kind, ns, name string }{
			{"gitopsdeployment", tenantA, "steal-env"},
			{"gitopsdeploymentmanagedenvironment", tenantA, "steal"},
			{"gitopsdeploymentmanagedenvironment", tenantB, "b-env"},
			{"secret", tenantB, "b-cluster"},
		} {
			must("admin", "delete", obj.kind, "-n", obj.ns, obj.name)
		}
	})
})

// kubeconfigYAML is a kubeconfig with one context for server, authenticating with token, and
// verifying the server with ca when it is given.
func kubeconfigYAML(server, token string, ca []byte) string {
	caLine := ""
	if len(ca) > 0 {
		caLine = "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: target
  cluster:
    server: %s%s
users:
- name: deployer
  user:
    token: %s
contexts:
- name: deployer@target
  context:
    cluster: target
    user: deployer
current-context: deployer@target
`, server, caLine, token)
}

func createSecret(ctx context.Context, ns, name string, typ corev1.SecretType, data map[string]string) {
	GinkgoHelper()
	_, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       typ,
		StringData: data,
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// environmentClusterSecret is the Argo CD cluster Secret that lists env among its users
// (environments with the same credentials and settings share one).
func environmentClusterSecret(ctx context.Context, env *managedv1alpha1.GitOpsDeploymentManagedEnvironment) (*corev1.Secret, error) {
	list, err := kube.CoreV1().Secrets(argoNamespace).List(ctx, metav1.ListOptions{LabelSelector: managedenvironment.LabelManagedCluster})
	if err != nil {
		return nil, err
	}
	entry := env.Namespace + "/" + env.Name + "/" + string(env.UID)
	for i := range list.Items {
		var users []string
		if err := json.Unmarshal([]byte(list.Items[i].Annotations[managedenvironment.AnnotationClusterUsers]), &users); err == nil && slices.Contains(users, entry) {
			return &list.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), "cluster Secret of "+entry)
}
