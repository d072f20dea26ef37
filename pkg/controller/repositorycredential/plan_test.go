package repositorycredential

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

func TestDesiredRepoSecret(t *testing.T) {
	cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "cred", Namespace: "team-a", UID: "u-1"},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Repository: "https://h/r.git", Secret: "s"},
	}
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	base := map[string]string{"type": "git", "url": "https://h/r.git", "project": "gitops-tenant-team-a"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name   string
		data   map[string]string
		claims bool
		want   map[string]string
	}{
		{"username and password", map[string]string{"username": "u", "password": "p"}, true, with(map[string]string{"username": "u", "password": "p"})},
		{"an SSH key wins", map[string]string{"username": "u", "password": "p", "sshPrivateKey": "KEY"}, true, with(map[string]string{"sshPrivateKey": "KEY"})},
		{"empty values are left out", map[string]string{"username": "", "password": "p"}, true, with(map[string]string{"password": "p"})},
		{"a public repository is not claimed", map[string]string{"username": "u", "password": "p"}, false, with(map[string]string{"username": "u", "password": "p"})},
		{"no credentials at all", map[string]string{}, false, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := desiredRepoSecret(cred, secret(tt.data), "argocd", tt.claims)
			if got.Name != "repo-cred-u-1" || got.Namespace != "argocd" {
				t.Errorf("name %s/%s", got.Namespace, got.Name)
			}
			wantLabels := map[string]string{
				"argocd.argoproj.io/secret-type":                     "repository",
				"managed-gitops.redhat.com/tenant-namespace":         "team-a",
				"managed-gitops.redhat.com/repositorycredential-uid": "u-1",
				"managed-gitops.redhat.com/claims-repository":        fmt.Sprint(tt.claims),
			}
			if !reflect.DeepEqual(got.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", got.Labels, wantLabels)
			}
			if d := argocd.StringData(got.Data); !reflect.DeepEqual(d, tt.want) {
				t.Errorf("data %v, want %v", d, tt.want)
			}
			if keys, _ := credentialOfRepoSecret(got); !reflect.DeepEqual(keys, []string{"team-a/cred"}) {
				t.Errorf("credential of the Secret: %v", keys)
			}
		})
	}
}

func TestIndexFunctions(t *testing.T) {
	cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Secret: "s"},
	}
	if keys, _ := credentialSecretKey(cred); !reflect.DeepEqual(keys, []string{"ns/s"}) {
		t.Errorf("credentialSecretKey = %v", keys)
	}
	cred.Spec.Secret = ""
	if keys, _ := credentialSecretKey(cred); keys != nil {
		t.Errorf("no Secret named, keys %v", keys)
	}
	// A cluster Secret, or a repository Secret someone else wrote, belongs to no credential.
	for _, labels := range []map[string]string{
		{argocd.LabelSecretType: "cluster", argocd.LabelTenantNamespace: "ns", argocd.LabelRepositoryCredentialUID: "u"},
		{argocd.LabelSecretType: "repository"},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{argocd.AnnotationRepositoryCredentialName: "c"}}}
		if keys, _ := credentialOfRepoSecret(s); keys != nil {
			t.Errorf("labels %v: keys %v", labels, keys)
		}
	}
}

// lsRemote against a port nothing listens on: git runs and fails, the failure carries no
// credential, and the key file is gone afterwards.
func TestRepositoryClaim(t *testing.T) {
	creds := gitCredentials{Username: "u", Password: "p"}
	tests := []struct {
		name      string
		creds     gitCredentials
		anonymous error
		want      bool
		wantErr   bool
	}{
		{"no credentials authenticate nothing", gitCredentials{}, nil, false, false},
		{"no credentials, whatever the anonymous check said", gitCredentials{}, fmt.Errorf("%w: fatal: Authentication failed", errGitFailed), false, false},
		{"readable anonymously: public", creds, nil, false, false},
		{"an SSH key for a public repository", gitCredentials{SSHPrivateKey: "KEY"}, nil, false, false},
		{"a token as user name alone is a credential", gitCredentials{Username: "ghp_token"}, fmt.Errorf("%w: fatal: could not read Username for 'https://h': terminal prompts disabled", errGitFailed), true, false},
		{"authentication required", creds, fmt.Errorf("%w: fatal: could not read Username for 'https://h': terminal prompts disabled", errGitFailed), true, false},
		{"not found for strangers", creds, fmt.Errorf("%w: ERROR: Repository not found.", errGitFailed), true, false},
		{"ssh refuses a stranger", gitCredentials{SSHPrivateKey: "KEY"}, fmt.Errorf("%w: git@h: Permission denied (publickey).", errGitFailed), true, false},
		// Fail closed: only a repository shown to be public loses its protection.
		{"timeout", creds, fmt.Errorf("%w: timed out after 30s", errGitFailed), true, false},
		{"TLS failure", creds, fmt.Errorf("%w: fatal: unable to access 'https://h/': SSL certificate problem", errGitFailed), true, false},
		{"the check could not run", creds, errors.New("mkdir: no space left on device"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := repositoryClaim(tt.creds, tt.anonymous)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("claims = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnonymousURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/org/repo.git":                 "https://h/org/repo.git",
		"https://token@h/org/repo.git":           "https://h/org/repo.git",
		"https://user:secret@h:8443/org/repo":    "https://h:8443/org/repo",
		"ssh://git@h:2222/org/repo.git":          "ssh://git@h:2222/org/repo.git",
		"ssh://git:secret@h/org/repo.git":        "ssh://git@h/org/repo.git",
		"ssh://h/org/repo.git":                   "ssh://h/org/repo.git",
		"https://h/org/repo with space?x=1#frag": "https://h/org/repo with space?x=1#frag",
	} {
		if got := anonymousURL(in); got != want {
			t.Errorf("anonymousURL(%q) = %q, want %q", in, got, want)
		}
	}
}
