//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
)

// GitOpsDeploymentSyncRuns against the real Argo CD of the stack: each becomes one sync
// operation on the deployment's Application, in turn, and reports how it ended.
var _ = Describe("GitOpsDeploymentSyncRun", Ordered, func() {
	var (
		argo                argoclient.Interface
		ns, repoURL         string
		oldCommit, headSHA  string
		manual              *managedv1alpha1.GitOpsDeployment
		syncsBefore         int
		slowPod, slowConfig = "slow-wave-0", "slow-wave-1"
	)

	BeforeAll(func(ctx context.Context) {
		argo = argoclient.NewForConfigOrDie(adminConfig)
		dir := GinkgoT().TempDir()
		// Two commits: app/ holds one ConfigMap whose value changes from v1 to v2; slow/ is
		// a sync in two waves whose first never becomes healthy (a Pod, and no kubelet or
		// scheduler to run it), so that sync runs until it is terminated.
		repoURL = "file://" + gitRepository(dir, map[string]string{
			"app/cm.yaml":  configMap("cm-sync", "v1"),
			"auto/cm.yaml": configMap("cm-auto", "auto"),
			// Two waves: Argo CD waits two seconds between them, so this sync runs for a while.
			"waves/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-wave-0\n" +
				"  annotations:\n    argocd.argoproj.io/sync-wave: \"0\"\ndata:\n  value: a\n",
			"waves/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-wave-1\n" +
				"  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\ndata:\n  value: b\n",
			"slow/pod.yaml": fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n"+
				"  annotations:\n    argocd.argoproj.io/sync-wave: \"0\"\nspec:\n"+
				"  automountServiceAccountToken: false\n  containers:\n  - name: c\n    image: registry.invalid/never:1\n", slowPod),
			"slow/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"+
				"  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\ndata:\n  value: late\n", slowConfig),
		})
		oldCommit = gitIn(dir, "rev-parse", "HEAD")
		headSHA = gitCommit(dir, map[string]string{"app/cm.yaml": configMap("cm-sync", "v2")})
		Expect(headSHA).NotTo(Equal(oldCommit))
		ns = fmt.Sprintf("e2e-syncrun-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
	})

	// applicationG is the Application of d, asserted through g (inside Eventually);
	// application asserts as the spec does.
	applicationG := func(ctx context.Context, g Gomega, d *managedv1alpha1.GitOpsDeployment) *argov1alpha1.Application {
		app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return app
	}
	application := func(ctx context.Context, d *managedv1alpha1.GitOpsDeployment) *argov1alpha1.Application {
		GinkgoHelper()
		return applicationG(ctx, Default, d)
	}
	configMapValue := func(ctx context.Context, name string) string {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "<none>"
		}
		Expect(err).NotTo(HaveOccurred())
		return cm.Data["value"]
	}
	// waitSucceeded waits until the SyncRun reports that its sync succeeded.
	waitSucceeded := func(ctx context.Context, run *managedv1alpha1.GitOpsDeploymentSyncRun) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			c := syncRunCondition(ctx, g, ns, run.Name)
			g.Expect(c).NotTo(BeNil(), "no condition yet")
			g.Expect(*c).To(syncRunConditionIs(managedv1alpha1.GitOpsConditionStatusFalse, "", ""))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	It("deploys a manual GitOpsDeployment only through a SyncRun, which syncs HEAD", func(ctx context.Context) {
		manual = createDeploymentOfType(ctx, ns, "manual", repoURL, "app", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
		Eventually(func(ctx context.Context) managedv1alpha1.SyncStatusCode {
			return getDeployment(ctx, ns, "manual").Status.Sync.Status
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Equal(managedv1alpha1.SyncStatusCodeOutOfSync), "Argo CD compares it")
		Consistently(func(ctx context.Context) string {
			return configMapValue(ctx, "cm-sync")
		}).WithContext(ctx).WithTimeout(5*time.Second).Should(Equal("<none>"), "nothing deploys a manual deployment by itself")
		Expect(application(ctx, manual).Status.OperationState).To(BeNil())

		run := createSyncRun(ctx, ns, "sync-head", "manual", "")
		waitSucceeded(ctx, run)
		Expect(configMapValue(ctx, "cm-sync")).To(Equal("v2"))
		app := application(ctx, manual)
		Expect(app.Operation).To(BeNil())
		st := app.Status.OperationState
		Expect(st).NotTo(BeNil())
		Expect(string(st.Phase)).To(Equal("Succeeded"))
		Expect(st.SyncResult.Revision).To(Equal(headSHA))
		Expect(st.Operation.InitiatedBy.Username).To(Equal("gitops-service"))
		Expect(st.Operation.Info).To(ContainElement(&argov1alpha1.Info{Name: syncrun.OperationInfoSyncRunUID, Value: string(run.UID)}))
		syncsBefore = len(app.Status.History)
		By("recording the start of the sync as an Operation of the SyncRun")
		Eventually(func(g Gomega, ctx context.Context) {
			ops, err := gitops.ManagedGitopsV1alpha1().Operations(argoNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ops.Items).To(ContainElement(And(
				HaveField("Spec.ResourceType", managedv1alpha1.OperationResourceTypeSyncOperation),
				HaveField("Spec.Target.Name", app.Name),
				HaveField("Spec.Source", managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", Namespace: ns, Name: run.Name, UID: string(run.UID)}),
				HaveField("Status.State", managedv1alpha1.OperationStateCompleted),
				HaveField("Status.Message", HavePrefix("started a sync of Application")),
			)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(ctx context.Context) managedv1alpha1.SyncStatusCode {
			return getDeployment(ctx, ns, "manual").Status.Sync.Status
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(managedv1alpha1.SyncStatusCodeSynced))

		By("changing the SyncRun's labels, or its immutable fields, starts no new sync")
		Eventually(func(ctx context.Context) error {
			cur, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Get(ctx, run.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Labels = map[string]string{"touched": "yes"}
			_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		cur, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Get(ctx, run.Name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		cur.Spec.RevisionID = oldCommit
		_, err = gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Update(ctx, cur, metav1.UpdateOptions{})
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "revisionID is immutable: %v", err)
		Consistently(func(g Gomega, ctx context.Context) {
			app := applicationG(ctx, g, manual)
			g.Expect(app.Operation).To(BeNil())
			g.Expect(app.Status.History).To(HaveLen(syncsBefore))
			g.Expect(app.Status.OperationState.StartedAt).To(Equal(st.StartedAt))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("deploys the revision a SyncRun names", func(ctx context.Context) {
		run := createSyncRun(ctx, ns, "sync-old", "manual", oldCommit)
		waitSucceeded(ctx, run)
		Expect(configMapValue(ctx, "cm-sync")).To(Equal("v1"))
		st := application(ctx, manual).Status.OperationState
		Expect(st.SyncResult.Revision).To(Equal(oldCommit))
		Expect(st.Operation.Info).To(ContainElement(&argov1alpha1.Info{Name: syncrun.OperationInfoSyncRunUID, Value: string(run.UID)}))
		Eventually(func(g Gomega, ctx context.Context) {
			s := getDeployment(ctx, ns, "manual").Status
			g.Expect(s.OperationState).NotTo(BeNil())
			g.Expect(s.OperationState.SyncResult).NotTo(BeNil())
			g.Expect(s.OperationState.SyncResult.Revision).To(Equal(oldCommit))
			// HEAD has v2: deployed at the older commit, the deployment is out of sync.
			g.Expect(s.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeOutOfSync))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("runs two SyncRuns created back to back, one after the other", func(ctx context.Context) {
		before := len(application(ctx, manual).Status.History)
		// Created in the same second, SyncRuns go by name: HEAD first, then the old commit.
		first := createSyncRun(ctx, ns, "pair-a", "manual", headSHA)
		second := createSyncRun(ctx, ns, "pair-b", "manual", oldCommit)
		waitSucceeded(ctx, first)
		waitSucceeded(ctx, second)
		Expect(configMapValue(ctx, "cm-sync")).To(Equal("v1"), "the second SyncRun ran last")

		hist := application(ctx, manual).Status.History
		Expect(hist).To(HaveLen(before+2), "two syncs: %+v", hist)
		a, b := hist[len(hist)-2], hist[len(hist)-1]
		Expect(a.Revision).To(Equal(headSHA))
		Expect(b.Revision).To(Equal(oldCommit))
		Expect(a.InitiatedBy.Username).To(Equal("gitops-service"))
		Expect(b.DeployStartedAt).NotTo(BeNil())
		Expect(b.DeployStartedAt.Before(&a.DeployedAt)).To(BeFalse(),
			"the second sync started (%v) before the first ended (%v)", b.DeployStartedAt, a.DeployedAt)
	})

	It("runs each SyncRun once when the agent is killed and restarted", func(ctx context.Context) {
		// One commit per SyncRun, each SyncRun syncing its own: the PreSync hook of commit k
		// makes a ConfigMap labelled k at every sync of it, so the ConfigMaps created count the
		// sync attempts of each SyncRun, whatever Argo CD's history keeps. They are counted as
		// they are created: Argo CD names a generateName hook after the second its operation
		// started, and replaces a hook of the same name.
		const attemptLabel = "e2e-sync-attempt"
		var hooked *managedv1alpha1.GitOpsDeployment
		type syncRun = *managedv1alpha1.GitOpsDeploymentSyncRun
		names := func(run syncRun) OmegaMatcher {
			return ContainElement(&argov1alpha1.Info{Name: syncrun.OperationInfoSyncRunUID, Value: string(run.UID)})
		}
		// appReaches waits until the Application satisfies cond, polling it quickly so as to
		// kill the agent as close as can be to the moment it first does.
		appReaches := func(what string, cond func(g Gomega, app *argov1alpha1.Application, run syncRun)) func(context.Context, syncRun) {
			return func(ctx context.Context, run syncRun) {
				GinkgoHelper()
				Eventually(func(g Gomega, ctx context.Context) { cond(g, applicationG(ctx, g, hooked), run) }).
					WithContext(ctx).WithTimeout(time.Minute).WithPolling(5*time.Millisecond).Should(Succeed(), what)
			}
		}
		syncEnded := appReaches("the sync to end", func(g Gomega, app *argov1alpha1.Application, run syncRun) {
			g.Expect(app.Status.OperationState).NotTo(BeNil())
			g.Expect(app.Status.OperationState.Operation.Info).To(names(run))
			g.Expect(app.Status.OperationState.Phase.Completed()).To(BeTrue())
		})
		// Where the agent is killed in the handling of each SyncRun: at, once the SyncRun is
		// created (nil: at once); it is started again at once, or once downUntil returns.
		kills := []struct {
			what          string
			at, downUntil func(context.Context, syncRun)
		}{
			{"as the SyncRun is created", nil, nil},
			{"20ms after the SyncRun is created", func(context.Context, syncRun) { time.Sleep(20 * time.Millisecond) }, nil},
			{"once it has asked Argo CD for a refresh", appReaches("the refresh", func(g Gomega, app *argov1alpha1.Application, run syncRun) {
				g.Expect(app.Annotations).To(HaveKeyWithValue(syncrun.AnnotationSyncRunRefresh, string(run.UID)))
			}), nil},
			{"once it has set the Application's operation", appReaches("the operation", func(g Gomega, app *argov1alpha1.Application, run syncRun) {
				g.Expect(app.Operation).NotTo(BeNil())
				g.Expect(app.Operation.Info).To(names(run))
			}), nil},
			{"while the sync runs, until it has ended", appReaches("the sync to run", func(g Gomega, app *argov1alpha1.Application, run syncRun) {
				g.Expect(app.Status.OperationState).NotTo(BeNil())
				g.Expect(app.Status.OperationState.Operation.Info).To(names(run))
				g.Expect(string(app.Status.OperationState.Phase)).To(Equal("Running"))
			}), syncEnded},
			{"as soon as the sync has ended", syncEnded, nil},
		}

		dir := GinkgoT().TempDir()
		var revisions []string
		for k := range kills {
			files := map[string]string{
				"hooked/cm.yaml": configMap("cm-hooked", strconv.Itoa(k)),
				"hooked/hook.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: attempt-\n"+
					"  labels:\n    %s: \"%d\"\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n", attemptLabel, k),
			}
			if k == 0 {
				hookedRepo := "file://" + gitRepository(dir, files)
				revisions = append(revisions, gitIn(dir, "rev-parse", "HEAD"))
				hooked = createDeploymentOfType(ctx, ns, "hooked", hookedRepo, "hooked", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
				continue
			}
			revisions = append(revisions, gitCommit(dir, files))
		}
		Eventually(func(g Gomega, ctx context.Context) { applicationG(ctx, g, hooked) }).
			WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		hooks := kube.CoreV1().ConfigMaps(ns)
		list, err := hooks.List(ctx, metav1.ListOptions{LabelSelector: attemptLabel})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(BeEmpty())
		attempts := watchHookAttempts(ctx, hooks, attemptLabel, list.ResourceVersion)

		DeferCleanup(restartIfKilled, "agent")
		var runs []*managedv1alpha1.GitOpsDeploymentSyncRun
		for k, kill := range kills {
			By(fmt.Sprintf("killing the agent %s (SyncRun %d)", kill.what, k))
			run := createSyncRun(ctx, ns, fmt.Sprintf("killed-%d", k), "hooked", revisions[k])
			runs = append(runs, run)
			if kill.at != nil {
				kill.at(ctx, run)
			}
			killStackProcess("agent")
			if kill.downUntil != nil {
				kill.downUntil(ctx, run)
			}
			startStackProcess("agent")
			waitSucceeded(ctx, run)
		}
		Expect(configMapValue(ctx, "cm-hooked")).To(Equal(strconv.Itoa(len(kills) - 1)))

		By("counting the sync attempts and the Operations of each SyncRun")
		app := application(ctx, hooked)
		wantAttempts := map[string]int{}
		wantOps := map[string][]string{}
		for k := range runs {
			wantAttempts[strconv.Itoa(k)] = 1
			wantOps[strconv.Itoa(k)] = []string{
				"Completed: requested a refresh of Application " + app.Name + " (1 attempt)",
				"Completed: started a sync of Application " + app.Name + " (1 attempt)",
			}
		}
		// opsOf is what the Operations of each SyncRun record, attempts included.
		opsOf := func(g Gomega, ctx context.Context) map[string][]string {
			ops, err := gitops.ManagedGitopsV1alpha1().Operations(argoNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			got := map[string][]string{}
			for k, run := range runs {
				for _, op := range ops.Items {
					// A nudge (syncrun-<uid>-nudge) says Argo CD was slow to start the sync, not
					// that the agent did anything twice.
					if op.Spec.Source.UID == string(run.UID) && !strings.HasSuffix(op.Name, "-nudge") {
						got[strconv.Itoa(k)] = append(got[strconv.Itoa(k)],
							fmt.Sprintf("%s: %s (%d attempt)", op.Status.State, op.Status.Message, op.Status.Attempts))
					}
				}
				sort.Strings(got[strconv.Itoa(k)])
			}
			return got
		}
		// Operations are recorded after the fact, by a goroutine of the agent.
		Eventually(opsOf).WithContext(ctx).WithTimeout(30*time.Second).Should(Equal(wantOps), "the Operations of each SyncRun")
		Consistently(func(g Gomega, ctx context.Context) {
			g.Expect(attempts.count()).To(Equal(wantAttempts), "sync attempts (PreSync hooks run), by SyncRun")
			g.Expect(opsOf(g, ctx)).To(Equal(wantOps), "the Operations of each SyncRun")
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		hist := app.Status.History
		var synced []string
		for _, h := range hist {
			synced = append(synced, h.Revision)
		}
		Expect(synced).To(Equal(revisions), "Argo CD's history: one sync per SyncRun, in order")
	})

	It("refuses a SyncRun against an automated deployment", func(ctx context.Context) {
		createDeploymentOfType(ctx, ns, "auto", repoURL, "auto", managedv1alpha1.GitOpsDeploymentSpecTypeAutomated)
		run := createSyncRun(ctx, ns, "sync-auto", "auto", "")
		Eventually(func(g Gomega, ctx context.Context) {
			c := syncRunCondition(ctx, g, ns, run.Name)
			g.Expect(c).NotTo(BeNil())
			g.Expect(*c).To(syncRunConditionIs(managedv1alpha1.GitOpsConditionStatusTrue, managedv1alpha1.SyncRunReasonErrorOccurred,
				"invalid GitOpsDeploymentSyncRun 'sync-auto'. Syncing a GitOpsDeployment with Automated sync policy is not allowed"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		// Argo CD's own automated sync is left alone, and was not initiated by the agent.
		waitSyncedHealthy(ctx, ns, "auto", "cm-auto")
		st := application(ctx, getDeployment(ctx, ns, "auto")).Status.OperationState
		Expect(st.Operation.InitiatedBy.Automated).To(BeTrue())
		Expect(st.Operation.Info).To(BeEmpty())
	})

	It("terminates the running sync of a SyncRun that is deleted", func(ctx context.Context) {
		slow := createDeploymentOfType(ctx, ns, "slow", repoURL, "slow", managedv1alpha1.GitOpsDeploymentSpecTypeManual)
		run := createSyncRun(ctx, ns, "sync-slow", "slow", "")
		By("waiting for the first wave to be applied and the sync to wait on its health")
		Eventually(func(g Gomega, ctx context.Context) {
			app := applicationG(ctx, g, slow)
			g.Expect(app.Operation).NotTo(BeNil())
			st := app.Status.OperationState
			g.Expect(st).NotTo(BeNil())
			g.Expect(string(st.Phase)).To(Equal("Running"))
			g.Expect(st.Operation.Info).To(ContainElement(&argov1alpha1.Info{Name: syncrun.OperationInfoSyncRunUID, Value: string(run.UID)}))
			_, err := kube.CoreV1().Pods(ns).Get(ctx, slowPod, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Consistently(func(ctx context.Context) string {
			return configMapValue(ctx, slowConfig)
		}).WithContext(ctx).WithTimeout(3*time.Second).Should(Equal("<none>"), "the second wave waits for the first")

		Expect(gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Delete(ctx, run.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			app := applicationG(ctx, g, slow)
			g.Expect(app.Operation).To(BeNil())
			st := app.Status.OperationState
			g.Expect(string(st.Phase)).To(Equal("Failed"))
			g.Expect(strings.ToLower(st.Message)).To(ContainSubstring("terminated"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Consistently(func(ctx context.Context) string {
			return configMapValue(ctx, slowConfig)
		}).WithContext(ctx).WithTimeout(3*time.Second).Should(Equal("<none>"), "a terminated sync applies no later wave")
		Eventually(func(g Gomega, ctx context.Context) {
			ops, err := gitops.ManagedGitopsV1alpha1().Operations(argoNamespace).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ops.Items).To(ContainElement(And(
				HaveField("Spec.Source", managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun", Namespace: ns, Name: run.Name, UID: string(run.UID)}),
				HaveField("Status.Message", HavePrefix("terminated the sync of Application")),
			)), "the termination is recorded")
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// syncRunConditionIs matches a SyncRun condition's status, reason and message.
func syncRunConditionIs(wantStatus managedv1alpha1.GitOpsConditionStatus, wantReason managedv1alpha1.SyncRunReasonType, wantMsg string) OmegaMatcher {
	return WithTransform(func(c managedv1alpha1.GitOpsDeploymentSyncRunCondition) []string {
		return []string{string(c.Status), string(c.Reason), c.Message}
	}, Equal([]string{string(wantStatus), string(wantReason), wantMsg}))
}

func createDeploymentOfType(ctx context.Context, ns, name, repoURL, path string, typ managedv1alpha1.GitOpsDeploymentSpecType) *managedv1alpha1.GitOpsDeployment {
	GinkgoHelper()
	return createDeploymentWithSpec(ctx, ns, name, managedv1alpha1.GitOpsDeploymentSpec{
		Source: managedv1alpha1.ApplicationSource{RepoURL: repoURL, Path: path},
		Type:   typ,
	}, false)
}

func createSyncRun(ctx context.Context, ns, name, deployment, revision string) *managedv1alpha1.GitOpsDeploymentSyncRun {
	GinkgoHelper()
	created, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Create(ctx, &managedv1alpha1.GitOpsDeploymentSyncRun{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       managedv1alpha1.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: deployment, RevisionID: revision},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(created.UID).NotTo(Equal(types.UID("")))
	return created
}

// syncRunCondition is the SyncRun's ErrorOccurred condition, nil while it has none.
func syncRunCondition(ctx context.Context, g Gomega, ns, name string) *managedv1alpha1.GitOpsDeploymentSyncRunCondition {
	run, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(ns).Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for i := range run.Status.Conditions {
		if run.Status.Conditions[i].Type == managedv1alpha1.GitOpsDeploymentSyncRunConditionErrorOccurred {
			return &run.Status.Conditions[i]
		}
	}
	return nil
}

// gitIn runs git in the work tree gitRepository made under dir and returns its trimmed output.
func gitIn(dir string, args ...string) string {
	GinkgoHelper()
	cmd := exec.Command("git", append([]string{"-C", filepath.Join(dir, "work")}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.com",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.com")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// gitCommit commits files on top of main of the repository gitRepository made under dir,
// pushes, and returns the new commit's SHA.
func gitCommit(dir string, files map[string]string) string {
	GinkgoHelper()
	return gitCommitOn(dir, "main", files)
}

// gitCommitOn commits files on the branch checked out in the work tree and pushes it as branch.
func gitCommitOn(dir, branch string, files map[string]string) string {
	GinkgoHelper()
	for path, content := range files {
		full := filepath.Join(dir, "work", path)
		Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		Expect(os.WriteFile(full, []byte(content), 0o644)).To(Succeed())
	}
	gitIn(dir, "add", ".")
	gitIn(dir, "commit", "-q", "-m", "change")
	gitIn(dir, "push", "-q", filepath.Join(dir, "repo.git"), branch)
	return gitIn(dir, "rev-parse", "HEAD")
}

// hookAttempts counts the hook ConfigMaps created, by the value of their label: every one, even
// one deleted, or replaced by another of the same name, since it was created.
type hookAttempts struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
}

func (h *hookAttempts) count() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := map[string]int{}
	for v, uids := range h.uids {
		n[v] = len(uids)
	}
	return n
}

// watchHookAttempts follows the creations of the ConfigMaps labelled label from rv on, until
// ctx is done.
func watchHookAttempts(ctx context.Context, client typedcorev1.ConfigMapInterface, label, rv string) *hookAttempts {
	GinkgoHelper()
	h := &hookAttempts{uids: map[string]map[types.UID]bool{}}
	w, err := watchtools.NewRetryWatcher(rv, &cache.ListWatch{WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = label
		return client.Watch(ctx, opts)
	}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok || ctx.Err() != nil {
					return
				}
				if ev.Type == watch.Error {
					// Fails the spec: without every creation the counts mean nothing.
					Fail(fmt.Sprintf("watching the hook ConfigMaps: %v", apierrors.FromObject(ev.Object)))
				}
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok || ev.Type != watch.Added {
					continue
				}
				h.mu.Lock()
				v := cm.Labels[label]
				if h.uids[v] == nil {
					h.uids[v] = map[types.UID]bool{}
				}
				h.uids[v][cm.UID] = true
				h.mu.Unlock()
			}
		}
	}()
	return h
}
