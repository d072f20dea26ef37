//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// An agent that lost its Leases while draining an instance (its renewals queued behind its own
// deletes in kube-apiserver's workload-low flow) stopped: artifacts/flowcontrol/flowschema.yaml
// gives the service's Lease requests the leader-election priority level. kube-apiserver says in
// two response headers which FlowSchema and priority level a request went to; each request here
// is made as the identity that makes it in the stack.
var _ = Describe("the Lease requests of the service's controllers", func() {
	type classified struct{ Status, FlowSchema, PriorityLevel string }
	// names are the FlowSchemas' and priority levels' names by UID, read once: the headers
	// give UIDs.
	var names map[string]string
	BeforeEach(func(ctx context.Context) {
		names = map[string]string{}
		schemas, err := kube.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range schemas.Items {
			names[string(o.UID)] = o.Name
		}
		levels, err := kube.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, o := range levels.Items {
			names[string(o.UID)] = o.Name
		}
	})
	// as sends one request as user and returns the names of the FlowSchema and priority level
	// kube-apiserver queued it at.
	as := func(ctx context.Context, user, method, path string, body []byte) classified {
		GinkgoHelper()
		cfg := rest.CopyConfig(adminConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		client, err := rest.HTTPClientFor(cfg)
		Expect(err).NotTo(HaveOccurred())
		req, err := http.NewRequestWithContext(ctx, method, cfg.Host+path, bytes.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		nameOf := func(header string) string {
			GinkgoHelper()
			uid := resp.Header.Get(header)
			Expect(uid).NotTo(BeEmpty(), "%s %s as %s: no %s header", method, path, user, header)
			return names[uid]
		}
		return classified{Status: resp.Status, FlowSchema: nameOf("X-Kubernetes-PF-FlowSchema-UID"),
			PriorityLevel: nameOf("X-Kubernetes-PF-PriorityLevel-UID")}
	}
	const (
		stackAgent  = "system:serviceaccount:gitops-service:gitops-agent"
		instanceSA  = "system:serviceaccount:gitops-service:gitops-agent-main"
		controllers = "system:serviceaccount:gitops-service:gitops-controllers"
		leaderQueue = "gitops-service-leader-election"
	)
	lease := func(namespace, name string) string {
		return "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases/" + name
	}

	It("renews at the leader-election priority level, apart from the agent's own requests", func(ctx context.Context) {
		By("the stack's agent reading and renewing (dry run) a Lease it holds")
		held, err := kube.CoordinationV1().Leases("gitops-service").Get(ctx, "gitops-agent-placement", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		body, err := json.Marshal(held)
		Expect(err).NotTo(HaveOccurred())
		Expect(as(ctx, stackAgent, http.MethodGet, lease("gitops-service", "gitops-agent-placement"), nil)).
			To(Equal(classified{"200 OK", leaderQueue, "leader-election"}))
		// Classified before it is stored: a renewal by the holder since the get makes this a
		// conflict, queued where the renewal was.
		Expect(as(ctx, stackAgent, http.MethodPut, lease("gitops-service", "gitops-agent-placement")+"?dryRun=All", body)).
			To(And(HaveField("FlowSchema", leaderQueue), HaveField("PriorityLevel", "leader-election")))

		By("an instance's agent on its Argo CD namespace's Lease, and the fleet's controllers on theirs")
		Expect(as(ctx, instanceSA, http.MethodGet, lease("gitops-service-argocd", "gitops-agent"), nil)).
			To(Equal(classified{"200 OK", leaderQueue, "leader-election"}))
		Expect(as(ctx, controllers, http.MethodGet, lease("gitops-service", "gitops-agent-environment"), nil)).
			To(Equal(classified{"200 OK", leaderQueue, "leader-election"}))

		By("the agent's other requests, and other ServiceAccounts' Leases, stay where they were")
		Expect(as(ctx, stackAgent, http.MethodGet, "/api/v1/namespaces/gitops-service-argocd/configmaps/argocd-cm", nil)).
			To(And(HaveField("FlowSchema", "service-accounts"), HaveField("PriorityLevel", "workload-low")))
		for _, other := range []string{"system:serviceaccount:default:default", "system:serviceaccount:gitops-service:default"} {
			Expect(as(ctx, other, http.MethodGet, lease("gitops-service", "gitops-agent-placement"), nil)).
				To(HaveField("FlowSchema", "service-accounts"), other)
		}
	})
})
