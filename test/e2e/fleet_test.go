//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// The stack's Argo CD is instance "main" of a fleet (hack/local-up.sh makes its
// ArgoCDInstance), and its agent serves only the tenants placed on it.
var _ = Describe("fleet", func() {
	It("places a new tenant on the stack's instance, which takes it and reports its load", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-fleet-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{"env/cm.yaml": configMap("cm-fleet", "one")})
		createDeployment(ctx, ns, "web", repoURL, "env", false)
		waitSyncedHealthy(ctx, ns, "web", "cm-fleet")

		p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, ns, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Spec.Instance).To(Equal("main"))
		Expect(p.Status.Instance).To(Equal("main"))
		Expect(must("admin", "get", "tenantplacement", ns)).To(MatchRegexp(ns + `\s+main\s+main\s+false\s+Placed`))

		Eventually(func(g Gomega, ctx context.Context) {
			inst, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, "main", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(inst.Status.Leader).To(Equal("local-agent"))
			g.Expect(inst.Status.Tenants).To(BeNumerically(">=", 1))
			g.Expect(inst.Status.Applications).To(BeNumerically(">=", 1))
			g.Expect(inst.Status.Conditions).To(ContainElement(And(
				HaveField("Type", managedv1alpha1.ArgoCDInstanceConditionReady), HaveField("Status", metav1.ConditionTrue))))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		deleteDeploymentAndWait(ctx, ns, "web")
	})
})

// Two instances: the stack's, and "engine", a second Argo CD on the rig's remote cluster as its
// engine cluster (hack/local-up.sh start-engine), whose agent writes Argo CD's objects there and
// reaches the tenants' own namespaces back on the stack's cluster. The other specs' tenants are
// pinned to the stack's instance meanwhile, so that only this spec's tenants move.
var _ = Describe("fleet of two instances", Ordered, func() {
	const mainArgo, engineArgo = argoNamespace, "gitops-service-argocd-2"
	var (
		engineArgoClient argoclient.Interface
		mainArgoClient   argoclient.Interface
		onMain, onEngine string
		repoDir          string
	)

	setDraining := func(ctx context.Context, instance string, draining bool) {
		GinkgoHelper()
		Eventually(func(ctx context.Context) error {
			inst, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, instance, metav1.GetOptions{})
			if err != nil {
				return err
			}
			inst.Spec.Draining = draining
			_, err = gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Update(ctx, inst, metav1.UpdateOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}
	setPinned := func(ctx context.Context, name string, pinned bool) {
		GinkgoHelper()
		Eventually(func(ctx context.Context) error {
			p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil || p.Spec.Pinned == pinned || p.Spec.Instance == "" {
				return err
			}
			p.Spec.Pinned = pinned
			_, err = gitops.ManagedGitopsV1alpha1().TenantPlacements().Update(ctx, p, metav1.UpdateOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}
	// heldBy waits until the tenant is placed on and held by instance.
	heldBy := func(ctx context.Context, ns, instance string) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, ns, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.Instance).To(Equal(instance))
			g.Expect(p.Status.Instance).To(Equal(instance))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}
	BeforeAll(func(ctx context.Context) {
		// The other specs' tenants stay where they are.
		existing, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range existing.Items {
			if !p.Spec.Pinned {
				setPinned(ctx, p.Name, true)
				DeferCleanup(setPinned, p.Name, false)
			}
		}

		startStackProcess("engine")
		DeferCleanup(func(ctx context.Context) {
			// Every tenant goes back to the stack's instance before the engine instance goes.
			setDraining(ctx, "engine", true)
			Eventually(func(g Gomega, ctx context.Context) {
				list, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().List(ctx, metav1.ListOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				for _, p := range list.Items {
					g.Expect(p.Status.Instance).NotTo(Equal("engine"), "tenant %s", p.Name)
				}
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			stop := exec.Command("../../hack/local-up.sh", "stop-engine")
			stop.Stdout, stop.Stderr = GinkgoWriter, GinkgoWriter
			Expect(stop.Run()).To(Succeed())
			Expect(gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Delete(ctx, "engine", metav1.DeleteOptions{})).To(Succeed())
		})
		remote, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stackDir, "remote.kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		engineArgoClient = argoclient.NewForConfigOrDie(remote)
		mainArgoClient = argoclient.NewForConfigOrDie(adminConfig)
		Eventually(func(g Gomega, ctx context.Context) {
			inst, err := gitops.ManagedGitopsV1alpha1().ArgoCDInstances().Get(ctx, "engine", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(inst.Status.Leader).To(Equal("engine-agent"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		repoDir = GinkgoT().TempDir()
		gitRepository(repoDir, map[string]string{
			"a/cm.yaml": configMap("cm-a", "one"),
			"b/cm.yaml": configMap("cm-b", "one"),
		})
		suffix := time.Now().UnixNano() % 100000
		onMain, onEngine = fmt.Sprintf("e2e-fleet-main-%d", suffix), fmt.Sprintf("e2e-fleet-engine-%d", suffix)
		createNamespace(ctx, onMain)
		createNamespace(ctx, onEngine)

		// An admin places onMain; onEngine is placed by the service, on the least loaded instance.
		_, err = gitops.ManagedGitopsV1alpha1().TenantPlacements().Create(ctx, &managedv1alpha1.TenantPlacement{
			ObjectMeta: metav1.ObjectMeta{Name: onMain}, Spec: managedv1alpha1.TenantPlacementSpec{Instance: "main"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		repoURL := "file://" + filepath.Join(repoDir, "repo.git")
		createDeployment(ctx, onMain, "web", repoURL, "a", true)
		DeferCleanup(deleteDeploymentAndWait, onMain, "web")
		createDeployment(ctx, onEngine, "web", repoURL, "a", true)
		DeferCleanup(deleteDeploymentAndWait, onEngine, "web")
	})

	It("deploys each tenant from the instance it is placed on, and from that one alone", func(ctx context.Context) {
		heldBy(ctx, onMain, "main")
		heldBy(ctx, onEngine, "engine")
		waitSyncedHealthy(ctx, onMain, "web", "cm-a")
		waitSyncedHealthy(ctx, onEngine, "web", "cm-a")
		expectConfigMap(ctx, onMain, "cm-a")
		expectConfigMap(ctx, onEngine, "cm-a")

		Expect(applicationsIn(mainArgoClient, mainArgo, onMain)(ctx)).To(HaveLen(1))
		Expect(applicationsIn(mainArgoClient, mainArgo, onEngine)(ctx)).To(BeEmpty())
		Expect(applicationsIn(engineArgoClient, engineArgo, onEngine)(ctx)).To(HaveLen(1))
		Expect(applicationsIn(engineArgoClient, engineArgo, onMain)(ctx)).To(BeEmpty())
		_, err := engineArgoClient.ArgoprojV1alpha1().AppProjects(engineArgo).Get(ctx, argocd.ProjectName(onEngine), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the engine's AppProject of its tenant")
	})

	It("moves the tenants of a drained instance without re-creating what they deployed, and goes on syncing them", func(ctx context.Context) {
		before, err := kube.CoreV1().ConfigMaps(onMain).Get(ctx, "cm-a", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		setDraining(ctx, "main", true)
		DeferCleanup(setDraining, "main", false)
		heldBy(ctx, onMain, "engine")
		Eventually(applicationsIn(engineArgoClient, engineArgo, onMain)).WithContext(ctx).WithTimeout(time.Minute).Should(HaveLen(1))
		Eventually(applicationsIn(mainArgoClient, mainArgo, onMain)).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty())
		// The engine's Application finds what the old one deployed in sync: Argo CD adopts it
		// with no sync operation at all, and the status comes from the engine's Argo CD.
		Eventually(func(g Gomega, ctx context.Context) {
			st := getDeployment(ctx, onMain, "web").Status
			g.Expect(st.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", st)
			g.Expect(st.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy))
			g.Expect(st.Resources).To(ContainElement(HaveField("Name", "cm-a")))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		after, err := kube.CoreV1().ConfigMaps(onMain).Get(ctx, "cm-a", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(after.UID).To(Equal(before.UID), "the ConfigMap was re-created by the move")
		adopted, err := engineArgoClient.ArgoprojV1alpha1().Applications(engineArgo).List(ctx, metav1.ListOptions{
			LabelSelector: argocd.LabelDeploymentNamespace + "=" + onMain})
		Expect(err).NotTo(HaveOccurred())
		Expect(adopted.Items).To(HaveLen(1))
		Expect(adopted.Items[0].Status.History).To(BeEmpty(), "the engine synced what it adopted in sync")
		Expect(getDeployment(ctx, onMain, "web").Status.OperationState).NotTo(BeNil(), "the last sync's result was lost in the move")

		By("syncing a change from the engine instance")
		changeSourceAndWait(ctx, onMain, "web", func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.Path = "b" },
			"cm-b", "cm-a", "the engine instance prunes what the old path deployed", HaveField("Path", "b"))
		Expect(applicationsIn(mainArgoClient, mainArgo, onMain)(ctx)).To(BeEmpty())
	})
	// hack/local-up.sh runs the placement controller with --placement-max-owner-share 0.002: an
	// owner may have 2 of each instance's 1000 places, so 4 over the two instances.
	It("keeps each owner to its share of every instance: the owner's extra tenant is stuck, another owner's is placed", func(ctx context.Context) {
		suffix := time.Now().UnixNano() % 100000
		owner := fmt.Sprintf("e2e-owner-%d", suffix)
		repoURL := "file://" + filepath.Join(repoDir, "repo.git")
		manual := managedv1alpha1.GitOpsDeploymentSpec{Source: managedv1alpha1.ApplicationSource{RepoURL: repoURL, Path: "a"},
			Type: managedv1alpha1.GitOpsDeploymentSpecTypeManual}
		var owned []string
		for i := range 5 {
			ns := fmt.Sprintf("e2e-share-%d-%d", suffix, i)
			createNamespace(ctx, ns)
			setOwner(ctx, ns, owner)
			// Last in, first out: the owner's label goes before the drain at the end of the
			// suite, which would otherwise find no room for the owner on main.
			DeferCleanup(setOwner, ns, "")
			createDeploymentWithSpec(ctx, ns, "web", manual, false)
			DeferCleanup(deleteDeploymentAndWait, ns, "web")
			owned = append(owned, ns)
		}

		var stuck string
		Eventually(func(g Gomega, ctx context.Context) {
			perInstance := map[string]int{}
			stuck = ""
			for _, ns := range owned {
				p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, ns, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				if p.Spec.Instance == "" {
					g.Expect(stuck).To(BeEmpty(), "a second stuck tenant, %s", ns)
					stuck = ns
					g.Expect(p.Status.Message).To(And(
						ContainSubstring(`no Argo CD instance has room for owner "`+owner+`"`),
						ContainSubstring("of each instance's capacity, --placement-max-owner-share")))
				}
				perInstance[p.Spec.Instance]++
			}
			g.Expect(perInstance).To(Equal(map[string]int{"main": 2, "engine": 2, "": 1}))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(must("admin", "get", "tenantplacement", stuck, "-o", "wide")).To(ContainSubstring("--placement-max-owner-share"))

		By("another owner's new tenant is still placed")
		other := fmt.Sprintf("e2e-share-other-%d", suffix)
		createNamespace(ctx, other)
		createDeploymentWithSpec(ctx, other, "web", manual, false)
		DeferCleanup(deleteDeploymentAndWait, other, "web")
		Eventually(func(g Gomega, ctx context.Context) {
			p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, other, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.Instance).NotTo(BeEmpty())
			g.Expect(p.Status.Message).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("the owner's label taken off one of its namespaces, the stuck one finds its place")
		for _, ns := range owned {
			if ns != stuck {
				setOwner(ctx, ns, "")
				break
			}
		}
		Eventually(func(g Gomega, ctx context.Context) {
			p, err := gitops.ManagedGitopsV1alpha1().TenantPlacements().Get(ctx, stuck, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.Instance).NotTo(BeEmpty())
			g.Expect(p.Status.Message).NotTo(ContainSubstring("no Argo CD instance has room"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})

// setOwner sets namespace ns's tenant-owner label, as an admin; "" takes it off.
func setOwner(ctx context.Context, ns, owner string) {
	GinkgoHelper()
	value := "null"
	if owner != "" {
		value = fmt.Sprintf("%q", owner)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, managedv1alpha1.LabelTenantOwner, value)
	_, err := kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}
