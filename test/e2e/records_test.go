//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var _ = Describe("Deployment records", func() {
	It("record each sync with what triggered it, who and the commit, and keep the newest", func(ctx context.Context) {
		ns := "e2e-records-" + rand.String(5)
		createNamespace(ctx, ns)
		DeferCleanup(deleteAllDeployments, ns)
		bindClusterRole(ctx, ns, "edit", "alice", "bob")
		waitCanI("bob", "create", "gitopsdeploymentsyncruns.managed-gitops.redhat.com", ns)
		dir := GinkgoT().TempDir()
		repo := "file://" + gitRepository(dir, map[string]string{"app/cm.yaml": configMap("rec-cm", "v1")})
		commitA := gitIn(dir, "rev-parse", "HEAD")

		records := func(g Gomega, ctx context.Context) []managedv1alpha1.DeploymentRecord {
			list, err := gitops.ManagedGitopsV1alpha1().DeploymentRecords(ns).List(ctx, metav1.ListOptions{
				FieldSelector: "spec.gitOpsDeploymentName=web"})
			g.Expect(err).NotTo(HaveOccurred())
			items := list.Items
			// Oldest first.
			for i := 1; i < len(items); i++ {
				for j := i; j > 0 && items[j].Spec.StartedAt.Before(&items[j-1].Spec.StartedAt); j-- {
					items[j], items[j-1] = items[j-1], items[j]
				}
			}
			return items
		}
		type want struct {
			trigger  managedv1alpha1.DeploymentTriggerType
			user     string
			revision string
		}
		expect := func(wants ...want) {
			GinkgoHelper()
			Eventually(func(g Gomega, ctx context.Context) {
				got := records(g, ctx)
				g.Expect(got).To(HaveLen(len(wants)))
				for i, w := range wants {
					r := got[i]
					g.Expect(r.Spec.Trigger.Type).To(Equal(w.trigger), "record %d: %+v", i, r.Spec)
					g.Expect(r.Spec.Trigger.User).To(Equal(w.user), "record %d: %+v", i, r.Spec)
					g.Expect(r.Spec.Revision).To(Equal(w.revision), "record %d: %+v", i, r.Spec)
					g.Expect(r.Status.Phase).To(Equal(managedv1alpha1.DeploymentRecordSucceeded), "record %d: %+v", i, r.Status)
					g.Expect(r.Status.Resources).To(ContainElement(HaveField("Name", "rec-cm")))
				}
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		}

		By("alice creating the deployment: its first sync, of commit A")
		mustIn("alice", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeployment
metadata: {name: web, namespace: %s}
spec:
  source: {repoURL: %q, path: app}
  type: automated
`, ns, repo), "create", "-f", "-")
		expect(want{managedv1alpha1.DeploymentTriggerSpecChange, "alice", commitA})

		// A hard refresh, asked again until Argo CD has synced B, as a Git webhook delivered again
		// would: a normal one may resolve the branch from the repo-server's cache of ls-remote
		// (kept 3 minutes) and find commit A still, and one that lands while the Application is
		// still being reconciled after the first sync may be taken before the push is seen.
		By("a new commit B under automated sync (Argo CD refreshed as its Git webhook would)")
		commitB := gitCommit(dir, map[string]string{"app/cm.yaml": configMap("rec-cm", "v2")})
		Eventually(func(g Gomega, ctx context.Context) {
			hardRefresh(g, ctx, ns, "web")
			g.Expect(records(g, ctx)).To(ContainElement(HaveField("Spec.Revision", commitB)))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		expect(want{managedv1alpha1.DeploymentTriggerSpecChange, "alice", commitA},
			want{managedv1alpha1.DeploymentTriggerNewCommit, "", commitB})

		By("bob making it manual and syncing it with a SyncRun")
		must("bob", "patch", "gitopsdeployment", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"type":"manual"}}`)
		mustIn("bob", fmt.Sprintf(`apiVersion: managed-gitops.redhat.com/v1alpha1
kind: GitOpsDeploymentSyncRun
metadata: {name: sync-1, namespace: %s}
spec: {gitopsDeploymentName: web}
`, ns), "create", "-f", "-")
		expect(want{managedv1alpha1.DeploymentTriggerSpecChange, "alice", commitA},
			want{managedv1alpha1.DeploymentTriggerNewCommit, "", commitB},
			want{managedv1alpha1.DeploymentTriggerSyncRun, "bob", commitB})
		Eventually(func(g Gomega, ctx context.Context) {
			g.Expect(records(g, ctx)[2].Spec.Trigger.SyncRun).To(Equal("sync-1"))
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(must("bob", "get", "deploymentrecords", "-n", ns)).To(MatchRegexp(`NAME\s+DEPLOYMENT\s+REVISION\s+TRIGGER\s+USER\s+PHASE\s+STARTED\s+AGE`))

		By("bob may not write a record, even with every right on the group; carol may not read them")
		first := records(Default, ctx)[0].Name
		forbidden := func(stderr string) {
			GinkgoHelper()
			Expect(stderr).To(ContainSubstring("forbidden"))
			Expect(stderr).To(ContainSubstring(`resource "deploymentrecords`))
			Expect(stderr).To(ContainSubstring("deployment records are written by the GitOps Service's agents only"))
		}
		forged := fmt.Sprintf(`{"apiVersion":"managed-gitops.redhat.com/v1alpha1","kind":"DeploymentRecord","metadata":{"name":"forged","namespace":%q},`+
			`"spec":{"gitOpsDeploymentName":"web","source":{"repoURL":"x","path":"y"},"trigger":{"type":"NewCommit"},"startedAt":"2026-01-01T00:00:00Z"}}`, ns)
		grantEverythingOnGitOps(ctx, ns, "bob")
		waitCanI("bob", "create", "deploymentrecords.managed-gitops.redhat.com", ns)
		forbidden(fails("bob", forged, "create", "--validate=false", "-f", "-"))
		forbidden(fails("bob", "", "label", "deploymentrecord", first, "-n", ns, "forged=yes"))
		forbidden(fails("bob", "", "patch", "deploymentrecord", first, "-n", ns, "--subresource=status", "--type=merge",
			"-p", `{"status":{"phase":"Failed"}}`))
		forbidden(fails("bob", "", "delete", "deploymentrecord", first, "-n", ns))
		Expect(fails("carol", "", "get", "deploymentrecords", "-n", ns)).To(ContainSubstring("forbidden"))

		By("with a limit of 5 records, 20 syncs leave the newest 5")
		must("bob", "patch", "gitopsdeployment", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"revisionHistoryLimit":5}}`)
		var last string
		for i := 2; i <= 21; i++ {
			last = fmt.Sprintf("sync-%d", i)
			createSyncRun(ctx, ns, last, "web", "")
			Eventually(func(g Gomega, ctx context.Context) {
				got := records(g, ctx)
				g.Expect(got).NotTo(BeEmpty())
				newest := got[len(got)-1]
				g.Expect(newest.Spec.Trigger.SyncRun).To(Equal(last))
				g.Expect(newest.Status.Phase).To(Equal(managedv1alpha1.DeploymentRecordSucceeded))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		}
		got := records(Default, ctx)
		Expect(got).To(HaveLen(5))
		for i, r := range got {
			Expect(r.Spec.Trigger.SyncRun).To(Equal(fmt.Sprintf("sync-%d", 17+i)))
		}
	})
})
