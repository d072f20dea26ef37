package deploymentrecord

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/install"
	"github.com/gitops-service/gitops-service/pkg/registry/registrytest"
	"github.com/gitops-service/gitops-service/pkg/registry/strategy"
)

var scheme = func() *runtime.Scheme { s := runtime.NewScheme(); install.Install(s); return s }()

var testKind = registrytest.Kind[object, gitops.DeploymentRecordStatus]{
	Stored:   stored,
	Kind:     func() strategy.Kind { return kind(scheme) },
	StatusOf: func(o object) *gitops.DeploymentRecordStatus { return &o.Status },
}

var started = metav1.Date(2026, 12, 6, 21, 40, 2, 0, metav1.Now().Location())

// stored is a valid record as stored: a SyncRun's sync of web, succeeded.
func stored() *gitops.DeploymentRecord {
	finished := metav1.NewTime(started.Add(3e9))
	return &gitops.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1796597202", Namespace: "team-a", ResourceVersion: "1", Generation: 1,
			Labels: map[string]string{"managed-gitops.redhat.com/gitopsdeployment": "web"}},
		Spec: gitops.DeploymentRecordSpec{
			GitOpsDeploymentName: "web", GitOpsDeploymentUID: "u-1", Generation: 2,
			Source:    gitops.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Revision:  "0123456789abcdef0123456789abcdef01234567",
			Trigger:   gitops.DeploymentTrigger{Type: gitops.DeploymentTriggerSyncRun, User: "bob", SyncRun: "sync-1"},
			StartedAt: started,
		},
		Status: gitops.DeploymentRecordStatus{Phase: gitops.DeploymentRecordSucceeded, Message: "successfully synced", FinishedAt: &finished,
			Resources: []gitops.RecordedResource{{Kind: "ConfigMap", Namespace: "team-a", Name: "web", Status: "Synced"}}},
	}
}

func TestValidate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "valid", Mutate: func(object) {}},
		{Name: "no deployment", Mutate: func(o object) { o.Spec.GitOpsDeploymentName = "" },
			Want: []apitesting.Want{apitesting.Required("spec.gitOpsDeploymentName")}},
		{Name: "no start", Mutate: func(o object) { o.Spec.StartedAt = metav1.Time{} }, Want: []apitesting.Want{apitesting.Required("spec.startedAt")}},
		{Name: "unknown trigger", Mutate: func(o object) { o.Spec.Trigger.Type = "Magic" },
			Want: []apitesting.Want{apitesting.NotSupported("spec.trigger.type")}},
	}
	registrytest.RunValidate(t, testKind, cases)
}

func TestValidateUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "unchanged", Mutate: func(object) {}},
		{Name: "label", Mutate: func(o object) { o.Labels["x"] = "y" }},
		{Name: "revision rewritten", Mutate: func(o object) { o.Spec.Revision = "fedcba" }, Want: []apitesting.Want{apitesting.Forbidden("spec")}},
		{Name: "user rewritten", Mutate: func(o object) { o.Spec.Trigger.User = "mallory" }, Want: []apitesting.Want{apitesting.Forbidden("spec")}},
	}
	registrytest.RunValidateUpdate(t, testKind, cases)
}

func TestValidateStatusUpdate(t *testing.T) {
	cases := []registrytest.ErrorsCase[object]{
		{Name: "failed", Mutate: func(o object) { o.Status.Phase = gitops.DeploymentRecordFailed }},
		{Name: "unknown phase", Mutate: func(o object) { o.Status.Phase = "Done" }, Want: []apitesting.Want{apitesting.NotSupported("status.phase")}},
	}
	registrytest.RunValidateStatusUpdate(t, testKind, cases)
}

func TestSelectableFields(t *testing.T) {
	cases := []registrytest.FieldsCase[object]{
		{Name: "full", Obj: stored(), Want: fields.Set{"spec.gitOpsDeploymentName": "web", "spec.trigger.type": "SyncRun", "status.phase": "Succeeded"}},
		{Name: "empty", Obj: &gitops.DeploymentRecord{}, Want: fields.Set{"spec.gitOpsDeploymentName": "", "spec.trigger.type": "", "status.phase": ""}},
	}
	registrytest.RunSelectableFields(t, selectableFields, cases)
}

func TestColumns(t *testing.T) {
	cases := []registrytest.CellsCase[object]{
		{Name: "succeeded", Mutate: func(object) {},
			Want: []interface{}{"web-1796597202", "web", "0123456", "SyncRun", "bob", "Succeeded", started.UTC().Format("2006-01-02T15:04:05Z"),
				"successfully synced", "<unknown>"}},
	}
	registrytest.RunColumns(t, stored, columns, cases)
}
