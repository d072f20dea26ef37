//go:build e2e

package e2e

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("artifacts/deploy", func() {
	It("renders with kustomize and is accepted by the kube-apiserver", func() {
		out := must("admin", "kustomize", "../../artifacts/deploy")
		for _, kind := range []string{"kind: Deployment", "kind: PodDisruptionBudget", "kind: APIService", "kind: Service",
			"kind: ClusterRole", "aggregate-to-edit", "kind: Secret"} {
			Expect(out).To(ContainSubstring(kind))
		}
		must("admin", "apply", "--dry-run=server", "-k", "../../artifacts/deploy")
	})
})

var _ = Describe("artifacts/agent-deploy", func() {
	It("runs two leader-electing agents bound to the pod's IP", func() {
		out := must("admin", "kustomize", "../../artifacts/agent-deploy")
		for _, want := range []string{"kind: Deployment", "replicas: 2", "kind: PodDisruptionBudget", "kind: ArgoCDInstance",
			"--instance=main", "--argocd-namespace=gitops-service-argocd", "--metrics-bind-address=$(POD_IP):8085",
			"--leader-elect-identity=$(POD_NAME)", "image: ghcr.io/gitops-service/gitops-agent:v0.1.0",
			"readOnlyRootFilesystem: true", "runAsNonRoot: true"} {
			Expect(out).To(ContainSubstring(want))
		}
	})
})

// Every kustomization under artifacts/ is applied, as a dry run, to the stack's cluster, which
// has the namespaces they use (gitops-service, gitops-service-argocd) and the ArgoCDInstance
// "main" that artifacts/agent-deploy declares. None is left out: each is meant for a cluster
// like the stack's.
var _ = Describe("artifacts kustomizations", func() {
	It("are all accepted by the kube-apiserver", func() {
		found, err := filepath.Glob("../../artifacts/*/kustomization.yaml")
		Expect(err).NotTo(HaveOccurred())
		var dirs []string
		for _, f := range found {
			dirs = append(dirs, filepath.Dir(f))
		}
		// The ones this change adds and relies on, so that the glob cannot quietly find fewer.
		Expect(dirs).To(ContainElements("../../artifacts/deploy", "../../artifacts/agent-deploy",
			"../../artifacts/argocd-instance", "../../artifacts/argocd-local", "../../artifacts/agent"))
		for _, dir := range dirs {
			By("kubectl apply --dry-run=server -k " + dir)
			must("admin", "apply", "--dry-run=server", "-k", dir)
		}
	})
})
