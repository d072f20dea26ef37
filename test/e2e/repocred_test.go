//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// GitOpsDeploymentRepositoryCredentials against private Git servers of the test process: the
// agent checks them with a real ls-remote, and Argo CD deploys from the repositories with the
// repository Secret the agent writes.
var _ = Describe("repository credentials", Ordered, func() {
	const user, password = "e2e-user", "e2e-password"
	var (
		httpsURL, sshURL          string
		missingURL, sshMissingURL string
		publicURL                 string
		sshKey, otherKey          string
		ns                        string
	)

	BeforeAll(func(ctx context.Context) {
		root := GinkgoT().TempDir()
		gitRepository(filepath.Join(root, "https"), map[string]string{"app/cm.yaml": configMap("cm-https", "https")})
		gitRepository(filepath.Join(root, "ssh"), map[string]string{"app/cm.yaml": configMap("cm-ssh", "ssh")})
		gitRepository(filepath.Join(root, "public"), map[string]string{
			"app/cm.yaml":  configMap("cm-public", "public"),
			"app2/cm.yaml": configMap("cm-public-2", "public"),
		})
		// One server (one CA for 127.0.0.1, which is how Argo CD keys its trust) for the
		// private repositories and a public one.
		httpsServer := startHTTPSGitServer(root, user, password, "/public/")
		DeferCleanup(httpsServer.Close)
		key, pub := newSSHKey()
		sshKey = key
		sshServer := startSSHGitServer(root, pub)
		DeferCleanup(sshServer.Close)
		otherKey, _ = newSSHKey()
		httpsURL = httpsServer.URL + "/https/repo.git"
		missingURL = httpsServer.URL + "/missing/repo.git"
		sshURL = sshServer.URL + "/ssh/repo.git"
		sshMissingURL = sshServer.URL + "/missing/repo.git"
		publicURL = httpsServer.URL + "/public/repo.git"
		trustGitServers(ctx, httpsServer.CAPEM, sshServer.KnownHosts)

		ns = fmt.Sprintf("e2e-repocred-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
	})

	It("deploys a private repository over HTTPS with username and password", func(ctx context.Context) {
		createSecret(ctx, ns, "https-cred", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": user, "password": password})
		cred := createCredential(ctx, ns, "https", httpsURL, "https-cred")
		waitCredentialConditions(ctx, ns, "https", validConditions(httpsURL, "https-cred"))

		s, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "repository"))
		Expect(s.Labels).To(HaveKeyWithValue(argocd.LabelTenantNamespace, ns))
		Expect(string(s.Data["url"])).To(Equal(httpsURL))
		Expect(string(s.Data["project"])).To(Equal(argocd.ProjectName(ns)))
		Expect(string(s.Data["password"])).To(Equal(password))

		createDeployment(ctx, ns, "https-app", httpsURL, "app", false)
		waitSyncedHealthy(ctx, ns, "https-app", "cm-https")
		expectConfigMap(ctx, ns, "cm-https")
	})

	It("deploys a private repository over SSH with a private key", func(ctx context.Context) {
		createSecret(ctx, ns, "ssh-cred", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"sshPrivateKey": sshKey})
		cred := createCredential(ctx, ns, "ssh", sshURL, "ssh-cred")
		waitCredentialConditions(ctx, ns, "ssh", validConditions(sshURL, "ssh-cred"))
		s, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Data).NotTo(HaveKey("insecureIgnoreHostKey"), "the host key is checked, by the agent and by Argo CD")

		createDeployment(ctx, ns, "ssh-app", sshURL, "app", false)
		waitSyncedHealthy(ctx, ns, "ssh-app", "cm-ssh")
		expectConfigMap(ctx, ns, "cm-ssh")
	})

	It("reports a wrong password, and takes the corrected Secret as soon as it changes", func(ctx context.Context) {
		createSecret(ctx, ns, "bad-pass", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": user, "password": "wrong"})
		cred := createCredential(ctx, ns, "bad-pass", httpsURL, "bad-pass")
		waitCredentialConditions(ctx, ns, "bad-pass", invalidCredentialsConditions(httpsURL, "bad-pass"))
		expectNoRepoSecret(ctx, cred)

		By("correcting the password")
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, "bad-pass", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.Data["password"] = []byte(password)
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// Well within the ten minutes of the periodic re-check: only the Secret's event can do it.
		waitCredentialConditions(ctx, ns, "bad-pass", validConditions(httpsURL, "bad-pass"))
		Eventually(func(ctx context.Context) error {
			_, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		By("breaking it again: the repository Secret goes")
		s, err = kube.CoreV1().Secrets(ns).Get(ctx, "bad-pass", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.Data["password"] = []byte("wrong again")
		_, err = kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitCredentialConditions(ctx, ns, "bad-pass", invalidCredentialsConditions(httpsURL, "bad-pass"))
		expectNoRepoSecret(ctx, cred)

		By("deleting the credential")
		Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(ns).Delete(ctx, "bad-pass", metav1.DeleteOptions{})).To(Succeed())
	})

	It("checks credentials again as soon as Argo CD's trusted CAs change", func(ctx context.Context) {
		createSecret(ctx, ns, "trust-cred", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": user, "password": password})
		cred := createCredential(ctx, ns, "trust", httpsURL, "trust-cred")
		waitCredentialConditions(ctx, ns, "trust", validConditions(httpsURL, "trust-cred"))

		By("removing the Git server's CA: the credential no longer works for Argo CD")
		var ca string
		setConfigMapKey(ctx, "argocd-tls-certs-cm", "127.0.0.1", func(cur string) string {
			ca = cur
			return ""
		})
		DeferCleanup(func(ctx context.Context) {
			setConfigMapKey(ctx, "argocd-tls-certs-cm", "127.0.0.1", func(string) string { return ca })
		})
		// Well within the ten minutes of the periodic re-check: only the ConfigMap's event can do it.
		waitCredentialConditions(ctx, ns, "trust", invalidCredentialsConditions(httpsURL, "trust-cred"))
		expectNoRepoSecret(ctx, cred)
	})

	It("reports an SSH key the server does not accept", func(ctx context.Context) {
		createSecret(ctx, ns, "bad-key", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"sshPrivateKey": otherKey})
		cred := createCredential(ctx, ns, "bad-key", sshURL, "bad-key")
		waitCredentialConditions(ctx, ns, "bad-key", invalidCredentialsConditions(sshURL, "bad-key"))
		expectNoRepoSecret(ctx, cred)
	})

	It("reports a missing Secret, one of the wrong type, and a repository that does not exist", func(ctx context.Context) {
		cred := createCredential(ctx, ns, "no-secret", httpsURL, "does-not-exist")
		waitCredentialConditions(ctx, ns, "no-secret", sameConditions(managedv1alpha1.RepositoryCredentialReasonSecretNotFound,
			"Secret specified not found"))
		expectNoRepoSecret(ctx, cred)

		createSecret(ctx, ns, "opaque", corev1.SecretTypeOpaque, map[string]string{"username": user, "password": password})
		cred = createCredential(ctx, ns, "wrong-type", httpsURL, "opaque")
		waitCredentialConditions(ctx, ns, "wrong-type", sameConditions(managedv1alpha1.RepositoryCredentialReasonSecretInvalidType,
			"Secret has an invalid type, must be managed-gitops.redhat.com/repository-credential"))
		expectNoRepoSecret(ctx, cred)

		for name, repo := range map[string][2]string{
			"missing-repo":     {missingURL, "https-cred"},
			"missing-ssh-repo": {sshMissingURL, "ssh-cred"},
		} {
			cred = createCredential(ctx, ns, name, repo[0], repo[1])
			// All three say InvalidRepositoryUrl with git's words, which vary, after the prefix.
			Eventually(func(g Gomega, ctx context.Context) {
				got := credentialConditions(ctx, ns, name)
				g.Expect(got).To(HaveLen(3))
				const msg = "/InvalidRepositoryUrl: Repository does not exist: "
				g.Expect(got[0]).To(HavePrefix("ErrorOccurred=True" + msg))
				g.Expect(got[1]).To(HavePrefix("ValidRepositoryCredential=False" + msg))
				g.Expect(got[2]).To(HavePrefix("ValidRepositoryURL=False" + msg))
				g.Expect(got[0]).To(ContainSubstring("not found"))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), name)
			expectNoRepoSecret(ctx, cred)
		}
	})

	It("does not lend one tenant's credentials to another tenant, whose own credential for the same repository works", func(ctx context.Context) {
		other := ns + "-other"
		createNamespace(ctx, other)
		revision := getDeployment(ctx, ns, "https-app").Status.Sync.Revision
		Expect(revision).To(HaveLen(40))

		By("deploying the private repository without a credential, by branch and by the commit the repo-server has already cloned")
		createDeployment(ctx, other, "borrow", httpsURL, "app", false)
		bySHA := &managedv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "borrow-sha"},
			Spec: managedv1alpha1.GitOpsDeploymentSpec{
				Source: managedv1alpha1.ApplicationSource{RepoURL: httpsURL, Path: "app", TargetRevision: revision},
				Type:   managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			},
		}
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(other).Create(ctx, bySHA, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{"borrow", "borrow-sha"} {
			Eventually(func(ctx context.Context) string {
				for _, c := range getDeployment(ctx, other, name).Status.Conditions {
					if c.Type == managedv1alpha1.GitOpsDeploymentConditionInvalidSpecError && c.Status == managedv1alpha1.GitOpsConditionStatusTrue {
						return c.Message
					}
				}
				return ""
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(ContainSubstring("not permitted in project"),
				"%s: the other tenant's AppProject does not list a repository a tenant holds credentials for", name)
		}
		Consistently(func(g Gomega, ctx context.Context) {
			for _, name := range []string{"borrow", "borrow-sha"} {
				g.Expect(getDeployment(ctx, other, name).Status.Sync.Status).NotTo(Equal(managedv1alpha1.SyncStatusCodeSynced), name)
			}
			_, err := kube.CoreV1().ConfigMaps(other).Get(ctx, "cm-https", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the private repository's ConfigMap was deployed for the other tenant")
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the repository Secret of the private repository claims it")
		s, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(getCredential(ctx, ns, "https").UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Labels).To(HaveKeyWithValue(argocd.LabelClaimsRepository, "true"))

		By("a credential of the other tenant that holds nothing does not open the private repository")
		createSecret(ctx, other, "empty", managedv1alpha1.RepositoryCredentialSecretType, map[string]string{})
		empty := createCredential(ctx, other, "empty", httpsURL, "empty")
		waitCredentialConditions(ctx, other, "empty", invalidCredentialsConditions(httpsURL, "empty"))
		expectNoRepoSecret(ctx, empty)
		Expect(getDeployment(ctx, other, "borrow").Status.Sync.Status).NotTo(Equal(managedv1alpha1.SyncStatusCodeSynced))

		By("giving the other tenant a credential of its own for the same repository")
		createSecret(ctx, other, "own", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": user, "password": password})
		createCredential(ctx, other, "own", httpsURL, "own")
		waitCredentialConditions(ctx, other, "own", validConditions(httpsURL, "own"))
		waitSyncedHealthy(ctx, other, "borrow", "cm-https")
		// Both tenants' repository Secrets for the one URL stand side by side.
		secrets, err := kube.CoreV1().Secrets(argoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "argocd.argoproj.io/secret-type=repository"})
		Expect(err).NotTo(HaveOccurred())
		projects := map[string]bool{}
		for _, s := range secrets.Items {
			if string(s.Data["url"]) == httpsURL {
				projects[string(s.Data["project"])] = true
			}
		}
		Expect(projects).To(HaveKey(argocd.ProjectName(ns)))
		Expect(projects).To(HaveKey(argocd.ProjectName(other)))
	})

	// Issue 18: a public repository cannot be taken away from other tenants with a credential
	// that authenticates nothing.
	It("does not let a credential for a public repository take it from other tenants", func(ctx context.Context) {
		owner, taker := ns+"-pub", ns+"-take"
		createNamespace(ctx, owner)
		createNamespace(ctx, taker)
		argo := argoclient.NewForConfigOrDie(adminConfig)
		projectRepos := func(ctx context.Context) ([]string, error) {
			p, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(owner), metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return p.Spec.SourceRepos, nil
		}

		By("deploying the public repository without any credential")
		createDeployment(ctx, owner, "public-app", publicURL, "app", false)
		waitSyncedHealthy(ctx, owner, "public-app", "cm-public")
		Expect(projectRepos(ctx)).To(ContainElement(publicURL))

		By("another tenant making credentials for it: an empty Secret and a junk password, both valid for a public repository")
		createSecret(ctx, taker, "empty", managedv1alpha1.RepositoryCredentialSecretType, map[string]string{})
		createSecret(ctx, taker, "junk", managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": "junk", "password": "junk"})
		var creds []*managedv1alpha1.GitOpsDeploymentRepositoryCredential
		for _, name := range []string{"empty", "junk"} {
			creds = append(creds, createCredential(ctx, taker, name, publicURL, name))
			waitCredentialConditions(ctx, taker, name, validConditions(publicURL, name))
		}
		for _, cred := range creds {
			Eventually(func(ctx context.Context) error {
				_, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
				return err
			}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the repository Secret of %s", cred.Name)
		}

		By("the first tenant keeps the repository")
		Consistently(func(g Gomega, ctx context.Context) {
			g.Expect(projectRepos(ctx)).To(ContainElement(publicURL), "the other tenant's credential took the public repository away")
			st := getDeployment(ctx, owner, "public-app").Status
			g.Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", st)
			for _, c := range st.Conditions {
				g.Expect(c.Type == managedv1alpha1.GitOpsDeploymentConditionInvalidSpecError &&
					c.Status == managedv1alpha1.GitOpsConditionStatusTrue).To(BeFalse(), "refused: %s", c.Message)
			}
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		createDeployment(ctx, owner, "public-app-2", publicURL, "app2", false)
		waitSyncedHealthy(ctx, owner, "public-app-2", "cm-public-2")

		By("the other tenant's repository Secrets claim nothing, and serve its own deployments")
		for _, cred := range creds {
			s, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Labels).To(HaveKeyWithValue(argocd.LabelClaimsRepository, "false"), cred.Name)
		}
		createDeployment(ctx, taker, "public-app", publicURL, "app", false)
		waitSyncedHealthy(ctx, taker, "public-app", "cm-public")
	})
})

func getCredential(ctx context.Context, ns, name string) *managedv1alpha1.GitOpsDeploymentRepositoryCredential {
	GinkgoHelper()
	c, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// trustGitServers makes Argo CD and the agent trust the test's Git servers: the CA for
// 127.0.0.1 in argocd-tls-certs-cm and the SSH host key in argocd-ssh-known-hosts-cm, where
// the agent reads them. The local stack runs the repo-server out of cluster, where nothing
// mounts those ConfigMaps into its ARGOCD_TLS_DATA_PATH and ARGOCD_SSH_DATA_PATH (.local's
// argocd/tls and argocd/ssh), so the test writes the files as the kubelet would.
func trustGitServers(ctx context.Context, caPEM, knownHosts string) {
	GinkgoHelper()
	setConfigMapKey(ctx, "argocd-tls-certs-cm", "127.0.0.1", func(string) string { return caPEM })
	hosts := setConfigMapKey(ctx, "argocd-ssh-known-hosts-cm", "ssh_known_hosts", func(cur string) string {
		return strings.TrimRight(cur, "\n") + "\n" + knownHosts + "\n"
	})
	Expect(os.WriteFile(filepath.Join(stackDir, "argocd", "tls", "127.0.0.1"), []byte(caPEM), 0o644)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(stackDir, "argocd", "ssh", "ssh_known_hosts"), []byte(hosts), 0o644)).To(Succeed())
}

// setConfigMapKey sets one key of an Argo CD ConfigMap to edit(its current value) and returns
// the new value.
func setConfigMapKey(ctx context.Context, name, key string, edit func(string) string) string {
	GinkgoHelper()
	var value string
	Eventually(func(ctx context.Context) error {
		cm, err := kube.CoreV1().ConfigMaps(argoNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			value = edit("")
			_, err = kube.CoreV1().ConfigMaps(argoNamespace).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
					"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "argocd",
				}},
				Data: map[string]string{key: value},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		value = edit(cm.Data[key])
		cm.Data[key] = value
		_, err = kube.CoreV1().ConfigMaps(argoNamespace).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return value
}

func createCredential(ctx context.Context, ns, name, repo, secret string) *managedv1alpha1.GitOpsDeploymentRepositoryCredential {
	GinkgoHelper()
	c, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Repository: repo, Secret: secret},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// credentialConditions are a credential's conditions as "Type=Status/Reason: Message", sorted
// by type.
func credentialConditions(ctx context.Context, ns, name string) []string {
	GinkgoHelper()
	c, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, cond := range c.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s: %s", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	return sortedStrings(out)
}

func waitCredentialConditions(ctx context.Context, ns, name string, want []string) {
	GinkgoHelper()
	Eventually(func(ctx context.Context) []string {
		return credentialConditions(ctx, ns, name)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Equal(sortedStrings(want)))
}

// The reference's condition matrix (managed-gitops-api.md §1.3).
func validConditions(repo, secret string) []string {
	return []string{
		"ErrorOccurred=False/RepositoryCredentialUpToDate: RepositoryCredentials are Valid",
		"ValidRepositoryURL=True/ValidRepositoryUrl: Repository " + repo + " exists",
		fmt.Sprintf("ValidRepositoryCredential=True/RepositoryCredentialUpToDate: Repository Credentials provided %s for Repository %s are valid", secret, repo),
	}
}

func invalidCredentialsConditions(repo, secret string) []string {
	msg := fmt.Sprintf("Repository Credentials provided %s for Repository %s are invalid", secret, repo)
	return []string{
		"ErrorOccurred=True/InvalidCredentials: " + msg,
		"ValidRepositoryURL=True/ValidRepositoryUrl: Repository " + repo + " exists",
		"ValidRepositoryCredential=False/InvalidCredentials: " + msg,
	}
}

func sameConditions(reason, msg string) []string {
	return []string{
		"ErrorOccurred=True/" + reason + ": " + msg,
		"ValidRepositoryURL=False/" + reason + ": " + msg,
		"ValidRepositoryCredential=False/" + reason + ": " + msg,
	}
}

func expectNoRepoSecret(ctx context.Context, cred *managedv1alpha1.GitOpsDeploymentRepositoryCredential) {
	GinkgoHelper()
	Eventually(func(ctx context.Context) bool {
		_, err := kube.CoreV1().Secrets(argoNamespace).Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(30*time.Second).Should(BeTrue(), "an invalid credential has no repository Secret")
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
