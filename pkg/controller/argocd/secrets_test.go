package argocd

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestRepositoryKey(t *testing.T) {
	same := [][]string{
		{"https://Git.Example.com/Org/Repo.git", "https://git.example.com/org/repo", " https://git.example.com/org/repo/ ", "https://user@git.example.com/org/repo.git"},
		{"ssh://git@host:2222/org/repo.git", "ssh://other@HOST:2222/org/repo"},
		{"git@github.com:org/repo.git", "ssh://git@github.com/org/repo"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if RepositoryKey(u) != RepositoryKey(group[0]) {
				t.Errorf("RepositoryKey(%q) = %q, RepositoryKey(%q) = %q: want equal", u, RepositoryKey(u), group[0], RepositoryKey(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{
		{"https://git.example.com/org/repo", "https://git.example.com/org/other"},
		{"https://git.example.com/org/repo", "https://git.example.com:8443/org/repo"},
		{"https://git.example.com/org/repo", "ssh://git@git.example.com/org/repo"},
	} {
		if RepositoryKey(pair[0]) == RepositoryKey(pair[1]) {
			t.Errorf("%q and %q share the key %q", pair[0], pair[1], RepositoryKey(pair[0]))
		}
	}
}

func TestAllowedBy(t *testing.T) {
	secret := func(project string) interface{} {
		return &corev1.Secret{Data: map[string][]byte{"project": []byte(project)}}
	}
	marked := func(project, claims string) interface{} {
		s := secret(project).(*corev1.Secret)
		s.Labels = map[string]string{LabelClaimsRepository: claims}
		return s
	}
	tests := []struct {
		name    string
		secrets []interface{}
		want    bool
	}{
		{"nobody holds credentials", nil, true},
		{"an administrator's Secret for everyone", []interface{}{secret("")}, true},
		{"another tenant holds credentials", []interface{}{secret("gitops-tenant-b")}, false},
		{"both hold their own", []interface{}{secret("gitops-tenant-b"), secret("gitops-tenant-a")}, true},
		{"only the tenant itself", []interface{}{secret("gitops-tenant-a")}, true},
		// Issue 18: a credential for a public repository, or one that holds nothing, takes
		// nothing from anyone.
		{"another tenant's Secret for a public repository", []interface{}{marked("gitops-tenant-b", "false")}, true},
		{"another tenant's claiming Secret", []interface{}{marked("gitops-tenant-b", "true")}, false},
		{"a claim beside a Secret that does not claim", []interface{}{marked("gitops-tenant-c", "false"), marked("gitops-tenant-b", "true")}, false},
		// Nor does it give the tenant a repository that another tenant claims.
		{"the tenant's own Secret does not claim", []interface{}{marked("gitops-tenant-a", "false"), marked("gitops-tenant-b", "true")}, false},
		{"the tenant's own claiming Secret", []interface{}{marked("gitops-tenant-a", "true"), marked("gitops-tenant-b", "true")}, true},
		// Only "false" releases: anything else, or no label (a Secret of an older agent), claims.
		{"an unreadable marker claims", []interface{}{marked("gitops-tenant-b", "no")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowedBy("a", tt.secrets); got != tt.want {
				t.Errorf("allowedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

// RepositoryAllowed reads the repository Secrets of a URL through the ByRepositoryURL index;
// without the index it fails closed.
func TestRepositoryAllowed(t *testing.T) {
	repoSecret := func(name, url, project string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: map[string]string{LabelSecretType: SecretTypeRepository}},
			Data:       map[string][]byte{"url": []byte(url), "project": []byte(project)},
		}
	}
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{ByRepositoryURL: RepositoryURLOfSecret})
	for _, s := range []*corev1.Secret{
		repoSecret("b", "https://git.example.com/org/private.git", ProjectName("b")),
		// Not a repository Secret: claims nothing.
		{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "argocd", Labels: map[string]string{LabelSecretType: SecretTypeCluster}},
			Data: map[string][]byte{"url": []byte("https://git.example.com/org/other"), "project": []byte(ProjectName("b"))}},
	} {
		if err := secrets.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		namespace, url string
		want           bool
	}{
		{"a", "https://Git.Example.com/org/private", false},
		{"b", "https://git.example.com/org/private", true},
		{"a", "https://git.example.com/org/other", true},
	} {
		if got := RepositoryAllowed(secrets, tc.namespace, tc.url); got != tc.want {
			t.Errorf("RepositoryAllowed(%s, %s) = %v, want %v", tc.namespace, tc.url, got, tc.want)
		}
	}
	if RepositoryAllowed(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), "a", "https://git.example.com/org/free") {
		t.Error("allowed without the index")
	}
}
