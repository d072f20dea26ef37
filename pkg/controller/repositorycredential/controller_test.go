package repositorycredential

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

// lsRemoteCall is one call of a fake lsRemote.
type lsRemoteCall struct {
	url   string
	creds gitCredentials
}

// fakeGitHost answers ls-remote like a Git host: public repositories to anyone, private ones
// only with the right password (and "not found" or "authentication required" to others).
type fakeGitHost struct {
	public   bool
	password string
	// notFound makes the host deny a private repository's existence to strangers.
	notFound bool
	// anonymousErr, when set, is what any call without credentials gets.
	anonymousErr error
	calls        []lsRemoteCall
}

func (h *fakeGitHost) lsRemote(_ context.Context, repoURL string, creds gitCredentials, _ gitTrust) error {
	h.calls = append(h.calls, lsRemoteCall{repoURL, creds})
	if creds.none() && h.anonymousErr != nil {
		return h.anonymousErr
	}
	if h.public || (creds.Password != "" && creds.Password == h.password) {
		return nil
	}
	if h.notFound {
		return fmt.Errorf("%w: remote: Repository not found. fatal: repository '%s' not found", errGitFailed, repoURL)
	}
	if creds.none() {
		return fmt.Errorf("%w: fatal: could not read Username for '%s': terminal prompts disabled", errGitFailed, repoURL)
	}
	return fmt.Errorf("%w: fatal: Authentication failed for '%s'", errGitFailed, repoURL)
}

// TestCheckClaims runs check, the reconcile's reading side, against fake Git hosts: which
// ls-remotes run, and what the repository Secret of the credential would say.
func TestCheckClaims(t *testing.T) {
	const repo = "https://git.example.com/org/repo.git"
	tests := []struct {
		name       string
		repo       string
		host       fakeGitHost
		data       map[string]string
		wantReason string
		wantClaims bool
		wantErr    bool
		wantCalls  []lsRemoteCall
	}{
		{name: "an empty Secret for a public repository", host: fakeGitHost{public: true},
			data: map[string]string{}, wantReason: "RepositoryCredentialUpToDate", wantClaims: false,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{}}}},
		{name: "junk credentials for a public repository", host: fakeGitHost{public: true},
			data: map[string]string{"username": "junk", "password": "junk"}, wantReason: "RepositoryCredentialUpToDate", wantClaims: false,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "junk", Password: "junk"}}, {repo, gitCredentials{}}}},
		{name: "credentials for a private repository", host: fakeGitHost{password: "p"},
			data: map[string]string{"username": "u", "password": "p"}, wantReason: "RepositoryCredentialUpToDate", wantClaims: true,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "u", Password: "p"}}, {repo, gitCredentials{}}}},
		{name: "a private repository the host hides from strangers", host: fakeGitHost{password: "p", notFound: true},
			data: map[string]string{"username": "u", "password": "p"}, wantReason: "RepositoryCredentialUpToDate", wantClaims: true,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "u", Password: "p"}}, {repo, gitCredentials{}}}},
		{name: "the anonymous check times out: the claim stays",
			host: fakeGitHost{password: "p", anonymousErr: fmt.Errorf("%w: timed out after 30s", errGitFailed)},
			data: map[string]string{"username": "u", "password": "p"}, wantReason: "RepositoryCredentialUpToDate", wantClaims: true,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "u", Password: "p"}}, {repo, gitCredentials{}}}},
		{name: "the anonymous check cannot run", host: fakeGitHost{password: "p", anonymousErr: errors.New("no temporary folder")},
			data: map[string]string{"username": "u", "password": "p"}, wantErr: true,
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "u", Password: "p"}}, {repo, gitCredentials{}}}},
		{name: "wrong credentials: no anonymous check", host: fakeGitHost{password: "p"},
			data: map[string]string{"username": "u", "password": "wrong"}, wantReason: "InvalidCredentials",
			wantCalls: []lsRemoteCall{{repo, gitCredentials{Username: "u", Password: "wrong"}}}},
		{name: "an empty Secret for a private repository is invalid", host: fakeGitHost{password: "p"},
			data: map[string]string{}, wantReason: "InvalidCredentials",
			wantCalls: []lsRemoteCall{{repo, gitCredentials{}}}},
		// A token in the URL is a credential too: the anonymous check goes without it.
		{name: "a token in the URL of a private repository", repo: "https://tok@git.example.com/org/repo.git", host: fakeGitHost{password: "p"},
			data: map[string]string{"username": "u", "password": "p"}, wantReason: "RepositoryCredentialUpToDate", wantClaims: true,
			wantCalls: []lsRemoteCall{{"https://tok@git.example.com/org/repo.git", gitCredentials{Username: "u", Password: "p"}}, {repo, gitCredentials{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.repo == "" {
				tt.repo = repo
			}
			r, cred := newCheckFixture(t, tt.repo, tt.data)
			r.lsRemote = tt.host.lsRemote
			_, outcome, claims, err := r.check(context.Background(), "team-a/cred", cred)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if outcome.Reason != tt.wantReason || claims != tt.wantClaims {
				t.Errorf("outcome %q claims %v, want %q and %v", outcome.Reason, claims, tt.wantReason, tt.wantClaims)
			}
			if !reflect.DeepEqual(tt.host.calls, tt.wantCalls) {
				t.Errorf("ls-remote calls %+v, want %+v", tt.host.calls, tt.wantCalls)
			}
		})
	}
}

// A repository made private after the check is claimed at the next revalidation, and not
// before: the outcome and the claim are remembered together.
func TestCheckClaimsAgainOnRevalidation(t *testing.T) {
	r, cred := newCheckFixture(t, "https://h/r.git", map[string]string{"username": "u", "password": "p"})
	host := &fakeGitHost{public: true, password: "p"}
	r.lsRemote = host.lsRemote
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	claimsNow := func() bool {
		t.Helper()
		_, outcome, claims, err := r.check(context.Background(), "team-a/cred", cred)
		if err != nil || !outcome.valid() {
			t.Fatalf("outcome %+v err %v", outcome, err)
		}
		return claims
	}
	if claimsNow() {
		t.Fatal("a public repository is claimed")
	}
	host.public = false
	now = now.Add(revalidateEvery / 2)
	if calls := len(host.calls); claimsNow() || len(host.calls) != calls {
		t.Fatal("checked again before revalidateEvery")
	}
	now = now.Add(revalidateEvery)
	if !claimsNow() {
		t.Fatal("a repository made private is not claimed after revalidation")
	}
}

func newCheckFixture(t *testing.T, repo string, data map[string]string) (*Controller, *managedv1alpha1.GitOpsDeploymentRepositoryCredential) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a", ResourceVersion: "1"},
		Type:       managedv1alpha1.RepositoryCredentialSecretType,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		secret.Data[k] = []byte(v)
	}
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := secrets.Add(secret); err != nil {
		t.Fatal(err)
	}
	r := &Controller{
		argoNamespace: "argocd",
		configMaps:    corelisters.NewConfigMapLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		now:           time.Now,
		secrets:       corelisters.NewSecretLister(secrets),
	}
	cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{
		ObjectMeta: metav1.ObjectMeta{Name: "cred", Namespace: "team-a", UID: "u-1", Generation: 1},
		Spec:       managedv1alpha1.RepositoryCredentialSpec{Repository: repo, Secret: "s"},
	}
	return r, cred
}

// TestSyncMarksTheClaim runs the reconcile of a credential against fake clients: the
// repository Secret it applies says whether it claims the repository, and says so again when
// the repository turns private and the periodic re-check sees it.
func TestSyncMarksTheClaim(t *testing.T) {
	ctx := context.Background()
	r, cred := newCheckFixture(t, "https://h/r.git", map[string]string{"username": "u", "password": "p"})
	credSecret, err := r.secrets.Secrets("team-a").Get("s")
	if err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewClientset(credSecret)
	r.kube, r.gitops = kube, gitopsfake.NewSimpleClientset(cred)
	creds := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := creds.Add(cred); err != nil {
		t.Fatal(err)
	}
	r.creds = listers.NewGitOpsDeploymentRepositoryCredentialLister(creds)
	r.repoSecrets = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byCredential: credentialOfRepoSecret})
	r.Controller = framework.NewController("test", r.sync)
	defer r.Queue.ShutDown()
	host := &fakeGitHost{public: true, password: "p"}
	r.lsRemote = host.lsRemote
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }

	claimLabel := func() string {
		t.Helper()
		s, err := kube.CoreV1().Secrets("argocd").Get(ctx, argocd.RepositorySecretName(cred.UID), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the repository Secret: %v", err)
		}
		if string(s.Data["project"]) != "gitops-tenant-team-a" || string(s.Data["password"]) != "p" {
			t.Errorf("repository Secret data %v", argocd.StringData(s.Data))
		}
		// What the informer would bring back.
		if err := r.repoSecrets.Update(s); err != nil {
			t.Fatal(err)
		}
		return s.Labels[argocd.LabelClaimsRepository]
	}
	if err := r.sync(ctx, "team-a/cred"); err != nil {
		t.Fatal(err)
	}
	if got := claimLabel(); got != "false" {
		t.Errorf("a public repository: %s=%q, want \"false\"", argocd.LabelClaimsRepository, got)
	}
	host.public = false
	now = now.Add(revalidateEvery)
	if err := r.sync(ctx, "team-a/cred"); err != nil {
		t.Fatal(err)
	}
	if got := claimLabel(); got != "true" {
		t.Errorf("a repository made private: %s=%q, want \"true\"", argocd.LabelClaimsRepository, got)
	}
}
