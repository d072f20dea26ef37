//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// diffFixture is a ConfigMap and a Secret of a deployment's path: two keys each, one of which
// changes between the commits.
func diffFixture(color, password string) map[string]string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return map[string]string{
		"app/cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diff-cm\ndata:\n  color: %s\n  size: large\n", color),
		"app/secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: diff-secret\ntype: Opaque\ndata:\n  password: %s\n  user: %s\n",
			b64(password), b64("diff-admin-user")),
	}
}

// diffPath is the deploymentrecords/diff subresource of record to in ns.
func diffPath(ns, to string) string {
	return fmt.Sprintf("/apis/managed-gitops.redhat.com/v1alpha1/namespaces/%s/deploymentrecords/%s/diff", ns, to)
}

// rawDiff asks the diff from record from to record to as user, with kubectl create --raw, and
// returns kubectl's stdout, stderr and error.
func rawDiff(user, ns, from, to string) (string, string, error) {
	file := filepath.Join(GinkgoT().TempDir(), "diff.json")
	Expect(os.WriteFile(file, []byte(fmt.Sprintf(`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"DeploymentRecordDiff","from":%q}`, from)), 0o600)).To(Succeed())
	return run(user, "", "create", "--raw", diffPath(ns, to), "-f", file)
}

// twoRecordedCommits deploys, as alice (who may edit ns), the GitOpsDeployment web of a
// repository of diffFixture, then a second commit that changes the ConfigMap's color and the
// Secret's password, and returns the records of the two commits once their manifests are kept.
func twoRecordedCommits(ctx context.Context, ns string) (recA, recB *managedv1alpha1.DeploymentRecord) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	repo := "file://" + gitRepository(dir, diffFixture("blue", "diff-pass-one"))
	commitA := gitIn(dir, "rev-parse", "HEAD")

	// record is the deployment's record of commit, once its manifests are kept.
	record := func(g Gomega, ctx context.Context, commit string) *managedv1alpha1.DeploymentRecord {
		list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.gitOpsDeploymentName=web"})
		g.Expect(err).NotTo(HaveOccurred())
		for i := range list.Items {
			if r := &list.Items[i]; r.Spec.Revision == commit && r.Status.ManifestsDigest != "" {
				return r
			}
		}
		g.Expect(list.Items).To(ContainElement(HaveField("Spec.Revision", commit)), "no record of %s with manifests", commit)
		return nil
	}

	By("alice deploying commit A: its record keeps the manifests' digest and the manifests")
	mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: automated
`, ns, repo), "create", "-f", "-")
	Eventually(func(g Gomega, ctx context.Context) {
		recA = record(g, ctx, commitA)
		g.Expect(recA).NotTo(BeNil())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(recA.Status.ManifestsDigest).To(HavePrefix("sha256:"))
	Expect(recA.Status.ManifestsTruncated).To(BeFalse())
	Expect(recA.Status.Manifests).To(HaveLen(2))

	// The agent tells syncs apart by the second they started in (and their origin): a sync
	// of B that Argo CD started in A's second would be taken for A's and get no record.
	Eventually(func(g Gomega, ctx context.Context) {
		r, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).Get(ctx, recA.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Status.Phase).To(Equal(managedv1alpha1.DeploymentRecordSucceeded))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	time.Sleep(time.Until(recA.Spec.StartedAt.Add(2 * time.Second)))

	By("commit B changing one field of the ConfigMap and one key of the Secret")
	commitB := gitCommit(dir, diffFixture("red", "diff-pass-two"))
	Eventually(func(g Gomega, ctx context.Context) {
		hardRefresh(g, ctx, ns, "web")
		recB = record(g, ctx, commitB)
		g.Expect(recB).NotTo(BeNil())
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
	Expect(recB.Status.ManifestsDigest).To(HavePrefix("sha256:"))
	Expect(recB.Status.ManifestsDigest).NotTo(Equal(recA.Status.ManifestsDigest))
	return recA, recB
}

var _ = Describe("Deployment record diffs", func() {
	It("show exactly the changed field of the changed resource, a Secret's values only redacted", func(ctx context.Context) {
		ns := "e2e-diff-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice")
		bindClusterRole(ctx, ns, "view", "bob")
		waitCanI("alice", "get", "deploymentrecords.managed-gitops.redhat.com", ns)
		waitCanI("bob", "get", "deploymentrecords.managed-gitops.redhat.com", ns)
		plain := []string{"diff-pass-one", "diff-pass-two", "diff-admin-user"}
		for _, p := range append([]string{}, plain...) {
			plain = append(plain, base64.StdEncoding.EncodeToString([]byte(p)))
		}
		recA, recB := twoRecordedCommits(ctx, ns)

		By("alice asking the diff with kubectl create --raw")
		out, stderr, err := rawDiff("alice", ns, recA.Name, recB.Name)
		Expect(err).NotTo(HaveOccurred(), stderr)
		var diff managedv1alpha1.DeploymentRecordDiff
		Expect(json.Unmarshal([]byte(out), &diff)).To(Succeed(), out)
		Expect(diff.Kind).To(Equal("DeploymentRecordDiff"))
		Expect(diff.From).To(Equal(recA.Name))
		Expect(diff.To).To(Equal(recB.Name))
		Expect(diff.FromDigest).To(Equal(recA.Status.ManifestsDigest))
		Expect(diff.ToDigest).To(Equal(recB.Status.ManifestsDigest))
		Expect(diff.Truncated).To(BeFalse())
		Expect(diff.Resources).To(HaveLen(2), out)
		cm, secret := diff.Resources[0], diff.Resources[1]
		Expect([]string{cm.Kind, cm.Name, string(cm.Change)}).To(Equal([]string{"ConfigMap", "diff-cm", "Modified"}), out)
		Expect(cm.Fields).To(HaveLen(1), out)
		Expect(cm.Fields[0].Path).To(Equal(".data.color"))
		Expect(string(cm.Fields[0].From.Raw)).To(Equal(`"blue"`))
		Expect(string(cm.Fields[0].To.Raw)).To(Equal(`"red"`))
		Expect([]string{secret.Kind, secret.Name, string(secret.Change)}).To(Equal([]string{"Secret", "diff-secret", "Modified"}), out)
		Expect(secret.Fields).To(HaveLen(1), out)
		Expect(secret.Fields[0].Path).To(Equal(".data.password"))
		var from, to string
		Expect(json.Unmarshal(secret.Fields[0].From.Raw, &from)).To(Succeed())
		Expect(json.Unmarshal(secret.Fields[0].To.Raw, &to)).To(Succeed())
		Expect(from).To(MatchRegexp(`^redacted:[0-9a-f]{16}$`))
		Expect(to).To(MatchRegexp(`^redacted:[0-9a-f]{16}$`))
		Expect(from).NotTo(Equal(to))

		By("the plain values are nowhere: not in the diff, not in the records")
		records := must("alice", "get", "deploymentrecords", "-n", ns, "-o", "yaml")
		Expect(records).To(ContainSubstring("manifestsDigest: sha256:"))
		Expect(records).To(ContainSubstring("redacted:"))
		for _, p := range plain {
			Expect(out).NotTo(ContainSubstring(p))
			Expect(records).NotTo(ContainSubstring(p))
		}

		By("the generated client's Diff gives the same answer")
		viaClient, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).Diff(ctx, recB.Name,
			&managedv1alpha1.DeploymentRecordDiff{From: recA.Name}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(viaClient.Resources).To(Equal(diff.Resources))

		By("bob, who only views the namespace, may ask it too; and still writes no record")
		bobsOut, stderr, err := rawDiff("bob", ns, recA.Name, recB.Name)
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(bobsOut).To(ContainSubstring(`"path":".data.color"`))
		Expect(fails("bob", "", "patch", "deploymentrecord", recB.Name, "-n", ns, "--subresource=status", "--type=merge",
			"-p", `{"status":{"manifestsDigest":"sha256:forged"}}`)).To(ContainSubstring("forbidden"))

		By("a record that does not exist, and carol of another namespace, are refused")
		_, stderr, err = rawDiff("alice", ns, "no-such-record", recB.Name)
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("from: Not found"))
		_, stderr, err = rawDiff("carol", ns, recA.Name, recB.Name)
		Expect(err).To(HaveOccurred())
		Expect(strings.ToLower(stderr)).To(Or(ContainSubstring("forbidden"), ContainSubstring("not found")))
	})
})
