package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

func meta(name string) metav1.ObjectMeta {
	// A resourceVersion so that the same meta also passes update validation.
	return metav1.ObjectMeta{Name: name, Namespace: "jane", ResourceVersion: "1"}
}

var now = metav1.Now()

// metaCases are the metadata rules every kind shares; each create table runs them.
func metaCases[T any](setMeta func(*T, metav1.ObjectMeta)) []struct {
	name   string
	mutate func(*T)
	want   []apitesting.Want
} {
	return []struct {
		name   string
		mutate func(*T)
		want   []apitesting.Want
	}{
		{"no name", func(o *T) { setMeta(o, metav1.ObjectMeta{Namespace: "jane"}) }, []apitesting.Want{apitesting.Required("metadata.name")}},
		{"no namespace", func(o *T) { setMeta(o, metav1.ObjectMeta{Name: "x"}) }, []apitesting.Want{apitesting.Required("metadata.namespace")}},
		{"name not a subdomain", func(o *T) { setMeta(o, metav1.ObjectMeta{Name: "Bad_Name", Namespace: "jane"}) }, []apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
}

func validGitOpsDeployment() *gitops.GitOpsDeployment {
	return &gitops.GitOpsDeployment{
		ObjectMeta: meta("app"),
		Spec: gitops.GitOpsDeploymentSpec{
			Source: gitops.ApplicationSource{
				RepoURL: "https://github.com/redhat-appstudio/managed-gitops",
				Path:    "resources/test-data/sample-gitops-repository/environments/overlays/dev",
			},
			Type: gitops.GitOpsDeploymentSpecTypeAutomated,
		},
	}
}

type gitOpsDeploymentCase struct {
	name   string
	opts   Options
	mutate func(*gitops.GitOpsDeployment)
	want   []apitesting.Want
}

func gitOpsDeploymentSpecCases() []gitOpsDeploymentCase {
	return []gitOpsDeploymentCase{
		{name: "valid automated", mutate: func(*gitops.GitOpsDeployment) {}},
		{name: "valid manual", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Type = gitops.GitOpsDeploymentSpecTypeManual }},
		{name: "full", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.Source.TargetRevision = "v1.2.3"
			o.Spec.Destination = gitops.ApplicationDestination{Environment: "my-managed-environment", Namespace: "prod"}
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue}}
		}},
		{name: "ssh repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "ssh://git@github.com/org/repo.git" }},
		{name: "scp-like repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "git@github.com:org/repo.git" }},
		{name: "git protocol repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "git://example.com/repo.git" }},
		{name: "http repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "http://gitea.local/org/repo" }},
		{name: "file repository refused by default", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "file:///srv/git/repo" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{name: "file repository when allowed", opts: Options{AllowFileRepositories: true},
			mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "file:///srv/git/repo" }},
		{name: "no repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "" },
			want: []apitesting.Want{apitesting.Required("spec.source.repoURL")}},
		{name: "ftp repository", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.RepoURL = "ftp://example.com/repo" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.repoURL")}},
		{name: "no path", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "" },
			want: []apitesting.Want{apitesting.Required("spec.source.path")}},
		{name: "path /", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "/" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.path")}},
		{name: "path that cleans to /", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "./" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.path")}},
		{name: "path //", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "//" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.path")}},
		{name: "path with ..", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "envs/../../etc" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.path")}},
		{name: "path starting with ..", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "../x" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.path")}},
		{name: "path with dots in a name", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "envs/..dev/x..y" }},
		{name: "leading slash directory", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.Path = "/envs/dev" }},
		{name: "revision with whitespace", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.TargetRevision = "main branch" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.targetRevision")}},
		{name: "revision with newline", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Source.TargetRevision = "main\n" },
			want: []apitesting.Want{apitesting.Invalid("spec.source.targetRevision")}},
		{name: "own namespace without environment", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Destination.Namespace = "jane" }},
		{name: "other namespace without environment", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Destination.Namespace = "prod" },
			want: []apitesting.Want{apitesting.Invalid("spec.destination.namespace")}},
		{name: "invalid namespace without environment", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Destination.Namespace = "Prod" },
			want: []apitesting.Want{apitesting.Invalid("spec.destination.namespace"), apitesting.Invalid("spec.destination.namespace")}},
		{name: "invalid namespace with environment", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.Destination = gitops.ApplicationDestination{Environment: "env", Namespace: "Prod"}
		}, want: []apitesting.Want{apitesting.Invalid("spec.destination.namespace")}},
		{name: "environment without namespace", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Destination.Environment = "env" },
			want: []apitesting.Want{apitesting.Required("spec.destination.namespace")}},
		{name: "invalid environment", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.Destination = gitops.ApplicationDestination{Environment: "My_Env", Namespace: "prod"}
		}, want: []apitesting.Want{apitesting.Invalid("spec.destination.environment")}},
		{name: "empty sync policy", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.SyncPolicy = &gitops.SyncPolicy{} }},
		{name: "CreateNamespace=false", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceFalse}}
		}},
		{name: "unsupported sync option", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue, "Prune=true"}}
		}, want: []apitesting.Want{apitesting.NotSupported("spec.syncPolicy.syncOptions[1]")}},
		{name: "misspelled sync option", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{"CreateNamespace=True"}}
		}, want: []apitesting.Want{apitesting.NotSupported("spec.syncPolicy.syncOptions[0]")}},
		{name: "repeated sync option", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue, gitops.SyncOptionCreateNamespaceTrue}}
		}, want: []apitesting.Want{apitesting.Duplicate("spec.syncPolicy.syncOptions[1]")}},
		{name: "contradictory sync options", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.SyncPolicy = &gitops.SyncPolicy{SyncOptions: gitops.SyncOptions{gitops.SyncOptionCreateNamespaceTrue, gitops.SyncOptionCreateNamespaceFalse}}
		}, want: []apitesting.Want{apitesting.Invalid("spec.syncPolicy.syncOptions")}},
		{name: "no type", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Type = "" },
			want: []apitesting.Want{apitesting.Required("spec.type")}},
		{name: "unknown type", mutate: func(o *gitops.GitOpsDeployment) { o.Spec.Type = "Automated" },
			want: []apitesting.Want{apitesting.NotSupported("spec.type")}},
		{name: "several errors at once", mutate: func(o *gitops.GitOpsDeployment) {
			o.Spec.Source = gitops.ApplicationSource{}
			o.Spec.Type = "sometimes"
		}, want: []apitesting.Want{apitesting.Required("spec.source.repoURL"), apitesting.Required("spec.source.path"), apitesting.NotSupported("spec.type")}},
	}
}

func TestValidateGitOpsDeployment(t *testing.T) {
	cases := gitOpsDeploymentSpecCases()
	for _, mc := range metaCases(func(o *gitops.GitOpsDeployment, m metav1.ObjectMeta) { o.ObjectMeta = m }) {
		cases = append(cases, gitOpsDeploymentCase{name: mc.name, mutate: mc.mutate, want: mc.want})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validGitOpsDeployment()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeployment(obj, tc.opts), tc.want...)
		})
	}
}

func TestValidateGitOpsDeploymentUpdate(t *testing.T) {
	// Every spec field may change, but the new spec must still be valid.
	for _, tc := range gitOpsDeploymentSpecCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := validGitOpsDeployment()
			obj := validGitOpsDeployment()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentUpdate(obj, old, tc.opts), tc.want...)
		})
	}
	t.Run("type, source and destination change", func(t *testing.T) {
		old := validGitOpsDeployment()
		obj := validGitOpsDeployment()
		obj.Spec.Type = gitops.GitOpsDeploymentSpecTypeManual
		obj.Spec.Source.Path = "other"
		obj.Spec.Destination = gitops.ApplicationDestination{Environment: "env", Namespace: "prod"}
		apitesting.ExpectErrors(t, ValidateGitOpsDeploymentUpdate(obj, old, Options{}))
	})
	t.Run("name is immutable", func(t *testing.T) {
		old := validGitOpsDeployment()
		obj := validGitOpsDeployment()
		obj.Name = "renamed"
		apitesting.ExpectErrors(t, ValidateGitOpsDeploymentUpdate(obj, old, Options{}), apitesting.Invalid("metadata.name"))
	})
}

func validGitOpsDeploymentStatus() gitops.GitOpsDeploymentStatus {
	return gitops.GitOpsDeploymentStatus{
		Conditions: []gitops.GitOpsDeploymentCondition{
			{Type: gitops.GitOpsDeploymentConditionErrorOccurred, Status: gitops.GitOpsConditionStatusFalse, Reason: gitops.GitOpsDeploymentReasonErrorOccurredResolved, LastTransitionTime: &now},
			// Mirrored Argo CD conditions have types of Argo CD's choosing.
			{Type: "SomeFutureArgoCDCondition", Status: gitops.GitOpsConditionStatusTrue, Reason: "SomeFutureArgoCDCondition"},
		},
		Sync:   gitops.SyncStatus{Status: gitops.SyncStatusCodeSynced, Revision: "abc"},
		Health: gitops.HealthStatus{Status: gitops.HealthStatusCodeHealthy},
		Resources: []gitops.ResourceStatus{
			{Kind: "Secret", Namespace: "jane", Name: "s", Status: gitops.SyncStatusCodeOutOfSync, Health: &gitops.HealthStatus{Status: gitops.HealthStatusCodeMissing}},
			{Kind: "ConfigMap", Name: "c"},
		},
		OperationState: &gitops.OperationState{Phase: gitops.OperationPhaseSucceeded, StartedAt: now},
	}
}

func TestValidateGitOpsDeploymentStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeployment)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.GitOpsDeployment) {}, nil},
		{"empty", func(o *gitops.GitOpsDeployment) { o.Status = gitops.GitOpsDeploymentStatus{} }, nil},
		// Status writes do not judge the spec; the spec was checked when it was written.
		{"invalid spec is not checked", func(o *gitops.GitOpsDeployment) { o.Spec.Type = "bogus" }, nil},
		{"condition without type", func(o *gitops.GitOpsDeployment) { o.Status.Conditions[1].Type = "" },
			[]apitesting.Want{apitesting.Required("status.conditions[1].type")}},
		{"repeated condition type", func(o *gitops.GitOpsDeployment) {
			o.Status.Conditions[1].Type = gitops.GitOpsDeploymentConditionErrorOccurred
		},
			[]apitesting.Want{apitesting.Duplicate("status.conditions[1].type")}},
		{"condition without status", func(o *gitops.GitOpsDeployment) { o.Status.Conditions[0].Status = "" },
			[]apitesting.Want{apitesting.Required("status.conditions[0].status")}},
		{"condition with unknown status", func(o *gitops.GitOpsDeployment) { o.Status.Conditions[0].Status = "true" },
			[]apitesting.Want{apitesting.NotSupported("status.conditions[0].status")}},
		{"unknown sync status", func(o *gitops.GitOpsDeployment) { o.Status.Sync.Status = "InSync" },
			[]apitesting.Want{apitesting.NotSupported("status.sync.status")}},
		{"unknown health status", func(o *gitops.GitOpsDeployment) { o.Status.Health.Status = "Fine" },
			[]apitesting.Want{apitesting.NotSupported("status.health.status")}},
		{"unknown resource sync status", func(o *gitops.GitOpsDeployment) { o.Status.Resources[1].Status = "Pruned" },
			[]apitesting.Want{apitesting.NotSupported("status.resources[1].status")}},
		{"unknown resource health status", func(o *gitops.GitOpsDeployment) { o.Status.Resources[0].Health.Status = "Fine" },
			[]apitesting.Want{apitesting.NotSupported("status.resources[0].health.status")}},
		{"operation without phase", func(o *gitops.GitOpsDeployment) { o.Status.OperationState.Phase = "" },
			[]apitesting.Want{apitesting.Required("status.operationState.phase")}},
		{"unknown operation phase", func(o *gitops.GitOpsDeployment) { o.Status.OperationState.Phase = "Done" },
			[]apitesting.Want{apitesting.NotSupported("status.operationState.phase")}},
		{"name is immutable", func(o *gitops.GitOpsDeployment) { o.Name = "renamed" },
			[]apitesting.Want{apitesting.Invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validGitOpsDeployment()
			obj := validGitOpsDeployment()
			obj.Status = validGitOpsDeploymentStatus()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentStatusUpdate(obj, old), tc.want...)
		})
	}
}

func validSyncRun() *gitops.GitOpsDeploymentSyncRun {
	return &gitops.GitOpsDeploymentSyncRun{
		ObjectMeta: meta("sync-1"),
		Spec:       gitops.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "jgwest-app"},
	}
}

func TestValidateGitOpsDeploymentSyncRun(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []apitesting.Want
	}{
		{"valid", func(*gitops.GitOpsDeploymentSyncRun) {}, nil},
		{"with revision", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.RevisionID = "0a1b2c3d4e5f" }, nil},
		{"no deployment", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.GitopsDeploymentName = "" },
			[]apitesting.Want{apitesting.Required("spec.gitopsDeploymentName")}},
		{"invalid deployment name", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.GitopsDeploymentName = "My App" },
			[]apitesting.Want{apitesting.Invalid("spec.gitopsDeploymentName")}},
		{"revision with whitespace", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.RevisionID = "abc def" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
	}
	for _, mc := range metaCases(func(o *gitops.GitOpsDeploymentSyncRun, m metav1.ObjectMeta) { o.ObjectMeta = m }) {
		cases = append(cases, mc)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validSyncRun()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentSyncRun(obj), tc.want...)
		})
	}
}

func TestValidateGitOpsDeploymentSyncRunUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    string
		mutate func(*gitops.GitOpsDeploymentSyncRun)
		want   []apitesting.Want
	}{
		{"unchanged", "abc", func(*gitops.GitOpsDeploymentSyncRun) {}, nil},
		{"labels change", "abc", func(o *gitops.GitOpsDeploymentSyncRun) { o.Labels = map[string]string{"a": "b"} }, nil},
		{"deployment changes", "abc", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.GitopsDeploymentName = "other-app" },
			[]apitesting.Want{apitesting.Invalid("spec.gitopsDeploymentName")}},
		{"revision changes", "abc", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.RevisionID = "def" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{"revision is set later", "", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.RevisionID = "def" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{"revision is cleared", "abc", func(o *gitops.GitOpsDeploymentSyncRun) { o.Spec.RevisionID = "" },
			[]apitesting.Want{apitesting.Invalid("spec.revisionID")}},
		{"both change", "abc", func(o *gitops.GitOpsDeploymentSyncRun) {
			o.Spec = gitops.GitOpsDeploymentSyncRunSpec{GitopsDeploymentName: "other-app", RevisionID: "def"}
		}, []apitesting.Want{apitesting.Invalid("spec.gitopsDeploymentName"), apitesting.Invalid("spec.revisionID")}},
		{"namespace is immutable", "abc", func(o *gitops.GitOpsDeploymentSyncRun) { o.Namespace = "other" },
			[]apitesting.Want{apitesting.Invalid("metadata.namespace")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validSyncRun()
			old.Spec.RevisionID = tc.old
			obj := old.DeepCopy()
			tc.mutate(obj)
			errs := ValidateGitOpsDeploymentSyncRunUpdate(obj, old)
			apitesting.ExpectErrors(t, errs, tc.want...)
			for _, e := range errs {
				if strings.HasPrefix(e.Field, "spec.") && !strings.Contains(e.Detail, "immutable") {
					t.Errorf("%s: detail %q does not say the field is immutable", e.Field, e.Detail)
				}
			}
		})
	}
}

func TestValidateGitOpsDeploymentSyncRunStatusUpdate(t *testing.T) {
	ok := gitops.GitOpsDeploymentSyncRunCondition{Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusFalse, LastTransitionTime: &now}
	cases := []struct {
		name       string
		conditions []gitops.GitOpsDeploymentSyncRunCondition
		want       []apitesting.Want
	}{
		{"none", nil, nil},
		// On success the condition is False with empty reason and message.
		{"resolved", []gitops.GitOpsDeploymentSyncRunCondition{ok}, nil},
		{"error", []gitops.GitOpsDeploymentSyncRunCondition{{Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: gitops.GitOpsConditionStatusTrue, Reason: gitops.SyncRunReasonErrorOccurred, Message: "boom"}}, nil},
		{"no type", []gitops.GitOpsDeploymentSyncRunCondition{{Status: gitops.GitOpsConditionStatusTrue}},
			[]apitesting.Want{apitesting.Required("status.conditions[0].type")}},
		{"unknown type", []gitops.GitOpsDeploymentSyncRunCondition{{Type: "Synced", Status: gitops.GitOpsConditionStatusTrue}},
			[]apitesting.Want{apitesting.NotSupported("status.conditions[0].type")}},
		{"repeated type", []gitops.GitOpsDeploymentSyncRunCondition{ok, ok},
			[]apitesting.Want{apitesting.Duplicate("status.conditions[1].type")}},
		{"no status", []gitops.GitOpsDeploymentSyncRunCondition{{Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred}},
			[]apitesting.Want{apitesting.Required("status.conditions[0].status")}},
		{"unknown status", []gitops.GitOpsDeploymentSyncRunCondition{{Type: gitops.GitOpsDeploymentSyncRunConditionErrorOccurred, Status: "Maybe"}},
			[]apitesting.Want{apitesting.NotSupported("status.conditions[0].status")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validSyncRun()
			obj := old.DeepCopy()
			obj.Status.Conditions = tc.conditions
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentSyncRunStatusUpdate(obj, old), tc.want...)
		})
	}
	t.Run("name is immutable", func(t *testing.T) {
		old := validSyncRun()
		obj := old.DeepCopy()
		obj.Name = "other"
		apitesting.ExpectErrors(t, ValidateGitOpsDeploymentSyncRunStatusUpdate(obj, old), apitesting.Invalid("metadata.name"))
	})
}

func validManagedEnvironment() *gitops.GitOpsDeploymentManagedEnvironment {
	return &gitops.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: meta("my-managed-environment"),
		Spec: gitops.ManagedEnvironmentSpec{
			APIURL:                   "https://api.my-cluster.dev.rhcloud.com:6443",
			ClusterCredentialsSecret: "my-managed-environment-secret",
		},
	}
}

type managedEnvironmentCase struct {
	name   string
	mutate func(*gitops.GitOpsDeploymentManagedEnvironment)
	want   []apitesting.Want
}

func managedEnvironmentSpecCases() []managedEnvironmentCase {
	return []managedEnvironmentCase{
		{"valid", func(*gitops.GitOpsDeploymentManagedEnvironment) {}, nil},
		{"full", func(o *gitops.GitOpsDeploymentManagedEnvironment) {
			o.Spec.AllowInsecureSkipTLSVerify = true
			o.Spec.CreateNewServiceAccount = true
			o.Spec.Namespaces = []string{"bank-loan-app", "bank-account-app"}
			o.Spec.ClusterResources = true
		}, nil},
		{"no API URL", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.APIURL = "" },
			[]apitesting.Want{apitesting.Required("spec.apiURL")}},
		{"http API URL", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.APIURL = "http://api.example.com:6443" },
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{"API URL with query", func(o *gitops.GitOpsDeploymentManagedEnvironment) {
			o.Spec.APIURL = "https://api.example.com:6443?cluster=a"
		},
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{"API URL with ampersand", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.APIURL = "https://api.example.com:6443/a&b" },
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{"API URL without host", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.APIURL = "https:///api" },
			[]apitesting.Want{apitesting.Invalid("spec.apiURL")}},
		{"no credentials secret", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.ClusterCredentialsSecret = "" },
			[]apitesting.Want{apitesting.Required("spec.credentialsSecret")}},
		{"invalid credentials secret", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.ClusterCredentialsSecret = "My Secret" },
			[]apitesting.Want{apitesting.Invalid("spec.credentialsSecret")}},
		{"invalid namespace", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.Namespaces = []string{"ok", "not.a.label"} },
			[]apitesting.Want{apitesting.Invalid("spec.namespaces[1]")}},
		{"empty namespace", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.Namespaces = []string{""} },
			[]apitesting.Want{apitesting.Required("spec.namespaces[0]")}},
		{"repeated namespace", func(o *gitops.GitOpsDeploymentManagedEnvironment) { o.Spec.Namespaces = []string{"a", "a"} },
			[]apitesting.Want{apitesting.Duplicate("spec.namespaces[1]")}},
	}
}

func TestValidateGitOpsDeploymentManagedEnvironment(t *testing.T) {
	cases := managedEnvironmentSpecCases()
	for _, mc := range metaCases(func(o *gitops.GitOpsDeploymentManagedEnvironment, m metav1.ObjectMeta) { o.ObjectMeta = m }) {
		cases = append(cases, managedEnvironmentCase(mc))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validManagedEnvironment()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentManagedEnvironment(obj), tc.want...)
		})
	}
}

func TestValidateGitOpsDeploymentManagedEnvironmentUpdate(t *testing.T) {
	for _, tc := range managedEnvironmentSpecCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := validManagedEnvironment()
			obj := old.DeepCopy()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentManagedEnvironmentUpdate(obj, old), tc.want...)
		})
	}
	t.Run("API URL may change", func(t *testing.T) {
		old := validManagedEnvironment()
		obj := old.DeepCopy()
		obj.Spec.APIURL = "https://api.other.example.com:6443"
		apitesting.ExpectErrors(t, ValidateGitOpsDeploymentManagedEnvironmentUpdate(obj, old))
	})
}

// metav1Conditions are the status-update cases of kinds whose status holds metav1.Conditions;
// the rules are apimachinery's, so these only prove that they are applied, at the right path.
func metav1ConditionCases(path string) []struct {
	name       string
	conditions []metav1.Condition
	want       []apitesting.Want
} {
	good := metav1.Condition{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "Succeeded", LastTransitionTime: now}
	return []struct {
		name       string
		conditions []metav1.Condition
		want       []apitesting.Want
	}{
		{"none", nil, nil},
		{"valid", []metav1.Condition{good, {Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: now}}, nil},
		{"repeated type", []metav1.Condition{good, good}, []apitesting.Want{apitesting.Duplicate(path + "[1].type")}},
		{"no reason", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: now}},
			[]apitesting.Want{apitesting.Required(path + "[0].reason")}},
		{"reason with spaces", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "not a reason", LastTransitionTime: now}},
			[]apitesting.Want{apitesting.Invalid(path + "[0].reason")}},
		{"unknown status", []metav1.Condition{{Type: "Ready", Status: "Yes", Reason: "Ready", LastTransitionTime: now}},
			[]apitesting.Want{apitesting.NotSupported(path + "[0].status")}},
		{"no transition time", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
			[]apitesting.Want{apitesting.Required(path + "[0].lastTransitionTime")}},
	}
}

func TestValidateGitOpsDeploymentManagedEnvironmentStatusUpdate(t *testing.T) {
	for _, tc := range metav1ConditionCases("status.conditions") {
		t.Run(tc.name, func(t *testing.T) {
			old := validManagedEnvironment()
			obj := old.DeepCopy()
			obj.Status.Conditions = tc.conditions
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentManagedEnvironmentStatusUpdate(obj, old), tc.want...)
		})
	}
}

func validRepositoryCredential() *gitops.GitOpsDeploymentRepositoryCredential {
	return &gitops.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: meta("private-repo-creds"),
		Spec: gitops.RepositoryCredentialSpec{
			Repository: "https://github.com/jgwest/private-app",
			Secret:     "private-repo-creds-secret",
		},
	}
}

type repositoryCredentialCase struct {
	name   string
	mutate func(*gitops.GitOpsDeploymentRepositoryCredential)
	want   []apitesting.Want
}

func repositoryCredentialSpecCases() []repositoryCredentialCase {
	return []repositoryCredentialCase{
		{"valid", func(*gitops.GitOpsDeploymentRepositoryCredential) {}, nil},
		{"ssh", func(o *gitops.GitOpsDeploymentRepositoryCredential) {
			o.Spec.Repository = "ssh://git@github.com/jgwest/private-app.git"
		}, nil},
		{"no repository", func(o *gitops.GitOpsDeploymentRepositoryCredential) { o.Spec.Repository = "" },
			[]apitesting.Want{apitesting.Required("spec.repository")}},
		// Credentials must not travel in the clear.
		{"http repository", func(o *gitops.GitOpsDeploymentRepositoryCredential) {
			o.Spec.Repository = "http://github.com/jgwest/private-app"
		},
			[]apitesting.Want{apitesting.Invalid("spec.repository")}},
		{"ftp repository", func(o *gitops.GitOpsDeploymentRepositoryCredential) { o.Spec.Repository = "ftp://example.com/repo" },
			[]apitesting.Want{apitesting.Invalid("spec.repository")}},
		// The original webhook parsed the value as a URL, which scp-like addresses are not.
		{"scp-like repository", func(o *gitops.GitOpsDeploymentRepositoryCredential) {
			o.Spec.Repository = "git@github.com:jgwest/private-app.git"
		},
			[]apitesting.Want{apitesting.Invalid("spec.repository")}},
		{"repository without host", func(o *gitops.GitOpsDeploymentRepositoryCredential) { o.Spec.Repository = "https:///private-app" },
			[]apitesting.Want{apitesting.Invalid("spec.repository")}},
		{"no secret", func(o *gitops.GitOpsDeploymentRepositoryCredential) { o.Spec.Secret = "" },
			[]apitesting.Want{apitesting.Required("spec.secret")}},
		{"invalid secret", func(o *gitops.GitOpsDeploymentRepositoryCredential) { o.Spec.Secret = "Secret_1" },
			[]apitesting.Want{apitesting.Invalid("spec.secret")}},
	}
}

func TestValidateGitOpsDeploymentRepositoryCredential(t *testing.T) {
	cases := repositoryCredentialSpecCases()
	for _, mc := range metaCases(func(o *gitops.GitOpsDeploymentRepositoryCredential, m metav1.ObjectMeta) { o.ObjectMeta = m }) {
		cases = append(cases, repositoryCredentialCase(mc))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validRepositoryCredential()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentRepositoryCredential(obj), tc.want...)
		})
	}
}

func TestValidateGitOpsDeploymentRepositoryCredentialUpdate(t *testing.T) {
	for _, tc := range repositoryCredentialSpecCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := validRepositoryCredential()
			obj := old.DeepCopy()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentRepositoryCredentialUpdate(obj, old), tc.want...)
		})
	}
}

func TestValidateGitOpsDeploymentRepositoryCredentialStatusUpdate(t *testing.T) {
	for _, tc := range metav1ConditionCases("status.conditions") {
		t.Run(tc.name, func(t *testing.T) {
			old := validRepositoryCredential()
			obj := old.DeepCopy()
			obj.Status.Conditions = tc.conditions
			apitesting.ExpectErrors(t, ValidateGitOpsDeploymentRepositoryCredentialStatusUpdate(obj, old), tc.want...)
		})
	}
}

func validOperation() *gitops.Operation {
	return &gitops.Operation{
		ObjectMeta: metav1.ObjectMeta{Name: "operation-6b9f0c1e", Namespace: "gitops-service-argocd", ResourceVersion: "1"},
		Spec: gitops.OperationSpec{
			OperationID:  "6b9f0c1e-9a3b-4c2d-8e1f-0a1b2c3d4e5f",
			ResourceType: gitops.OperationResourceTypeApplication,
		},
	}
}

type operationCase struct {
	name   string
	mutate func(*gitops.Operation)
	want   []apitesting.Want
}

func operationSpecCases() []operationCase {
	return []operationCase{
		{"valid", func(*gitops.Operation) {}, nil},
		{"only an ID, as the original", func(o *gitops.Operation) { o.Spec.ResourceType = "" }, nil},
		{"app project", func(o *gitops.Operation) { o.Spec.ResourceType = gitops.OperationResourceTypeAppProject }, nil},
		{"unknown resource type", func(o *gitops.Operation) { o.Spec.ResourceType = "Cluster" },
			[]apitesting.Want{apitesting.NotSupported("spec.resourceType")}},
	}
}

func TestValidateOperation(t *testing.T) {
	cases := operationSpecCases()
	for _, mc := range metaCases(func(o *gitops.Operation, m metav1.ObjectMeta) { o.ObjectMeta = m }) {
		cases = append(cases, operationCase(mc))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := validOperation()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateOperation(obj), tc.want...)
		})
	}
}

func TestValidateOperationUpdate(t *testing.T) {
	for _, tc := range operationSpecCases() {
		t.Run(tc.name, func(t *testing.T) {
			old := validOperation()
			obj := old.DeepCopy()
			tc.mutate(obj)
			apitesting.ExpectErrors(t, ValidateOperationUpdate(obj, old), tc.want...)
		})
	}
}

func TestValidateOperationStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		status gitops.OperationStatus
		want   []apitesting.Want
	}{
		{"empty", gitops.OperationStatus{}, nil},
		{"in progress", gitops.OperationStatus{State: gitops.OperationStateInProgress, Attempts: 1, LastStateUpdate: &now}, nil},
		{"failed", gitops.OperationStatus{State: gitops.OperationStateFailed, Message: "boom", Attempts: 3}, nil},
		{"unknown state", gitops.OperationStatus{State: "In Progress"}, []apitesting.Want{apitesting.NotSupported("status.state")}},
		{"negative attempts", gitops.OperationStatus{State: gitops.OperationStateWaiting, Attempts: -1}, []apitesting.Want{apitesting.Invalid("status.attempts")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validOperation()
			obj := old.DeepCopy()
			obj.Status = tc.status
			apitesting.ExpectErrors(t, ValidateOperationStatusUpdate(obj, old), tc.want...)
		})
	}
}
