package deploymentpreview

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
	"github.com/gitops-service/gitops-service/pkg/recordmanifest"
)

// repo is a repository as the Renderer sees it: refs to commits, commits to manifests.
type repo struct {
	mu       sync.Mutex
	refs     map[string]string
	commits  map[string][]string
	rendered []string // "ref@commit src.path" of each render, in order
}

func (r *repo) ResolveRef(_ context.Context, _ *managedv1alpha1.GitOpsDeployment, ref string) (string, error) {
	if ref == "" {
		ref = "HEAD"
	}
	if sha, ok := r.refs[ref]; ok {
		return sha, nil
	}
	return "", fmt.Errorf("resolving %s: unknown revision", ref)
}

func (r *repo) Render(_ context.Context, _ *managedv1alpha1.GitOpsDeployment, src managedv1alpha1.ApplicationSource, commit string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rendered = append(r.rendered, src.TargetRevision+"@"+commit+" "+src.Path)
	return r.commits[commit], nil
}

var shaA = strings.Repeat("a", 40)

func newRepo() *repo {
	return &repo{
		refs: map[string]string{"HEAD": shaB, "main": shaB, "v1": shaA},
		commits: map[string][]string{
			shaA: {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"},"data":{"color":"blue"}}`},
			shaB: {`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"jane"},"data":{"color":"red"}}`,
				`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"jane"},"stringData":{"password":"hunter2"}}`},
		},
	}
}

type fixture struct {
	ctx    context.Context
	gitops *gitopsfake.Clientset
}

func start(t *testing.T, r Renderer, now time.Time, objs ...runtime.Object) fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	gitops := gitopsfake.NewSimpleClientset(objs...)
	informers := externalversions.NewSharedInformerFactory(gitops, 0)
	managed := informers.ManagedGitops().V1alpha1()
	c, err := New(managed.GitOpsDeployments(), managed.DeploymentPreviews(), gitops, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		redactor, err := recordmanifest.NewRedactor([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		c.Render(r, redactor)
	}
	c.now = func() time.Time { return now }
	controllertest.StartInformers(t, ctx, informers)
	go c.Run(ctx, 1)
	return fixture{ctx: ctx, gitops: gitops}
}

func (f fixture) preview(t *testing.T, name string) *managedv1alpha1.DeploymentPreview {
	t.Helper()
	p, err := f.gitops.ManagedGitopsV1alpha1().DeploymentPreviews("jane").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

// A new preview of the deployment's branch is rendered at the commit the branch names, with
// the deployment's source; a Secret's values only as markers.
func TestRendersThePreview(t *testing.T) {
	r := newRepo()
	f := start(t, r, created.Add(time.Minute), deployment("main"), preview("", ""))
	var p *managedv1alpha1.DeploymentPreview
	controllertest.Eventually(t, f.ctx, "the preview rendered", func() bool {
		p = f.preview(t, "web-preview-abcde")
		return p != nil && p.Status.Phase == managedv1alpha1.DeploymentPreviewRendered
	})
	if p.Status.Revision != shaB || !strings.HasPrefix(p.Status.ManifestsDigest, "sha256:") || len(p.Status.Manifests) != 2 ||
		!strings.Contains(p.Status.Message, "rendered main at "+shaB) || !strings.Contains(p.Status.Message, "--preview-ttl 1h0m0s") {
		t.Errorf("status %+v", p.Status)
	}
	secret := string(p.Status.Manifests[1].Object.Raw)
	if p.Status.Manifests[1].Kind != "Secret" || strings.Contains(secret, "hunter2") || !strings.Contains(secret, recordmanifest.RedactedPrefix) {
		t.Errorf("the Secret as stored: %s", secret)
	}
	if len(r.rendered) != 1 || r.rendered[0] != "main@"+shaB+" deploy" {
		t.Errorf("rendered %v, want main at B once", r.rendered)
	}
}

// Failures are final and say why, with the TTL: no repo-server, an unknown revision.
func TestFailures(t *testing.T) {
	for _, tt := range []struct {
		name     string
		renderer Renderer
		revision string
		says     string
	}{
		{"no repo-server", nil, "", NoRepoServer},
		{"unknown revision", newRepo(), "nope", "resolving nope: unknown revision"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := start(t, tt.renderer, created.Add(time.Minute), deployment("main"), preview(tt.revision, ""))
			controllertest.Eventually(t, f.ctx, "the preview failed", func() bool {
				p := f.preview(t, "web-preview-abcde")
				return p != nil && p.Status.Phase == managedv1alpha1.DeploymentPreviewFailed &&
					strings.HasPrefix(p.Status.Message, tt.says) && strings.Contains(p.Status.Message, "(--preview-ttl 1h0m0s)")
			})
		})
	}
}

// A preview past its TTL is deleted, rendered or not.
func TestDeletesExpiredPreviews(t *testing.T) {
	f := start(t, newRepo(), created.Add(2*time.Hour), deployment("main"), preview("", managedv1alpha1.DeploymentPreviewRendered))
	controllertest.Eventually(t, f.ctx, "the preview deleted", func() bool {
		_, err := f.gitops.ManagedGitopsV1alpha1().DeploymentPreviews("jane").Get(f.ctx, "web-preview-abcde", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
