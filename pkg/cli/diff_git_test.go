package cli

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var previewGVR = managedv1alpha1.SchemeGroupVersion.WithResource("deploymentpreviews")

// gitFixture is a fixture whose "agent" answers each preview the plugin creates with status
// (nil: never), and whose server answers the preview's diff; it keeps what the plugin asked.
type gitFixture struct {
	*fixture
	created []*managedv1alpha1.DeploymentPreview
	diffed  []string // "preview from record"
}

func newGitFixture(t *testing.T, status *managedv1alpha1.DeploymentPreviewStatus) *gitFixture {
	d := deployment("web", managedv1alpha1.GitOpsDeploymentSpecTypeManual, managedv1alpha1.SyncStatusCodeOutOfSync, managedv1alpha1.HealthStatusCodeHealthy)
	d.Spec.Source.TargetRevision = "main"
	f := &gitFixture{fixture: newFixture(t, d,
		record("web-1", "web", shaOf("a"), managedv1alpha1.DeploymentTriggerSyncRun, "alice", managedv1alpha1.DeploymentRecordSucceeded, 1, 0),
		record("web-2", "web", shaOf("a"), managedv1alpha1.DeploymentTriggerSyncRun, "alice", managedv1alpha1.DeploymentRecordSucceeded, 5, 0),
		record("api-9", "api", shaOf("c"), managedv1alpha1.DeploymentTriggerSyncRun, "alice", managedv1alpha1.DeploymentRecordSucceeded, 9, 0))}
	f.client.PrependReactor("create", "deploymentpreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "diff" {
			req := a.(k8stesting.CreateAction).GetObject().(*managedv1alpha1.DeploymentRecordDiff)
			name := a.(k8stesting.CreateActionImpl).Name
			f.diffed = append(f.diffed, name+" "+req.From)
			raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
			return true, &managedv1alpha1.DeploymentRecordDiff{From: req.From, To: name, FromDigest: "sha256:rec", ToDigest: "sha256:git",
				Resources: []managedv1alpha1.ResourceDiff{{Kind: "ConfigMap", Namespace: testNS, Name: "web", Change: managedv1alpha1.ResourceModified,
					Fields: []managedv1alpha1.FieldDiff{{Path: ".data.color", From: raw(`"blue"`), To: raw(`"red"`)}}}}}, nil
		}
		f.created = append(f.created, a.(k8stesting.CreateAction).GetObject().(*managedv1alpha1.DeploymentPreview).DeepCopy())
		return false, nil, nil
	})
	// The agent renders a preview as soon as it is read.
	f.client.PrependReactor("get", "deploymentpreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := f.client.Tracker().Get(previewGVR, a.GetNamespace(), a.(k8stesting.GetAction).GetName())
		if err != nil || status == nil {
			return false, nil, nil
		}
		p := obj.(*managedv1alpha1.DeploymentPreview).DeepCopy()
		p.Status = *status
		return true, p, nil
	})
	return f
}

func shaOf(c string) string { return strings.Repeat(c, 40) }

func (f *gitFixture) previewsLeft() int {
	list, err := f.client.ManagedGitopsV1alpha1().DeploymentPreviews(testNS).List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return len(list.Items)
}

func TestDiffGit(t *testing.T) {
	rendered := &managedv1alpha1.DeploymentPreviewStatus{Phase: managedv1alpha1.DeploymentPreviewRendered, Revision: shaOf("b"), ManifestsDigest: "sha256:git"}
	tests := []struct {
		name       string
		args       []string
		status     *managedv1alpha1.DeploymentPreviewStatus
		wantCode   int
		wantOut    string
		wantErr    string
		wantRev    string // the preview's spec.revision
		wantDiffed string // the record diffed from
	}{
		{name: "the newest record to the branch the deployment follows", args: []string{"diff", "web", "--git"}, status: rendered,
			wantOut: "gitopsdeployment web: web-2 (sha256:rec) → Git main (" + shaOf("b") + ")\n~ ConfigMap team-a/web\n    .data.color: \"blue\" → \"red\"\n",
			wantErr: "waiting up to 2m0s for the agent to render main of gitopsdeployment web from Git", wantDiffed: "web-2"},
		{name: "a record and a revision of one's own", args: []string{"diff", "web", "--git", "--revision", "v2", "--from", "web-1"}, status: rendered,
			wantOut: "gitopsdeployment web: web-1 (sha256:rec) → Git v2 (" + shaOf("b") + ")\n", wantRev: "v2", wantDiffed: "web-1"},
		{name: "json", args: []string{"diff", "web", "--git", "-o", "json"}, status: rendered,
			wantOut: `"kind": "DeploymentRecordDiff"`, wantDiffed: "web-2"},
		{name: "the agent could not render it", args: []string{"diff", "web", "--git"},
			status:   &managedv1alpha1.DeploymentPreviewStatus{Phase: managedv1alpha1.DeploymentPreviewFailed, Message: "the agent has no --repo-server"},
			wantCode: 1, wantErr: "the agent could not render main of gitopsdeployment web: the agent has no --repo-server"},
		{name: "nobody renders it", args: []string{"diff", "web", "--git", "--timeout", "50ms"},
			wantCode: 1, wantErr: "timed out after 50ms waiting for the agent to render main of gitopsdeployment web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGitFixture(t, tt.status)
			code, out, errOut := f.run(tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if len(f.created) != 1 || f.created[0].GenerateName != "web-preview-" || f.created[0].Spec.GitOpsDeploymentName != "web" ||
				f.created[0].Spec.Revision != tt.wantRev {
				t.Errorf("previews created: %+v", f.created)
			}
			if tt.wantDiffed != "" && (len(f.diffed) != 1 || !strings.HasSuffix(f.diffed[0], " "+tt.wantDiffed)) {
				t.Errorf("diffed %v, want from %s", f.diffed, tt.wantDiffed)
			}
			if n := f.previewsLeft(); n != 0 {
				t.Errorf("%d previews left behind", n)
			}
		})
	}
}

func TestDiffGitFlags(t *testing.T) {
	f := newGitFixture(t, nil)
	for args, want := range map[string]string{
		"diff web --git --to web-2": "--to and --git",
		"diff web --revision main":  "--revision is for --git",
		"diff nothing --git":        `gitopsdeployment "nothing" has no DeploymentRecords to compare Git with`,
	} {
		if code, _, errOut := f.run(strings.Fields(args)...); code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, %s; want %q", args, code, errOut, want)
		}
	}
	if len(f.created) != 0 {
		t.Errorf("previews created: %+v", f.created)
	}
}
