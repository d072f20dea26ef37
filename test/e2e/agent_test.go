//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

const argoNamespace = "gitops-service-argocd"

// The agent against the real Argo CD of the stack: a GitOpsDeployment from a local Git
// repository ends up as ConfigMaps in the tenant's namespace, and Argo CD's view comes back.
var _ = Describe("agent", Ordered, func() {
	var (
		repoURL string
		argo    argoclient.Interface
		ns      string
	)

	BeforeAll(func(ctx context.Context) {
		argo = argoclient.NewForConfigOrDie(adminConfig)
		// The repo-server clones file:// repositories from this machine's file system, so a
		// bare repository in a temporary folder of the test is reachable to it.
		repoURL = "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"env1/cm.yaml": configMap("cm-one", "one"),
			"env2/cm.yaml": configMap("cm-two", "two"),
		})
		ns = fmt.Sprintf("e2e-agent-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
	})

	It("deploys an automated GitOpsDeployment, follows a change of path, and reports it", func(ctx context.Context) {
		depl := createDeployment(ctx, ns, "web", repoURL, "env1", false)
		waitSyncedHealthy(ctx, ns, "web", "cm-one")
		expectConfigMap(ctx, ns, "cm-one")

		app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(depl.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(app.Labels).To(HaveKeyWithValue(argocd.LabelDeploymentNamespace, ns))
		Expect(app.Spec.Project).To(Equal(argocd.ProjectName(ns)))
		proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(proj.Spec.SourceRepos).To(Equal([]string{repoURL}))
		Expect(proj.Spec.Destinations).To(HaveLen(1))
		Expect(proj.Spec.Destinations[0].Namespace).To(Equal(ns))

		By("recording the change as an Operation, for the service's eyes only")
		Eventually(func(g Gomega, ctx context.Context) {
			ops, err := gitops.ManagedGitopsV1alpha1().Operations(argoNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ops.Items).To(ContainElement(And(
				HaveField("Spec.ResourceType", managedv1alpha1.OperationResourceTypeApplication),
				HaveField("Spec.Target.Name", app.Name),
				HaveField("Spec.Source", managedv1alpha1.OperationSource{Kind: "GitOpsDeployment", Namespace: ns, Name: "web", UID: string(depl.UID)}),
				HaveField("Status.State", managedv1alpha1.OperationStateCompleted),
				HaveField("Status.Attempts", int32(1)),
			)))
			// Records are written off the reconcile path, behind those of every other change
			// (a spec that ran before may have left a thousand).
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

		By("changing the path")
		changeSourceAndWait(ctx, ns, "web", func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.Path = "env2" },
			"cm-two", "cm-one", "the ConfigMap of the old path is pruned", HaveField("Path", "env2"))

		By("deleting it without the finalizer: the object goes at once, the ConfigMap soon after")
		deleteAndWait(ctx, ns, "web", "cm-two", false)
	})

	It("follows a change of targetRevision and of repoURL", func(ctx context.Context) {
		// The first repository's main has env3/cm-three, its branch "next" env3/cm-next; a
		// second repository has env3/cm-elsewhere.
		dir := GinkgoT().TempDir()
		first := "file://" + gitRepository(dir, map[string]string{"env3/cm.yaml": configMap("cm-three", "main")})
		gitIn(dir, "checkout", "-q", "-b", "next")
		gitIn(dir, "rm", "-q", "env3/cm.yaml")
		gitCommitOn(dir, "next", map[string]string{"env3/next.yaml": configMap("cm-next", "next")})
		second := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"env3/cm.yaml": configMap("cm-elsewhere", "second")})

		depl := createDeployment(ctx, ns, "moving", first, "env3", true)
		waitSyncedHealthy(ctx, ns, "moving", "cm-three")

		By("changing targetRevision to a branch")
		changeSourceAndWait(ctx, ns, "moving", func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "next" },
			"cm-next", "cm-three", "the ConfigMap only main has is pruned", HaveField("Branch", "next"))

		By("changing repoURL (and back to the default revision)")
		changeSourceAndWait(ctx, ns, "moving", func(d *managedv1alpha1.GitOpsDeployment) {
			d.Spec.Source.RepoURL, d.Spec.Source.TargetRevision = second, ""
		}, "cm-elsewhere", "cm-next", "the ConfigMap of the old repository is pruned", HaveField("RepoURL", second))
		Eventually(func(ctx context.Context) ([]string, error) {
			proj, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return proj.Spec.SourceRepos, nil
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal([]string{second}),
			"the project allows the repository in use, no longer the old one")
		app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(depl.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(app.Spec.Source.RepoURL).To(Equal(second))

		deleteAndWait(ctx, ns, "moving", "cm-elsewhere", true)
	})

	It("creates, deletes and creates the same name three times", func(ctx context.Context) {
		for i := 0; i < 3; i++ {
			By(fmt.Sprintf("round %d", i+1))
			createDeployment(ctx, ns, "again", repoURL, "env1", true)
			waitSyncedHealthy(ctx, ns, "again", "cm-one")
			expectConfigMap(ctx, ns, "cm-one")
			deleteAndWait(ctx, ns, "again", "cm-one", true)
		}
		Eventually(applicationsOf(argo, ns)).WithContext(ctx).WithTimeout(time.Minute).
			Should(BeEmpty(), "no Application outlives its GitOpsDeployment")
		Eventually(func(ctx context.Context) bool {
			_, err := argo.ArgoprojV1alpha1().AppProjects(argoNamespace).Get(ctx, argocd.ProjectName(ns), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "the tenant's AppProject goes with its last deployment")
	})
})

// createDeployment creates an automated GitOpsDeployment of repoURL's path into its own namespace.
func createDeployment(ctx context.Context, ns, name, repoURL, path string, finalizer bool) *managedv1alpha1.GitOpsDeployment {
	GinkgoHelper()
	return createDeploymentTo(ctx, ns, name, repoURL, path, managedv1alpha1.ApplicationDestination{}, finalizer)
}

// createDeploymentTo creates an automated GitOpsDeployment of repoURL's path into dest.
func createDeploymentTo(ctx context.Context, ns, name, repoURL, path string, dest managedv1alpha1.ApplicationDestination, finalizer bool) *managedv1alpha1.GitOpsDeployment {
	GinkgoHelper()
	return createDeploymentWithSpec(ctx, ns, name, managedv1alpha1.GitOpsDeploymentSpec{
		Source:      managedv1alpha1.ApplicationSource{RepoURL: repoURL, Path: path},
		Destination: dest,
		Type:        managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
	}, finalizer)
}

// createDeploymentWithSpec creates a GitOpsDeployment, with the agent's finalizer if finalizer.
func createDeploymentWithSpec(ctx context.Context, ns, name string, spec managedv1alpha1.GitOpsDeploymentSpec, finalizer bool) *managedv1alpha1.GitOpsDeployment {
	GinkgoHelper()
	d := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if finalizer {
		d.Finalizers = []string{managedv1alpha1.GitOpsDeploymentFinalizer}
	}
	created, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Create(ctx, d, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return created
}

// applicationsOf polls the names of the Applications the agent made for namespace ns.
func applicationsOf(argo argoclient.Interface, ns string) func(ctx context.Context) ([]string, error) {
	return applicationsIn(argo, argoNamespace, ns)
}

// applicationsIn lists the Applications of tenant ns in the Argo CD namespace argoNS.
func applicationsIn(argo argoclient.Interface, argoNS, ns string) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		apps, err := argo.ArgoprojV1alpha1().Applications(argoNS).List(ctx, metav1.ListOptions{
			LabelSelector: argocd.LabelDeploymentNamespace + "=" + ns,
		})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, a := range apps.Items {
			names = append(names, a.Name)
		}
		return names, nil
	}
}

// updateDeployment changes a GitOpsDeployment, retrying on conflicts with the agent's status writes.
func updateDeployment(ctx context.Context, ns, name string, change func(*managedv1alpha1.GitOpsDeployment)) {
	GinkgoHelper()
	Eventually(func(ctx context.Context) error {
		cur, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

func waitConfigMapGone(ctx context.Context, ns, name, why string) {
	GinkgoHelper()
	Eventually(func(ctx context.Context) bool {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), why)
}

// changeSourceAndWait changes a deployment's source and waits until the new source's
// ConfigMap is synced and present, the old one pruned (pruned says why it should be), and the
// reconciled source matches.
func changeSourceAndWait(ctx context.Context, ns, name string, change func(*managedv1alpha1.GitOpsDeployment),
	newConfigMap, oldConfigMap, pruned string, reconciled gomegatypes.GomegaMatcher) {
	GinkgoHelper()
	updateDeployment(ctx, ns, name, change)
	waitSyncedHealthy(ctx, ns, name, newConfigMap)
	expectConfigMap(ctx, ns, newConfigMap)
	waitConfigMapGone(ctx, ns, oldConfigMap, pruned)
	Eventually(reconciledSource(ns, name)).WithContext(ctx).WithTimeout(time.Minute).Should(reconciled)
}

// reconciledSource polls the source Argo CD last compared a GitOpsDeployment against.
func reconciledSource(ns, name string) func(ctx context.Context) (managedv1alpha1.GitOpsDeploymentSource, error) {
	return func(ctx context.Context) (managedv1alpha1.GitOpsDeploymentSource, error) {
		d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return managedv1alpha1.GitOpsDeploymentSource{}, err
		}
		return d.Status.ReconciledState.Source, nil
	}
}

func getDeployment(ctx context.Context, ns, name string) *managedv1alpha1.GitOpsDeployment {
	GinkgoHelper()
	d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return d
}

// waitSyncedHealthy waits until the status says Synced/Healthy and lists the ConfigMap.
func waitSyncedHealthy(ctx context.Context, ns, name, configMap string) {
	GinkgoHelper()
	Eventually(func(g Gomega, ctx context.Context) {
		st := getDeployment(ctx, ns, name).Status
		g.Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", st)
		g.Expect(st.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy))
		// Argo CD has no health check for ConfigMaps, so their health stays unset.
		g.Expect(st.Resources).To(ContainElement(managedv1alpha1.ResourceStatus{
			Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: configMap, Status: managedv1alpha1.SyncStatusCodeSynced,
		}))
		g.Expect(st.OperationState).NotTo(BeNil())
		g.Expect(st.OperationState.Phase).To(Equal(managedv1alpha1.OperationPhaseSucceeded))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

func expectConfigMap(ctx context.Context, ns, name string) {
	GinkgoHelper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(cm.Data).To(HaveKey("value"))
}

// deleteAndWait deletes a GitOpsDeployment and waits until it and the ConfigMap it deployed are
// gone; with the finalizer, the ConfigMap must be gone by the time the object is.
func deleteAndWait(ctx context.Context, ns, name, configMap string, finalizer bool) {
	GinkgoHelper()
	deleteDeploymentAndWait(ctx, ns, name)
	if finalizer {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, configMap, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ConfigMap %s outlived its GitOpsDeployment", configMap)
		return
	}
	waitConfigMapGone(ctx, ns, configMap, "the deleted GitOpsDeployment's ConfigMap is not pruned")
}

// deleteDeploymentAndWait deletes a GitOpsDeployment and waits until it is gone (with the
// finalizer, until the agent has had Argo CD remove what it deployed).
func deleteDeploymentAndWait(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Delete(ctx, name, metav1.DeleteOptions{})).To(Succeed())
	Eventually(func(ctx context.Context) bool {
		_, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
}

// gitRepository makes a bare repository under dir with one commit of files and returns its path.
func gitRepository(dir string, files map[string]string) string {
	GinkgoHelper()
	bare, work := filepath.Join(dir, "repo.git"), filepath.Join(dir, "work")
	git := func(args ...string) {
		GinkgoHelper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
			"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com")
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), out)
	}
	git("init", "-q", "--bare", "-b", "main", bare)
	git("init", "-q", "-b", "main", work)
	for path, content := range files {
		Expect(os.MkdirAll(filepath.Join(work, filepath.Dir(path)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(work, path), []byte(content), 0o644)).To(Succeed())
	}
	git("-C", work, "add", ".")
	git("-C", work, "commit", "-q", "-m", "fixtures")
	git("-C", work, "push", "-q", bare, "main")
	return bare
}

func configMap(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}
