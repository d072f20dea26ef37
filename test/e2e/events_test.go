//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/repositorycredential"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
)

// Kubernetes Events the agent records on the tenant's objects: all a tenant sees of Argo CD is
// what `kubectl describe` shows, as the tenant (alice administers tenantA).
var _ = Describe("agent Events", Ordered, func() {
	var repoURL string
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%100000)

	BeforeAll(func() {
		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"app/cm.yaml": configMap("cm-events-"+suffix, "events"),
		})
	})

	// describedEvent waits until `kubectl describe kind name`, run by alice, lists an Event of
	// the type and reason given, from the agent, whose message matches message (a regular
	// expression), and returns the whole output.
	describedEvent := func(ctx context.Context, kind, name, typ, reason, message string) string {
		GinkgoHelper()
		line := regexp.MustCompile(`(?m)^\s+` + typ + `\s+` + reason + `\s+.*\s` + regexp.QuoteMeta(agentEventSource) + `\s+` + message)
		var out string
		Eventually(func(g Gomega) {
			out = must("alice", "describe", kind, name, "-n", tenantA)
			g.Expect(out).To(MatchRegexp(line.String()), "the Events of %s %s", kind, name)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		return out
	}

	It("records that a GitOpsDeployment's sync started and succeeded", func(ctx context.Context) {
		name := "events-" + suffix
		createDeployment(ctx, tenantA, name, repoURL, "app", false)
		DeferCleanup(deleteAndWait, tenantA, name, "cm-events-"+suffix, false)
		waitSyncedHealthy(ctx, tenantA, name, "cm-events-"+suffix)

		out := describedEvent(ctx, "gitopsdeployment", name, "Normal", gitopsdeployment.EventSyncSucceeded, `Argo CD synced revision [0-9a-f]{40}: successfully synced`)
		Expect(out).To(MatchRegexp(`Normal\s+` + gitopsdeployment.EventSyncStarted + `\s+.*Argo CD started a sync to revision [0-9a-f]{40} \(automated sync policy\)`))
		Expect(out).NotTo(ContainSubstring(gitopsdeployment.EventSyncFailed))

		By("recording nothing more while nothing changes")
		events := func(ctx context.Context) int {
			list, err := kube.CoreV1().Events(tenantA).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.kind=GitOpsDeployment,involvedObject.name=" + name,
			})
			Expect(err).NotTo(HaveOccurred())
			n := 0
			for _, e := range list.Items {
				n += int(e.Count)
			}
			return n
		}
		seen := events(ctx)
		Consistently(events).WithContext(ctx).WithTimeout(5 * time.Second).Should(Equal(seen))
	})

	It("records the request and the outcome of a SyncRun on it", func(ctx context.Context) {
		name := "events-manual-" + suffix
		createDeploymentOfType(ctx, tenantA, name, repoURL, "app", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
		DeferCleanup(deleteAndWait, tenantA, name, "cm-events-"+suffix, false)
		createSyncRun(ctx, tenantA, name, name, "")

		out := describedEvent(ctx, "gitopsdeploymentsyncrun", name, "Normal", gitopsdeployment.EventSyncSucceeded,
			`Argo CD synced GitOpsDeployment `+name+` to revision [0-9a-f]{40}`)
		Expect(out).To(MatchRegexp(`Normal\s+` + syncrun.EventSyncRequested + `\s+.*Requested a sync of GitOpsDeployment ` + name + ` to its target revision in Argo CD`))
	})

	It("records that a ManagedEnvironment's cluster rejected its credentials", func(ctx context.Context) {
		name := "events-env-" + suffix
		// The stack's own kube-apiserver, with a token it does not know.
		createSecret(ctx, tenantA, name, managedv1alpha1.ManagedEnvironmentSecretType,
			map[string]string{"kubeconfig": kubeconfigYAML(adminConfig.Host, "not-a-token-"+suffix, nil)})
		envs := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(tenantA)
		_, err := envs.Create(ctx, &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: managedv1alpha1.ManagedEnvironmentSpec{
				APIURL: adminConfig.Host, ClusterCredentialsSecret: name, AllowInsecureSkipTLSVerify: true,
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) {
			Expect(envs.Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
			Expect(kube.CoreV1().Secrets(tenantA).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		})

		out := describedEvent(ctx, "gitopsdeploymentmanagedenvironment", name, "Warning", managedenvironment.EventCredentialsRejected,
			regexp.QuoteMeta("Unable to validate the credentials provided in the ManagedEnvironment Secret."))
		Expect(out).NotTo(ContainSubstring("not-a-token"))
	})

	It("records that a Git host rejected a RepositoryCredential, and then accepted it", func(ctx context.Context) {
		const user, password = "e2e-events-user", "e2e-events-password"
		root := GinkgoT().TempDir()
		gitRepository(filepath.Join(root, "private"), map[string]string{"app/cm.yaml": configMap("cm-events-private", "x")})
		server := startHTTPSGitServer(root, user, password, "")
		DeferCleanup(server.Close)
		trustGitServers(ctx, server.CAPEM, "")
		url := server.URL + "/private/repo.git"

		name := "events-cred-" + suffix
		createSecret(ctx, tenantA, name, managedv1alpha1.RepositoryCredentialSecretType,
			map[string]string{"username": user, "password": "wrong-" + suffix})
		createCredential(ctx, tenantA, name, url, name)
		creds := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(tenantA)
		DeferCleanup(func(ctx context.Context) {
			Expect(creds.Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
			Expect(kube.CoreV1().Secrets(tenantA).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
		})

		out := describedEvent(ctx, "gitopsdeploymentrepositorycredential", name, "Warning", repositorycredential.EventCredentialsRejected,
			regexp.QuoteMeta("git ls-remote of repository "+url+" with the credentials of Secret "+name+" failed: the Git host refused them"))
		Expect(out).NotTo(ContainSubstring("wrong-" + suffix))

		By("correcting the password")
		s, err := kube.CoreV1().Secrets(tenantA).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		s.Data["password"] = []byte(password)
		_, err = kube.CoreV1().Secrets(tenantA).Update(ctx, s, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		out = describedEvent(ctx, "gitopsdeploymentrepositorycredential", name, "Normal", repositorycredential.EventCredentialsValidated,
			regexp.QuoteMeta("git ls-remote accepted the credentials of Secret "+name+" for repository "+url))
		Expect(out).NotTo(ContainSubstring(password))
	})
})

// agentEventSource is the source kubectl describe shows for the agent's Events.
const agentEventSource = "gitops-service-agent"
