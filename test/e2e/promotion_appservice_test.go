//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotionrun"
	appstudioclient "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/typed/appstudio/v1alpha1"
)

// Manual promotion with application-service as it is. The spec plays application-service's
// SnapshotEnvironmentBinding controller (controllers/applicationsnapshotenvironmentbinding_controller.go
// and its _conditions.go, as of its last version that generated repositories): it reconciles a
// binding when its generation changes, generates each component's overlay with the Snapshot's
// image, commits and pushes only if that changed anything, writes status.components with an
// Update of the status (resourceVersion of its read), and then its GitOpsResourcesGenerated
// condition with meta.SetStatusCondition, without observedGeneration, in a merge patch of the
// status built from a fresh read (SetConditionAndUpdateCR). It never sets observedGeneration.
//
// One thing differs: the branch it reports is the commit (application-service reports the
// branch's name), so that Argo CD deploys a new commit when the GitOpsDeployment changes rather
// than at its next poll of the branch, minutes later.
var _ = Describe("PromotionRun with application-service as it is", Ordered, func() {
	const app, env, component = "store", "dev", "web"
	var (
		ns, dir, repoURL string
		binding          = promotionrun.BindingName(app, env)
		overlay          = filepath.Join("components", component, "overlays", env)
	)

	BeforeAll(func(ctx context.Context) {
		dir = GinkgoT().TempDir()
		repoURL = "file://" + gitRepository(dir, map[string]string{"README.md": "gitops\n"})
		ns = fmt.Sprintf("e2e-appservice-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)

		createApplicationWithManualEnvironments(ctx, ns, app, "Store", map[string]string{env: "Dev"})
		studio := gitops.AppStudioV1alpha1()
		// snap-3 and snap-4 are new Snapshots of snap-2's image: their repository is snap-2's,
		// commit and all.
		for snap, tag := range map[string]string{"snap-1": "1", "snap-2": "2", "snap-3": "2", "snap-4": "2"} {
			_, err := studio.Snapshots(ns).Create(ctx, &appstudiov1alpha1.Snapshot{
				ObjectMeta: metav1.ObjectMeta{Name: snap},
				Spec: appstudiov1alpha1.SnapshotSpec{Application: app,
					Components: []appstudiov1alpha1.SnapshotComponent{{Name: component, ContainerImage: "registry.invalid/web:" + tag}}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
	})

	// generateOverlay is the GitOps generator: the component's overlay for image, committed and
	// pushed only when it changed; the commit is the branch's head either way.
	generateOverlay := func(image string) string {
		GinkgoHelper()
		full := filepath.Join(dir, "work", overlay, "cm.yaml")
		Expect(os.MkdirAll(filepath.Dir(full), 0o755)).To(Succeed())
		Expect(os.WriteFile(full, []byte(configMap("cm-web", image)), 0o644)).To(Succeed())
		gitIn(dir, "add", ".")
		if err := exec.Command("git", "-C", filepath.Join(dir, "work"), "diff", "--cached", "--quiet").Run(); err != nil {
			gitIn(dir, "commit", "-q", "-m", "Generate "+env+" environment overlays for component "+component)
			gitIn(dir, "push", "-q", filepath.Join(dir, "repo.git"), "main")
		}
		return gitIn(dir, "rev-parse", "HEAD")
	}

	bindings := func() appstudioclient.SnapshotEnvironmentBindingInterface {
		return gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
	}

	// setConditionAndUpdateCR is application-service's SetConditionAndUpdateCR.
	setConditionAndUpdateCR := func(ctx context.Context, seb *appstudiov1alpha1.SnapshotEnvironmentBinding, createError error) {
		GinkgoHelper()
		current, err := bindings().Get(ctx, seb.Name, metav1.GetOptions{})
		if err != nil {
			return
		}
		original, err := json.Marshal(current)
		Expect(err).NotTo(HaveOccurred())
		condition := metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionTrue, Reason: "OK",
			Message: "GitOps repository sync successful"}
		if createError != nil {
			condition = metav1.Condition{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionFalse, Reason: "GenerateError",
				Message: fmt.Sprintf("GitOps repository sync failed: %v", createError)}
		}
		meta.SetStatusCondition(&current.Status.GitOpsRepoConditions, condition)
		current.Status.Components = seb.Status.Components
		modified, err := json.Marshal(current)
		Expect(err).NotTo(HaveOccurred())
		// client.MergeFrom: a JSON merge patch from the read to the change, without resourceVersion.
		patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, original)
		Expect(err).NotTo(HaveOccurred())
		_, _ = bindings().Patch(ctx, seb.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	}

	// reconcile is one pass of application-service's Reconcile; lastGeneration is the generation
	// it was last triggered at (GenerationChangedPredicate), which it waits to change first.
	lastGeneration := int64(0)
	reconcile := func(ctx context.Context) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			seb, err := bindings().Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(seb.Generation).To(BeNumerically(">", lastGeneration), "no new generation to reconcile")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		// Errors requeue the binding, as controller-runtime does.
		Eventually(func(g Gomega, ctx context.Context) {
			seb, err := bindings().Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			generation := seb.Generation
			required := map[string]string{"appstudio.application": seb.Spec.Application, "appstudio.environment": seb.Spec.Environment}
			if seb.Labels["appstudio.application"] == "" || seb.Labels["appstudio.environment"] == "" {
				if seb.Labels == nil {
					seb.Labels = map[string]string{}
				}
				maps.Copy(seb.Labels, required)
				seb, err = bindings().Update(ctx, seb, metav1.UpdateOptions{})
				g.Expect(err).NotTo(HaveOccurred())
			}
			_, err = gitops.AppStudioV1alpha1().Environments(ns).Get(ctx, seb.Spec.Environment, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			snapshot, err := gitops.AppStudioV1alpha1().Snapshots(ns).Get(ctx, seb.Spec.Snapshot, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for _, c := range seb.Spec.Components {
				var image string
				for _, sc := range snapshot.Spec.Components {
					if sc.Name == c.Name {
						image = sc.ContainerImage
						break
					}
				}
				g.Expect(image).NotTo(BeEmpty())
				commit := generateOverlay(image)
				// On OpenShift (no cluster type in the Environment) it keeps a route name per component.
				routeName := c.Name + "-route-e2e"
				for _, cs := range seb.Status.Components {
					if cs.Name == c.Name && cs.GeneratedRouteName != "" {
						routeName = cs.GeneratedRouteName
					}
				}
				status := appstudiov1alpha1.BindingComponentStatus{Name: c.Name, GeneratedRouteName: routeName,
					GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
						URL: repoURL, Branch: commit, Path: overlay, CommitID: commit, GeneratedResources: []string{"cm.yaml"}}}
				isNew := true
				for i := range seb.Status.Components {
					if seb.Status.Components[i].Name == status.Name {
						seb.Status.Components[i], isNew = status, false
						break
					}
				}
				if isNew {
					seb.Status.Components = append(seb.Status.Components, status)
				}
			}
			if _, err := bindings().UpdateStatus(ctx, seb, metav1.UpdateOptions{}); err != nil {
				setConditionAndUpdateCR(ctx, seb, err)
				g.Expect(err).NotTo(HaveOccurred())
			}
			setConditionAndUpdateCR(ctx, seb, nil)
			lastGeneration = generation
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}

	promote := func(ctx context.Context, name, snapshot string) {
		GinkgoHelper()
		_, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Create(ctx, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appstudiov1alpha1.PromotionRunSpec{Snapshot: snapshot, Application: app,
				ManualPromotion: appstudiov1alpha1.ManualPromotionConfiguration{TargetEnvironment: env}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	awaitPointed := func(ctx context.Context, snapshot string) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			seb, err := bindings().Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(seb.Spec.Snapshot).To(Equal(snapshot))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	}
	notComplete := func(ctx context.Context, name string) {
		GinkgoHelper()
		Consistently(func(g Gomega, ctx context.Context) {
			r, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).NotTo(Equal(appstudiov1alpha1.PromotionRunStateComplete),
				"complete before application-service generated the repository for the new Snapshot")
		}).WithContext(ctx).WithTimeout(8 * time.Second).WithPolling(time.Second).Should(Succeed())
	}
	awaitSuccess := func(ctx context.Context, name string) {
		GinkgoHelper()
		Eventually(func(g Gomega, ctx context.Context) {
			r, err := gitops.AppStudioV1alpha1().PromotionRuns(ns).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Status.State).To(Equal(appstudiov1alpha1.PromotionRunStateComplete))
			g.Expect(r.Status.CompletionResult).To(Equal(appstudiov1alpha1.PromotionRunCompleteResultSuccess))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}

	It("generates the binding, and completes once application-service has generated it and it is deployed", func(ctx context.Context) {
		promote(ctx, "first", "snap-1")
		awaitPointed(ctx, "snap-1")
		reconcile(ctx)
		awaitSuccess(ctx, "first")
		Expect(configMapValueIn(ctx, ns, "cm-web")).To(Equal("registry.invalid/web:1"))
	})

	It("does not complete on the previous Snapshot's commits, deployed, and completes on the new ones", func(ctx context.Context) {
		before, err := bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		promote(ctx, "second", "snap-2")
		awaitPointed(ctx, "snap-2")
		// Deployed, Synced and Healthy, at the commit application-service generated for snap-1.
		notComplete(ctx, "second")
		reconcile(ctx)
		after, err := bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Status.Components[0].GitOpsRepository.CommitID).NotTo(Equal(before.Status.Components[0].GitOpsRepository.CommitID))
		Expect(after.Status.GitOpsRepoConditions).To(ConsistOf(HaveField("ObservedGeneration", BeZero())))
		awaitSuccess(ctx, "second")
		Expect(configMapValueIn(ctx, ns, "cm-web")).To(Equal("registry.invalid/web:2"))
	})

	// promoteSameImages promotes snapshot, of the images deployed, and sees it complete once
	// application-service has answered, though it writes nothing new.
	promoteSameImages := func(ctx context.Context, name, snapshot string) {
		GinkgoHelper()
		before, err := bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		promote(ctx, name, snapshot)
		awaitPointed(ctx, snapshot)
		notComplete(ctx, name)
		reconcile(ctx)
		after, err := bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Status.Components).To(Equal(before.Status.Components), "the same commit, written again")
		awaitSuccess(ctx, name)
		after, err = bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		c := meta.FindStatusCondition(after.Status.GitOpsRepoConditions, "GitOpsResourcesGenerated")
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Reason).To(Equal("OK"))
	}

	It("completes a Snapshot of the same images once application-service has seen it, though it writes nothing new", func(ctx context.Context) {
		promoteSameImages(ctx, "third", "snap-3")
	})

	It("completes a Snapshot of the same images when the Snapshot deployed before has been deleted", func(ctx context.Context) {
		// Snapshots are garbage-collected: what the binding deploys is known from its record.
		seb, err := bindings().Get(ctx, binding, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(seb.Spec.Snapshot).To(Equal("snap-3"))
		Expect(seb.Annotations).To(HaveKeyWithValue("promotionrun.managed-gitops.redhat.com/pointing", ContainSubstring(`"images":`)))
		Expect(gitops.AppStudioV1alpha1().Snapshots(ns).Delete(ctx, "snap-3", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(ctx context.Context) error {
			_, err := gitops.AppStudioV1alpha1().Snapshots(ns).Get(ctx, "snap-3", metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
		promoteSameImages(ctx, "fourth", "snap-4")
		Expect(configMapValueIn(ctx, ns, "cm-web")).To(Equal("registry.invalid/web:2"))
	})
})
