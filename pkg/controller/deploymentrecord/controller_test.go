package deploymentrecord

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// auditEntry is the entry of a write of resource/name (subresource sub) by user, at
// resourceVersion rv.
func auditEntry(namespace string, rv int, verb, resource, name, sub, uid, user string) *managedv1alpha1.AuditEntry {
	return &managedv1alpha1.AuditEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%020d", rv)},
		Verb:       verb,
		Object: managedv1alpha1.AuditObject{APIGroup: "managed-gitops.redhat.com", Resource: resource, Name: name, Subresource: sub,
			UID: types.UID(uid), ResourceVersion: fmt.Sprint(rv)},
		User: managedv1alpha1.AuditUser{Username: user},
	}
}

type fixture struct {
	ctx    context.Context
	gitops *gitopsfake.Clientset
}

func start(t *testing.T, objs ...runtime.Object) fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gitops := gitopsfake.NewSimpleClientset(objs...)
	informers := externalversions.NewSharedInformerFactory(gitops, 0)
	managed := informers.ManagedGitops().V1alpha1()
	c, err := New(managed.GitOpsDeployments(), managed.DeploymentRecords(), gitops)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name {
		t.Errorf("name %q, want %q", c.Name, Name)
	}
	controllertest.StartInformers(t, ctx, informers)
	go c.Run(ctx, 1)
	return fixture{ctx: ctx, gitops: gitops}
}

func (f fixture) record(name string) *managedv1alpha1.DeploymentRecord {
	r, err := f.gitops.ManagedGitopsV1alpha1().DeploymentRecords("jane").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return r
}

func (f fixture) setOperation(t *testing.T, d *managedv1alpha1.GitOpsDeployment) {
	t.Helper()
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments(d.Namespace).UpdateStatus(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A new operation gets its record, with the author of the deployment from the audit trail, and
// the record follows the operation to its end; a SyncRun's next operation names the SyncRun's
// creator. The fake clientset ignores field selectors: the decoys in the trail (another
// deployment, a status write, another namespace, an earlier SyncRun of the same name, a write
// the deployment in the cache does not have yet) must be told apart by the controller itself.
func TestRecordsFollowTheOperations(t *testing.T) {
	d := deployment(1, operation(t0, managedv1alpha1.OperationPhaseRunning, shaA, automated))
	trail := []runtime.Object{
		auditEntry("jane", 90, "create", "gitopsdeployments", "web", "", "uid-web", "alice"),
		auditEntry("jane", 91, "create", "gitopsdeployments", "api", "", "uid-api", "mallory"),
		auditEntry("jane", 95, "update", "gitopsdeployments", "web", "status", "uid-web", DefaultServiceUserPrefix+"gitops-agent-main"),
		auditEntry("other", 96, "update", "gitopsdeployments", "web", "", "uid-other", "mallory"),
		auditEntry("jane", 80, "delete", "gitopsdeployments", "web", "", "uid-earlier", "mallory"),
		auditEntry("jane", 200, "update", "gitopsdeployments", "web", "", "uid-web", "mallory"), // after the cached resourceVersion 100
		auditEntry("jane", 110, "create", "gitopsdeploymentsyncruns", "run-1", "", "uid-run-0", "mallory"),
		auditEntry("jane", 120, "create", "gitopsdeploymentsyncruns", "run-1", "", "uid-run-1", "bob"),
		auditEntry("jane", 121, "update", "gitopsdeploymentsyncruns", "run-1", "status", "uid-run-1", "mallory"),
		auditEntry("jane", 122, "create", "gitopsdeploymentsyncruns", "run-2", "", "uid-run-2", "mallory"),
	}
	f := start(t, append(trail, d)...)

	first := recordName("web", t0, 1)
	controllertest.Eventually(t, f.ctx, "the record of the first sync", func() bool {
		r := f.record(first)
		return r != nil && r.Status.Phase == managedv1alpha1.DeploymentRecordRunning
	})
	r := f.record(first)
	wantSpec := managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: "web", GitOpsDeploymentUID: "uid-web", Generation: 1,
		Source: d.Spec.Source, Revision: shaA, StartedAt: t0,
		Trigger: managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSpecChange, User: "alice"}}
	if diff := cmp.Diff(wantSpec, r.Spec); diff != "" {
		t.Errorf("spec of the first record (-want +got):\n%s", diff)
	}
	if r.Labels[LabelDeployment] != "web" || len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "uid-web" {
		t.Errorf("the first record's labels %v and owners %v", r.Labels, r.OwnerReferences)
	}

	// The sync ends.
	d = d.DeepCopy()
	op := d.Status.OperationState
	op.Phase, op.Message, op.FinishedAt = managedv1alpha1.OperationPhaseSucceeded, "successfully synced", &t1
	op.SyncResult.Resources = []managedv1alpha1.ResourceResult{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "jane", Name: "web",
		Status: managedv1alpha1.ResultCodeSynced, Message: "deployment.apps/web created"}}
	f.setOperation(t, d)
	controllertest.Eventually(t, f.ctx, "the first record's outcome", func() bool {
		r := f.record(first)
		return r != nil && r.Status.Phase == managedv1alpha1.DeploymentRecordSucceeded
	})
	wantStatus := managedv1alpha1.DeploymentRecordStatus{Phase: managedv1alpha1.DeploymentRecordSucceeded, Message: "successfully synced", FinishedAt: &t1,
		Resources: []managedv1alpha1.RecordedResource{{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Status: "Synced", Message: "deployment.apps/web created"}}}
	if r := f.record(first); !cmp.Equal(wantStatus, r.Status) || !cmp.Equal(wantSpec, r.Spec) {
		t.Errorf("the first record once finished: %s", cmp.Diff(wantStatus, r.Status))
	}

	// A SyncRun's sync.
	d, _ = f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments("jane").Get(f.ctx, "web", metav1.GetOptions{})
	operation(t2, managedv1alpha1.OperationPhaseRunning, shaB, managedv1alpha1.OperationInitiator{})(d)
	bySyncRun(d)
	f.setOperation(t, d)
	second := recordName("web", t2, 1)
	controllertest.Eventually(t, f.ctx, "the record of the SyncRun's sync", func() bool { return f.record(second) != nil })
	want := managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerSyncRun, SyncRun: "run-1", User: "bob"}
	if got := f.record(second); got.Spec.Trigger != want || got.Spec.Revision != shaB {
		t.Errorf("trigger of the SyncRun's record %+v at %s, want %+v at %s", got.Spec.Trigger, got.Spec.Revision, want, shaB)
	}
	if r := f.record(first); !cmp.Equal(wantStatus, r.Status) {
		t.Errorf("the first record changed: %s", cmp.Diff(wantStatus, r.Status))
	}

	// Held back at commit A by alice (the hold says so; the condition's message names mallory,
	// and must not be believed): automated sync deploys A again, a rollback by alice.
	if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds("jane").Create(f.ctx, &managedv1alpha1.GitOpsDeploymentHold{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web"},
		Spec:       managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: shaA, HeldBy: "alice"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _ = f.gitops.ManagedGitopsV1alpha1().GitOpsDeployments("jane").Get(f.ctx, "web", metav1.GetOptions{})
	t3 := metav1.NewTime(t2.Add(time.Minute))
	heldAt(shaA, "mallory")(d)
	operation(t3, managedv1alpha1.OperationPhaseRunning, shaA, automated)(d)
	f.setOperation(t, d)
	third := recordName("web", t3, 1)
	controllertest.Eventually(t, f.ctx, "the record of the rollback", func() bool { return f.record(third) != nil })
	want = managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerRollback, User: "alice"}
	if got := f.record(third); got.Spec.Trigger != want || got.Spec.Revision != shaA {
		t.Errorf("trigger of the rollback's record %+v at %s, want %+v at %s", got.Spec.Trigger, got.Spec.Revision, want, shaA)
	}
}
