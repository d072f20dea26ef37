//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	argoclient "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// The stack's repo-server renders Kustomize and Helm sources with the kustomize and helm that
// hack/build-argocd.sh builds beside Argo CD, as the upstream images do: GitOpsDeployment has
// no field for either, so Argo CD picks the tool from what the path holds (kustomization.yaml,
// Chart.yaml), and a missing tool leaves the deployment Unknown with a ComparisonError.
var _ = Describe("renderers: Kustomize and Helm sources", func() {
	var (
		argo argoclient.Interface
		ns   string
	)

	BeforeEach(func(ctx context.Context) {
		argo = argoclient.NewForConfigOrDie(adminConfig)
		ns = fmt.Sprintf("e2e-render-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
	})

	It("deploys a Kustomize overlay of a base with the overlay's prefix, labels and patch", func(ctx context.Context) {
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - settings.yaml\n",
			"base/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n" +
				"data:\n  value: from-base\n  color: blue\n",
			"overlays/dev/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
namePrefix: dev-
labels:
  - pairs:
      env: dev
patches:
  - path: settings-patch.yaml
`,
			"overlays/dev/settings-patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: from-overlay\n",
		})
		depl := createDeployment(ctx, ns, "kustomized", repoURL, "overlays/dev", true)
		waitSyncedHealthy(ctx, ns, "kustomized", "dev-settings")
		expectSourceType(ctx, argo, depl, "Kustomize")

		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "dev-settings", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cm.Data).To(Equal(map[string]string{"value": "from-overlay", "color": "blue"}),
			"the overlay's patch changes value and keeps the base's color")
		Expect(cm.Labels).To(HaveKeyWithValue("env", "dev"))
		Expect(getDeployment(ctx, ns, "kustomized").Status.Resources).To(HaveLen(1),
			"the base's ConfigMap is deployed only under the overlay's name")

		deleteAndWait(ctx, ns, "kustomized", "dev-settings", true)
	})

	It("deploys a Helm chart with its values file, which overrides a value of its dependency", func(ctx context.Context) {
		// shop depends on greeter through a file:// repository and ships no charts/: Argo CD runs
		// `helm dependency build` first, which needs helm's cache and config folders.
		repoURL := "file://" + gitRepository(GinkgoT().TempDir(), map[string]string{
			"charts/greeter/Chart.yaml":  "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
			"charts/greeter/values.yaml": "greeting: hello\ncolor: blue\n",
			"charts/greeter/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  greeting: {{ .Values.greeting | quote }}
  color: {{ .Values.color | quote }}
`,
			"shop/Chart.yaml": `apiVersion: v2
name: shop
version: 1.2.3
dependencies:
  - name: greeter
    version: 0.1.0
    repository: file://../charts/greeter
`,
			"shop/values.yaml": "value: from-values\nreplicas: 3\ngreeter:\n  greeting: hello from shop\n",
			"shop/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
data:
  value: {{ .Values.value | quote }}
  replicas: {{ .Values.replicas | quote }}
`,
		})
		depl := createDeployment(ctx, ns, "charted", repoURL, "shop", true)
		waitSyncedHealthy(ctx, ns, "charted", "shop")
		expectSourceType(ctx, argo, depl, "Helm")

		shop, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "shop", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(shop.Data).To(Equal(map[string]string{"value": "from-values", "replicas": "3"}))
		Expect(shop.Labels).To(HaveKeyWithValue("helm.sh/chart", "shop-1.2.3"))
		greeter, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "greeter", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(greeter.Data).To(Equal(map[string]string{"greeting": "hello from shop", "color": "blue"}),
			"the parent's values override greeting and keep the dependency's default color")

		deleteAndWait(ctx, ns, "charted", "shop", true)
		waitConfigMapGone(ctx, ns, "greeter", "the dependency's ConfigMap is deleted with the deployment")
	})
})

// expectSourceType checks that Argo CD rendered the deployment's Application with tool.
func expectSourceType(ctx context.Context, argo argoclient.Interface, depl *managedv1alpha1.GitOpsDeployment, tool string) {
	GinkgoHelper()
	app, err := argo.ArgoprojV1alpha1().Applications(argoNamespace).Get(ctx, argocd.ApplicationName(depl.UID), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(string(app.Status.SourceType)).To(Equal(tool))
}

// A SnapshotEnvironmentBinding whose components point at the Kustomize overlays that
// application-service generates in the application's GitOps repository: per component a base
// (components/<component>/base: deployment.yaml, service.yaml when the component has a target
// port, kustomization.yaml) and per environment an overlay (components/<component>/overlays/<env>:
// kustomization.yaml with resources [../../base] and patches [deployment-patch.yaml], the patch
// setting the snapshot's image and the binding's env), with a parent kustomization.yaml at the
// root. The files are laid out and spelled as application-service's generator writes them
// (sigs.k8s.io/yaml of the typed objects), with one change: the stack has no nodes, so the base
// asks for no replicas where application-service asks for one, or no Deployment could become
// Healthy.
var _ = Describe("renderers: SnapshotEnvironmentBinding of application-service's Kustomize overlays", Ordered, func() {
	const app, env, binding = "store", "staging", "store-staging"
	components := []string{"web", "worker"}
	var ns, repoURL, commit string

	BeforeAll(func(ctx context.Context) {
		ns = fmt.Sprintf("e2e-overlays-%d", time.Now().UnixNano()%100000)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		// First: the binding would re-create its GitOpsDeployments as they are deleted.
		DeferCleanup(func(ctx context.Context) {
			Expect(gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})).To(Succeed())
		})

		files := map[string]string{"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nbases:\n" +
			"- components/web/base\n- components/worker/base\nkind: Kustomization\n"}
		for _, c := range components {
			port := 0
			if c == "web" {
				port = 8080
			}
			for path, content := range generatedComponent(app, c, env, port, "registry.invalid/"+c+":snap-1",
				[]appstudiov1alpha1.EnvVarPair{{Name: "STORE_ENV", Value: env}}) {
				files[path] = content
			}
		}
		dir := GinkgoT().TempDir()
		repoURL = "file://" + gitRepository(dir, files)
		commit = gitIn(dir, "rev-parse", "HEAD")

		createApplicationWithManualEnvironments(ctx, ns, app, "Store", map[string]string{env: "Staging"})
		studio := gitops.AppStudioV1alpha1()
		snap := &appstudiov1alpha1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-1"}, Spec: appstudiov1alpha1.SnapshotSpec{Application: app}}
		for _, c := range components {
			snap.Spec.Components = append(snap.Spec.Components, appstudiov1alpha1.SnapshotComponent{Name: c, ContainerImage: "registry.invalid/" + c + ":snap-1"})
		}
		_, err := studio.Snapshots(ns).Create(ctx, snap, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("deploys every component's overlay, Synced and Healthy, with the overlay's patch applied", func(ctx context.Context) {
		b := &appstudiov1alpha1.SnapshotEnvironmentBinding{
			ObjectMeta: metav1.ObjectMeta{Name: binding},
			Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: "snap-1"},
		}
		for _, c := range components {
			b.Spec.Components = append(b.Spec.Components, appstudiov1alpha1.BindingComponent{Name: c,
				Configuration: appstudiov1alpha1.BindingComponentConfiguration{Env: []appstudiov1alpha1.EnvVarPair{{Name: "STORE_ENV", Value: env}}}})
		}
		bindings := gitops.AppStudioV1alpha1().SnapshotEnvironmentBindings(ns)
		_, err := bindings.Create(ctx, b, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("writing the binding's status as application-service does once it has pushed the overlays")
		Eventually(func(g Gomega, ctx context.Context) {
			b, err := bindings.Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			b.Status.Components = nil
			for _, c := range components {
				b.Status.Components = append(b.Status.Components, appstudiov1alpha1.BindingComponentStatus{Name: c,
					GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
						URL: repoURL, Branch: "main", Path: "components/" + c + "/overlays/" + env,
						GeneratedResources: []string{"deployment-patch.yaml"}, CommitID: commit}})
			}
			meta.SetStatusCondition(&b.Status.GitOpsRepoConditions, metav1.Condition{Type: "GitOpsResourcesGenerated",
				Status: metav1.ConditionTrue, Reason: "GenerateSuccess", ObservedGeneration: b.Generation})
			_, err = bindings.UpdateStatus(ctx, b, metav1.UpdateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())

		deployments := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns)
		for _, c := range components {
			name := snapshotenvironmentbinding.DeploymentName(binding, app, env, c)
			Eventually(func(g Gomega, ctx context.Context) {
				d, err := deployments.Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(d.Spec.Source.Path).To(Equal("components/" + c + "/overlays/" + env))
				g.Expect(d.Status.Sync.Status).To(Equal(managedv1alpha1.SyncStatusCodeSynced), "status: %+v", d.Status)
				g.Expect(d.Status.Health.Status).To(Equal(managedv1alpha1.HealthStatusCodeHealthy), "status: %+v", d.Status)
				g.Expect(d.Status.Resources).To(ContainElement(And(HaveField("Kind", "Deployment"), HaveField("Name", c),
					HaveField("Status", managedv1alpha1.SyncStatusCodeSynced))))
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

			By("finding the overlay's content in the deployed " + c)
			dep, err := kube.AppsV1().Deployments(ns).Get(ctx, c, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(dep.Labels).To(HaveKeyWithValue("app.kubernetes.io/part-of", app), "from the base")
			Expect(dep.Labels).To(HaveKeyWithValue("app.kubernetes.io/created-by", "application-service"))
			Expect(dep.Spec.Template.Spec.Containers).To(HaveLen(1))
			container := dep.Spec.Template.Spec.Containers[0]
			Expect(container.Image).To(Equal("registry.invalid/"+c+":snap-1"), "the overlay's patch replaces the base's build image")
			Expect(container.ImagePullPolicy).To(Equal(corev1.PullAlways), "from the base, kept by the patch")
			Expect(container.Env).To(Equal([]corev1.EnvVar{{Name: "STORE_ENV", Value: env}}), "from the overlay's patch")
		}
		svc, err := kube.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the web component's base has a Service")
		Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Port", int32(8080))))

		Eventually(func(g Gomega, ctx context.Context) {
			b, err := bindings.Get(ctx, binding, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := meta.FindStatusCondition(b.Status.ComponentDeploymentConditions, "AllComponentsDeployed")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Message).To(Equal("2 of 2 components deployed"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})
})

// generatedComponent is what application-service writes in the GitOps repository for a
// component (its gitops generator's Generate and GenerateOverlays, Kubernetes flavour: no
// Route): the base from the Component, and the environment's overlay from the binding.
func generatedComponent(app, component, env string, targetPort int, image string, envVars []appstudiov1alpha1.EnvVarPair) map[string]string {
	labels := fmt.Sprintf(`    app.kubernetes.io/created-by: application-service
    app.kubernetes.io/instance: %[1]s
    app.kubernetes.io/managed-by: kustomize
    app.kubernetes.io/name: %[1]s
    app.kubernetes.io/part-of: %[2]s
`, component, app)
	var ports, baseResources string
	if targetPort != 0 {
		ports = fmt.Sprintf(`        livenessProbe:
          httpGet:
            path: /
            port: %[1]d
          initialDelaySeconds: 10
          periodSeconds: 10
        ports:
        - containerPort: %[1]d
        readinessProbe:
          initialDelaySeconds: 10
          periodSeconds: 10
          tcpSocket:
            port: %[1]d
`, targetPort)
		baseResources = "- service.yaml\n"
	}
	files := map[string]string{
		"components/" + component + "/base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"resources:\n- deployment.yaml\n" + baseResources,
		"components/" + component + "/base/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  labels:
%[1]s  name: %[2]s
spec:
  replicas: 0
  revisionHistoryLimit: 0
  selector:
    matchLabels:
      app.kubernetes.io/instance: %[2]s
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
      labels:
        app.kubernetes.io/instance: %[2]s
    spec:
      containers:
      - image: quay.io/redhat-appstudio/user-workload:build-%[2]s
        imagePullPolicy: Always
        name: container-image
%[3]s        resources: {}
status: {}
`, labels, component, ports),
	}
	if targetPort != 0 {
		files["components/"+component+"/base/service.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  creationTimestamp: null
  labels:
%[1]s  name: %[2]s
spec:
  ports:
  - port: %[3]d
    targetPort: %[3]d
  selector:
    app.kubernetes.io/instance: %[2]s
status:
  loadBalancer: {}
`, labels, component, targetPort)
	}
	var envYAML strings.Builder
	if len(envVars) > 0 {
		envYAML.WriteString("      - env:\n")
		for _, e := range envVars {
			fmt.Fprintf(&envYAML, "        - name: %s\n          value: %s\n", e.Name, e.Value)
		}
		envYAML.WriteString("        image: " + image + "\n")
	} else {
		envYAML.WriteString("      - image: " + image + "\n")
	}
	overlay := "components/" + component + "/overlays/" + env + "/"
	files[overlay+"kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"patches:\n- path: deployment-patch.yaml\nresources:\n- ../../base\n"
	files[overlay+"deployment-patch.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  creationTimestamp: null
  name: %s
spec:
  selector: {}
  strategy: {}
  template:
    metadata:
      creationTimestamp: null
    spec:
      containers:
%s        name: container-image
        resources: {}
status: {}
`, component, envYAML.String())
	return files
}
