//go:build e2e

package e2e

import (
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
