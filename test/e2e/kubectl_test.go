//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// deployment is a valid GitOpsDeployment manifest of the placeholder repository.
func deployment(name, namespace string) string {
	return fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata:
  name: %s
  namespace: %s
spec:
  source:
    repoURL: %s
    path: deploy
  type: automated
`, name, namespace, placeholderRepo)
}

var _ = Describe("kubectl", func() {
	It("discovers every kind with its short names and the gitops category", func() {
		out := must("admin", "api-resources", "--api-group=appstudio.redhat.com", "-o", "wide")
		for _, want := range []string{
			`environments\s+env\s+appstudio.redhat.com/v1alpha1\s+true\s+Environment\s+\S+\s+gitops`,
			`snapshots\s+as,snapshot\s+appstudio.redhat.com/v1alpha1\s+true\s+Snapshot\s+\S+\s+gitops`,
			`snapshotenvironmentbindings\s+aseb,binding\s+appstudio.redhat.com/v1alpha1\s+true\s+SnapshotEnvironmentBinding\s+\S+\s+gitops`,
			`promotionruns\s+apr,promotion\s+appstudio.redhat.com/v1alpha1\s+true\s+PromotionRun\s+\S+\s+gitops`,
			`deploymenttargetclasses\s+appstudio.redhat.com/v1alpha1\s+false\s+DeploymentTargetClass\s+\S+\s+gitops`,
			`applications\s+hasapp,ha,app\s+appstudio.redhat.com/v1alpha1\s+true\s+Application\s+\S+\s+gitops`,
			`components\s+hascmp,hc,comp\s+appstudio.redhat.com/v1alpha1\s+true\s+Component\s+\S+\s+gitops`,
			`componentdetectionqueries\s+hcdq,compdetection\s+appstudio.redhat.com/v1alpha1\s+true\s+ComponentDetectionQuery\s+\S+\s+gitops`,
			`promotiongates\s+gate\s+appstudio.redhat.com/v1alpha1\s+true\s+PromotionGate\s+\S+\s+gitops`,
			`promotionapprovals\s+approval\s+appstudio.redhat.com/v1alpha1\s+true\s+PromotionApproval\s+\S+\s+gitops`,
			`environmentholds\s+hold\s+appstudio.redhat.com/v1alpha1\s+true\s+EnvironmentHold\s+\S+\s+gitops`,
		} {
			Expect(out).To(MatchRegexp(want))
		}
		out = must("admin", "api-resources", "--api-group=managed-gitops.redhat.com", "-o", "wide")
		Expect(out).To(MatchRegexp(`gitopsdeployments\s+managed-gitops.redhat.com/v1alpha1\s+true\s+GitOpsDeployment\s+\S+\s+gitops`))
		Expect(out).To(MatchRegexp(`gitopsdeploymentholds\s+gdhold\s+managed-gitops.redhat.com/v1alpha1\s+true\s+GitOpsDeploymentHold\s+\S+\s+gitops`))
		// Operations are internal: served, but not in the gitops category.
		Expect(out).To(MatchRegexp(`(?m)^operations\s+managed-gitops.redhat.com/v1alpha1\s+true\s+Operation\s+\S+\s*$`))
		// The audit trail: read-only (and deletable by the namespace controller), not in the category.
		Expect(out).To(MatchRegexp(`(?m)^auditentries\s+managed-gitops.redhat.com/v1alpha1\s+true\s+AuditEntry\s+delete,deletecollection,get,list,watch\s*$`))
	})

	It("applies the example objects and prints them as tables", func(ctx context.Context) {
		// As the README says, with nothing created beforehand: the examples bring their namespace.
		// They point at github.com, which this machine cannot reach: deleted again at once.
		must("admin", "apply", "-f", "../../artifacts/examples/")
		DeferCleanup(func(ctx context.Context) {
			must("admin", "delete", "-f", "../../artifacts/examples/", "--ignore-not-found", "--wait=false")
			deleteAllDeployments(ctx, "jane")
		})
		out := must("admin", "get", "gitopsdeployments", "-n", "jane")
		Expect(out).To(MatchRegexp(`NAME\s+SYNC STATUS\s+HEALTH STATUS\s+AGE`))
		Expect(out).To(ContainSubstring("managed-environment-gitops-depl"))

		out = must("admin", "get", "gitops", "-n", "jane")
		for _, kind := range []string{"gitopsdeployment.managed-gitops.redhat.com/", "environment.appstudio.redhat.com/",
			"snapshotenvironmentbinding.appstudio.redhat.com/", "gitopsdeploymentmanagedenvironment.managed-gitops.redhat.com/"} {
			Expect(out).To(ContainSubstring(kind))
		}
		Expect(out).NotTo(ContainSubstring("operation.managed-gitops.redhat.com/"))

		// "binding", the original's other short name, loses to the core bindings resource in kubectl.
		out = must("admin", "get", "aseb", "-n", "jane")
		Expect(out).To(MatchRegexp(`NAME\s+APPLICATION\s+ENVIRONMENT\s+SNAPSHOT\s+DEPLOYED\s+AGE`))
	})

	It("rejects invalid objects with the field path, and stores nothing", func(ctx context.Context) {
		ns := tenantA
		bad := strings.Replace(deployment("invalid-path", ns), "path: deploy", "path: /", 1)
		stderr := fails("admin", bad, "apply", "-f", "-")
		Expect(stderr).To(ContainSubstring(`The GitOpsDeployment "invalid-path" is invalid: spec.source.path: Invalid value: "/"`))
		_, _, err := run("admin", "", "get", "gitopsdeployment", "invalid-path", "-n", ns)
		Expect(err).To(HaveOccurred())

		unknown := deployment("unknown-field", ns) + "  bogus: true\n"
		stderr = fails("admin", unknown, "apply", "--validate=strict", "-f", "-")
		Expect(stderr).To(ContainSubstring(`unknown field "spec.bogus"`))
	})

	It("refuses objects in a namespace that does not exist", func() {
		stderr := fails("admin", deployment("orphan", "e2e-no-such-namespace"), "create", "-f", "-")
		Expect(stderr).To(ContainSubstring(`namespaces "e2e-no-such-namespace" not found`))
	})

	It("streams changes to kubectl get --watch", func(ctx context.Context) {
		ns := "e2e-kubectl-watch"
		createNamespace(ctx, ns)
		// kubectl lists, prints the list, then watches from the list's resourceVersion: once the
		// marker of the list is printed, every later write reaches the watch.
		mustIn("admin", deployment("marker", ns), "apply", "-f", "-")
		DeferCleanup(deleteAllDeployments, ns)
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig("admin"), "get", "gitopsdeployments",
			"-n", ns, "--watch", "--output-watch-events", "-o", "custom-columns=EVENT:.type,NAME:.object.metadata.name", "--no-headers")
		var out safeBuffer
		cmd.Stdout = &out
		Expect(cmd.Start()).To(Succeed())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		Eventually(out.String).WithTimeout(30 * time.Second).Should(MatchRegexp(`ADDED\s+marker\n`))
		mustIn("admin", deployment("watched-by-kubectl", ns), "apply", "-f", "-")
		must("admin", "delete", "gitopsdeployment", "watched-by-kubectl", "-n", ns)
		// The agent writes status too: the marker's MODIFIED events come in between.
		eventsOfWatched := func() string {
			var lines []string
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasSuffix(line, " watched-by-kubectl") {
					lines = append(lines, line)
				}
			}
			return strings.Join(lines, "\n")
		}
		Eventually(eventsOfWatched).WithTimeout(30 * time.Second).Should(MatchRegexp(`^ADDED\s+watched-by-kubectl\n(MODIFIED\s+watched-by-kubectl\n)*DELETED\s+watched-by-kubectl$`))
	})

	It("refuses oversized objects with a clear error, and stores nothing", func() {
		bigAnnotation := strings.Replace(deployment("big-annotation", tenantA), "  namespace: "+tenantA+"\n",
			"  namespace: "+tenantA+"\n  annotations:\n    note: "+strings.Repeat("x", 300*1024)+"\n", 1)
		stderr := fails("admin", bigAnnotation, "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("metadata.annotations: Too long"))

		bigBody := strings.Replace(deployment("big-body", tenantA), "path: deploy", "path: "+strings.Repeat("p", 4<<20)+"/deploy", 1)
		stderr = fails("admin", bigBody, "create", "-f", "-")
		Expect(stderr).To(ContainSubstring("Request entity too large"))

		for _, name := range []string{"big-annotation", "big-body"} {
			_, _, err := run("admin", "", "get", "gitopsdeployment", name, "-n", tenantA)
			Expect(err).To(HaveOccurred())
		}
	})

	It("applies server-side, patches, labels and selects", func(ctx context.Context) {
		ns := tenantA
		mustIn("admin", deployment("ssa", ns), "apply", "--server-side", "--field-manager=e2e", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, ns, "ssa")
		must("admin", "patch", "gitopsdeployment", "ssa", "-n", ns, "--type=merge", "-p", `{"spec":{"type":"manual"}}`)
		must("admin", "patch", "gitopsdeployment", "ssa", "-n", ns, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/source/targetRevision","value":"main"}]`)
		must("admin", "patch", "gitopsdeployment", "ssa", "-n", ns, "--type=strategic",
			"-p", `{"spec":{"syncPolicy":{"syncOptions":["CreateNamespace=true"]}}}`)
		must("admin", "label", "gitopsdeployment", "ssa", "-n", ns, "team=blue")

		d, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(ns).Get(ctx, "ssa", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Spec.Type).To(Equal(gitopsv1alpha1.GitOpsDeploymentSpecTypeManual))
		Expect(d.Spec.Source.TargetRevision).To(Equal("main"))
		Expect(d.Spec.SyncPolicy.SyncOptions).To(ConsistOf(gitopsv1alpha1.SyncOptionCreateNamespaceTrue))
		Expect(d.Generation).To(Equal(int64(4)), "three spec changes after creation, the label is not one")

		Expect(must("admin", "get", "gitopsdeployments", "-n", ns, "-l", "team=blue", "-o", "name")).
			To(Equal("gitopsdeployment.managed-gitops.redhat.com/ssa\n"))
		Expect(must("admin", "get", "gitopsdeployments", "-n", ns, "--field-selector", "spec.type=manual", "-o", "name")).
			To(ContainSubstring("gitopsdeployment.managed-gitops.redhat.com/ssa"))
		Expect(must("admin", "get", "gitopsdeployments", "-n", ns, "--field-selector", "spec.type=automated", "-o", "name")).
			NotTo(ContainSubstring("/ssa\n"))
		stderr := fails("admin", "", "get", "gitopsdeployments", "-n", ns, "--field-selector", "spec.nothing=1")
		Expect(stderr).To(ContainSubstring("field label not supported"))
	})

	It("explains nested fields and describes objects", func() {
		out := must("admin", "explain", "gitopsdeployment.spec.source.path")
		Expect(out).To(ContainSubstring("Path is the directory of the repository to deploy"))
		out = must("admin", "explain", "snapshotenvironmentbinding.spec.components.configuration.resources.limits")
		Expect(out).To(ContainSubstring("FIELD: limits"))
		mustIn("admin", deployment("described", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "described")
		out = must("admin", "describe", "gitopsdeployment", "described", "-n", tenantA)
		Expect(out).To(MatchRegexp(`Repo URL:\s+` + regexp.QuoteMeta(placeholderRepo)))
	})

	It("refuses an update from a stale resourceVersion with 409", func(ctx context.Context) {
		client := gitops.ManagedGitopsV1alpha1().GitOpsDeployments(tenantA)
		mustIn("admin", deployment("stale", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "stale")
		d, err := client.Get(ctx, "stale", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		must("admin", "label", "gitopsdeployment", "stale", "-n", tenantA, "touched=yes")
		d.Spec.Source.Path = "elsewhere"
		d.APIVersion, d.Kind = gitopsv1alpha1.SchemeGroupVersion.String(), "GitOpsDeployment"
		stderr := fails("admin", mustYAML(d), "replace", "-f", "-")
		Expect(stderr).To(ContainSubstring("the object has been modified"))
		d, err = client.Get(ctx, "stale", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Spec.Source.Path).NotTo(Equal("elsewhere"))
	})

	It("keeps an object with a finalizer until the finalizer is removed", func(ctx context.Context) {
		// A finalizer of the user's own: the agent removes the service's finalizer by itself as
		// soon as Argo CD has cleaned up (agent_test.go covers that).
		manifest := strings.Replace(deployment("finalized", tenantA), "  namespace: "+tenantA+"\n",
			"  namespace: "+tenantA+"\n  finalizers: [\"example.com/hold\"]\n", 1)
		mustIn("admin", manifest, "apply", "-f", "-")
		must("admin", "delete", "gitopsdeployment", "finalized", "-n", tenantA, "--wait=false")
		out := must("admin", "get", "gitopsdeployment", "finalized", "-n", tenantA, "-o", "jsonpath={.metadata.deletionTimestamp}")
		Expect(out).NotTo(BeEmpty())
		must("admin", "patch", "gitopsdeployment", "finalized", "-n", tenantA, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		must("admin", "wait", "--for=delete", "gitopsdeployment/finalized", "-n", tenantA, "--timeout=30s")
	})

	It("waits for a condition written through /status", func() {
		mustIn("admin", deployment("conditioned", tenantA), "apply", "-f", "-")
		DeferCleanup(deleteDeploymentAndWait, tenantA, "conditioned")
		must("admin", "patch", "gitopsdeployment", "conditioned", "-n", tenantA, "--subresource=status", "--type=merge",
			"-p", `{"status":{"conditions":[{"type":"ErrorOccurred","status":"False","reason":"ErrorOccurredResolved"}]}}`)
		must("admin", "wait", "--for=condition=ErrorOccurred=False", "gitopsdeployment/conditioned", "-n", tenantA, "--timeout=30s")
	})
})

func mustYAML(obj interface{}) string {
	GinkgoHelper()
	b, err := yaml.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// safeBuffer is a bytes.Buffer that a command writes while the test reads it.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
