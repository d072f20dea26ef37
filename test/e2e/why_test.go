//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// stuckDeployment is a Deployment that cannot become ready here: the stack has no kubelet, so its
// pod never runs, and after 5 s kube-controller-manager's deployment controller marks it
// ProgressDeadlineExceeded, which Argo CD reports as Degraded.
const stuckDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  progressDeadlineSeconds: 5
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
`

var _ = Describe("ResourcesReady", func() {
	It("names the resource that is not healthy with Argo CD's reason, and clears once Git is fixed", func(ctx context.Context) {
		ns := fmt.Sprintf("e2e-why-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		dir := GinkgoT().TempDir()
		repo := "file://" + gitRepository(dir, map[string]string{
			"app/deployment.yaml": stuckDeployment, "app/cm.yaml": configMap("why-cm", "v1"),
		})
		broken := gitIn(dir, "rev-parse", "HEAD")
		fixed := gitCommit(dir, map[string]string{"app/deployment.yaml": configMap("why-web", "replaced")})

		deployments := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
		_, err := deployments.Create(ctx, &managedv1alpha1.GitOpsDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "why"},
			Spec: managedv1alpha1.GitOpsDeploymentSpec{
				Source: managedv1alpha1.ApplicationSource{RepoURL: repo, Path: "app", TargetRevision: broken},
				Type:   managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		ready := func(g Gomega, ctx context.Context) *managedv1alpha1.GitOpsDeploymentCondition {
			d, err := deployments.Get(ctx, "why", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			for i := range d.Status.Conditions {
				if d.Status.Conditions[i].Type == managedv1alpha1.GitOpsDeploymentConditionResourcesReady {
					return &d.Status.Conditions[i]
				}
			}
			return nil
		}
		By("the condition names the Deployment and why")
		start := time.Now()
		Eventually(func(g Gomega, ctx context.Context) {
			c := ready(g, ctx)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(managedv1alpha1.GitOpsConditionStatusFalse))
			g.Expect(c.Reason).To(Equal(managedv1alpha1.GitOpsDeploymentReasonResourcesNotReady))
			g.Expect(c.Message).To(Equal(`1 of 2 resources not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline`))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		GinkgoWriter.Printf("named within %s of the deployment's creation (the progress deadline is 5 s)\n", time.Since(start).Round(time.Second))
		must("admin", "-n", ns, "wait", "gitopsdeployment/why", "--for=condition=ResourcesReady=False", "--timeout=5s")

		By("it came from the resource tree in Argo CD's Redis: the stack's Argo CD keeps no resource health in the Application, as 3.x")
		d, err := deployments.Get(ctx, "why", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		app, err := argoclient.NewForConfigOrDie(adminConfig).ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(d.UID), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(app.Status.ResourceHealthSource).To(Equal(argov1alpha1.ResourceHealthLocationAppTree))
		for _, r := range app.Status.Resources {
			Expect(r.Health).To(BeNil(), "the Application's status holds the health of %s/%s", r.Kind, r.Name)
		}
		var web *managedv1alpha1.ResourceStatus
		for i := range d.Status.Resources {
			if d.Status.Resources[i].Kind == "Deployment" {
				web = &d.Status.Resources[i]
			}
		}
		Expect(web).NotTo(BeNil())
		Expect(web.Health).NotTo(BeNil())
		Expect(web.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeDegraded))

		By("it stays as it is while nothing changes: no status churn")
		first := ready(Default, ctx)
		Consistently(func(g Gomega, ctx context.Context) {
			c := ready(g, ctx)
			g.Expect(c.LastTransitionTime).To(Equal(first.LastTransitionTime))
			g.Expect(c.Message).To(Equal(first.Message))
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("fixed in Git, the condition clears")
		Eventually(func(g Gomega, ctx context.Context) {
			d, err := deployments.Get(ctx, "why", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			d.Spec.Source.TargetRevision = fixed
			_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega, ctx context.Context) {
			c := ready(g, ctx)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(managedv1alpha1.GitOpsConditionStatusTrue), "message: %s", c.Message)
			g.Expect(c.Message).To(Equal("2 resources Synced and Healthy"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})
