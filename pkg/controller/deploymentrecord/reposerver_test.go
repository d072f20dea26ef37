package deploymentrecord

import (
	"context"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

const argoNS = "gitops-service-argocd"

func repoSecret(name, url, project, password string) *corev1.Secret {
	data := map[string][]byte{"url": []byte(url), "password": []byte(password), "username": []byte("u")}
	if project != "" {
		data["project"] = []byte(project)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argoNS,
		Labels: map[string]string{repoSecretTypeLabel: repoSecretTypeRepo}}, Data: data}
}

// The credentials a render uses are those Argo CD would give the Application: its project's
// repository Secret for the URL, else a global one; never another project's.
func TestRepositoryCredentials(t *testing.T) {
	jane, other := argocd.ProjectName("jane"), argocd.ProjectName("other")
	tests := []struct {
		name     string
		secrets  []runtime.Object
		repoURL  string
		password string
	}{
		{"none: the bare URL", nil, "https://git.example.com/org/repo", ""},
		{"the project's own", []runtime.Object{repoSecret("a", "https://git.example.com/org/repo", jane, "janes")},
			"https://git.example.com/org/repo", "janes"},
		{"another project's are never used", []runtime.Object{repoSecret("a", "https://git.example.com/org/repo", other, "others")},
			"https://git.example.com/org/repo", ""},
		{"a global one", []runtime.Object{repoSecret("a", "https://git.example.com/org/repo.git", "", "global")},
			"https://git.example.com/org/repo", "global"},
		{"the project's before a global one", []runtime.Object{repoSecret("a", "https://git.example.com/org/repo", "", "global"),
			repoSecret("b", "https://git.example.com/org/repo", jane, "janes"), repoSecret("c", "https://git.example.com/org/repo", other, "others")},
			"https://git.example.com/org/repo", "janes"},
		{"another repository's are not used", []runtime.Object{repoSecret("a", "https://git.example.com/org/other", jane, "janes")},
			"https://git.example.com/org/repo", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewRepoServer(nil, argofake.NewSimpleClientset(), kubefake.NewSimpleClientset(tt.secrets...), argoNS)
			repo, err := s.repository(context.Background(), tt.repoURL, jane)
			if err != nil {
				t.Fatal(err)
			}
			if repo.Repo != tt.repoURL || repo.Password != tt.password {
				t.Errorf("repository %s with password %q, want %s with %q", repo.Repo, repo.Password, tt.repoURL, tt.password)
			}
		})
	}
}

// A record whose repository the Application's project does not (or no longer) permit is not
// rendered: the repo-server is not asked.
func TestRenderRefusesWhatTheProjectDoesNotPermit(t *testing.T) {
	d := deployment(1)
	app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: argocd.ApplicationName(d.UID), Namespace: argoNS},
		Spec: argov1alpha1.ApplicationSpec{Project: argocd.ProjectName("jane"),
			Source: &argov1alpha1.ApplicationSource{RepoURL: d.Spec.Source.RepoURL, Path: d.Spec.Source.Path}}}
	proj := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: argocd.ProjectName("jane"), Namespace: argoNS},
		Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"https://example.com/org/other"}}}
	rec := record(t0, 1, shaA, "Succeeded")
	rec.Spec.Source = d.Spec.Source
	for name, objs := range map[string][]runtime.Object{"not permitted": {app, proj}, "no project": {app}} {
		s := NewRepoServer(nil, argofake.NewSimpleClientset(objs...), kubefake.NewSimpleClientset(), argoNS)
		_, err := s.Manifests(context.Background(), d, rec)
		if err == nil || !strings.Contains(err.Error(), "AppProject") {
			t.Errorf("%s: %v, want a refusal naming the AppProject", name, err)
		}
	}
}
