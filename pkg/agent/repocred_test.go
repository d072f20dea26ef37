package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	listers "github.com/gitops-service/gitops-service/pkg/generated/listers/managedgitops/v1alpha1"
)

type condTriple struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

func TestCredentialConditions(t *testing.T) {
	spec := managedv1alpha1.RepositoryCredentialSpec{Repository: "https://git.example.com/org/repo.git", Secret: "creds"}
	const (
		invalidMsg = "Repository Credentials provided creds for Repository https://git.example.com/org/repo.git are invalid"
		existsMsg  = "Repository https://git.example.com/org/repo.git exists"
	)
	same := func(reason, msg string) [3]condTriple {
		return [3]condTriple{{"True", reason, msg}, {"False", reason, msg}, {"False", reason, msg}}
	}
	tests := []struct {
		name    string
		outcome credentialOutcome
		want    [3]condTriple // ErrorOccurred, ValidRepositoryURL, ValidRepositoryCredential
	}{
		{"valid", credentialValid, [3]condTriple{
			{"False", "RepositoryCredentialUpToDate", "RepositoryCredentials are Valid"},
			{"True", "ValidRepositoryUrl", existsMsg},
			{"True", "RepositoryCredentialUpToDate", "Repository Credentials provided creds for Repository https://git.example.com/org/repo.git are valid"},
		}},
		{"no secret named", credentialOutcome{Reason: "SecretNotSpecified"}, same("SecretNotSpecified", "Secret field is missing value")},
		{"secret missing", credentialOutcome{Reason: "SecretNotFound"}, same("SecretNotFound", "Secret specified not found")},
		{"secret of another type", credentialOutcome{Reason: "SecretInvalidType"},
			same("SecretInvalidType", "Secret has an invalid type, must be managed-gitops.redhat.com/repository-credential")},
		{"repository missing", credentialOutcome{Reason: "InvalidRepositoryUrl", Detail: "fatal: repository 'x' not found"},
			same("InvalidRepositoryUrl", "Repository does not exist: fatal: repository 'x' not found")},
		{"wrong credentials", credentialOutcome{Reason: "InvalidCredentials"}, [3]condTriple{
			{"True", "InvalidCredentials", invalidMsg},
			{"True", "ValidRepositoryUrl", existsMsg},
			{"False", "InvalidCredentials", invalidMsg},
		}},
	}
	types := []string{"ErrorOccurred", "ValidRepositoryURL", "ValidRepositoryCredential"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := credentialConditions(spec, tt.outcome)
			if len(got) != 3 {
				t.Fatalf("got %d conditions, want 3", len(got))
			}
			for i, c := range got {
				if c.Type != types[i] {
					t.Errorf("condition %d has type %s, want %s", i, c.Type, types[i])
				}
				if g := (condTriple{c.Status, c.Reason, c.Message}); g != tt.want[i] {
					t.Errorf("%s = %+v, want %+v", c.Type, g, tt.want[i])
				}
			}
		})
	}
}

func TestOutcomeOfLsRemote(t *testing.T) {
	agentErr := errors.New("exec: \"git\": executable file not found in $PATH")
	tests := []struct {
		name    string
		err     error
		want    credentialOutcome
		wantErr bool
	}{
		{"success", nil, credentialValid, false},
		{"repository not found", fmt.Errorf("%w: fatal: repository 'https://h/x.git/' not found", errGitFailed),
			credentialOutcome{Reason: "InvalidRepositoryUrl", Detail: "fatal: repository 'https://h/x.git/' not found"}, false},
		{"ssh host says not found", fmt.Errorf("%w: ERROR: Repository not found.", errGitFailed),
			credentialOutcome{Reason: "InvalidRepositoryUrl", Detail: "ERROR: Repository not found."}, false},
		{"authentication failed", fmt.Errorf("%w: fatal: Authentication failed for 'https://h/x.git/'", errGitFailed),
			credentialOutcome{Reason: "InvalidCredentials"}, false},
		{"timeout", fmt.Errorf("%w: timed out after 30s", errGitFailed), credentialOutcome{Reason: "InvalidCredentials"}, false},
		// "not found" in an error that is not git's must not pass for a missing repository.
		{"git missing is the agent's problem", agentErr, credentialOutcome{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outcomeOfLsRemote(tt.err)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWithCredentialConditionsKeepsTimes(t *testing.T) {
	spec := managedv1alpha1.RepositoryCredentialSpec{Repository: "ssh://git@h/r.git", Secret: "s"}
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))

	first := withCredentialConditions(nil, spec, credentialValid, 1, t0)
	if again := withCredentialConditions(first, spec, credentialValid, 1, t1); !reflect.DeepEqual(again, first) {
		t.Errorf("an unchanged outcome changed the conditions:\n%+v\n%+v", first, again)
	}
	bad := withCredentialConditions(first, spec, credentialOutcome{Reason: "InvalidCredentials"}, 2, t1)
	for _, c := range bad {
		// ValidRepositoryURL stays True: its time stays, though its generation moves on.
		wantTime := t1
		if c.Type == "ValidRepositoryURL" {
			wantTime = t0
		}
		if !c.LastTransitionTime.Equal(&wantTime) || c.ObservedGeneration != 2 {
			t.Errorf("%s: lastTransitionTime %v generation %d, want %v and 2", c.Type, c.LastTransitionTime, c.ObservedGeneration, wantTime)
		}
	}
	if len(first) != 3 || first[0].Type != "ErrorOccurred" {
		t.Errorf("conditions %+v", first)
	}
}

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
			if d := stringMap(got.Data); !reflect.DeepEqual(d, tt.want) {
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
		{LabelArgoSecretType: "cluster", argocd.LabelTenantNamespace: "ns", LabelRepositoryCredentialUID: "u"},
		{LabelArgoSecretType: "repository"},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationRepositoryCredentialName: "c"}}}
		if keys, _ := credentialOfRepoSecret(s); keys != nil {
			t.Errorf("labels %v: keys %v", labels, keys)
		}
	}
}

// lsRemote against a port nothing listens on: git runs and fails, the failure carries no
// credential, and the key file is gone afterwards.
func TestLsRemoteKeepsCredentialsOut(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the agent runs git: install it (hack/host-tools.sh does): %v", err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const password, key = "hunter2-secret", "-----BEGIN OPENSSH PRIVATE KEY-----\nS3CR3TKEY\n-----END OPENSSH PRIVATE KEY-----"
	for _, tt := range []struct {
		url   string
		creds gitCredentials
	}{
		{"https://127.0.0.1:1/org/repo.git", gitCredentials{Username: "u", Password: password}},
		{"ssh://git@127.0.0.1:1/org/repo.git", gitCredentials{SSHPrivateKey: key}},
	} {
		err := lsRemote(context.Background(), tt.url, tt.creds, gitTrust{})
		if !errors.Is(err, errGitFailed) {
			t.Fatalf("%s: err = %v, want a git failure", tt.url, err)
		}
		for _, s := range []string{password, "S3CR3TKEY", "aHVudGVy"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q carries a credential", tt.url, err)
			}
		}
		if o, _ := outcomeOfLsRemote(err); o.Reason != "InvalidCredentials" {
			t.Errorf("%s: outcome %+v", tt.url, o)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: left behind in TMPDIR: %v", tt.url, left)
		}
	}
}

func TestRepositoryKey(t *testing.T) {
	same := [][]string{
		{"https://Git.Example.com/Org/Repo.git", "https://git.example.com/org/repo", " https://git.example.com/org/repo/ ", "https://user@git.example.com/org/repo.git"},
		{"ssh://git@host:2222/org/repo.git", "ssh://other@HOST:2222/org/repo"},
		{"git@github.com:org/repo.git", "ssh://git@github.com/org/repo"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if repositoryKey(u) != repositoryKey(group[0]) {
				t.Errorf("repositoryKey(%q) = %q, repositoryKey(%q) = %q: want equal", u, repositoryKey(u), group[0], repositoryKey(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{
		{"https://git.example.com/org/repo", "https://git.example.com/org/other"},
		{"https://git.example.com/org/repo", "https://git.example.com:8443/org/repo"},
		{"https://git.example.com/org/repo", "ssh://git@git.example.com/org/repo"},
	} {
		if repositoryKey(pair[0]) == repositoryKey(pair[1]) {
			t.Errorf("%q and %q share the key %q", pair[0], pair[1], repositoryKey(pair[0]))
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

func newCheckFixture(t *testing.T, repo string, data map[string]string) (*repoCreds, *managedv1alpha1.GitOpsDeploymentRepositoryCredential) {
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
	r := &repoCreds{
		Agent: &Agent{
			argoNamespace:  "argocd",
			argoConfigMaps: corelisters.NewConfigMapLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
			now:            time.Now,
		},
		secrets: corelisters.NewSecretLister(secrets),
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
	r.ctl = newController("test", r.sync)
	defer r.ctl.queue.ShutDown()
	host := &fakeGitHost{public: true, password: "p"}
	r.lsRemote = host.lsRemote
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }

	claimLabel := func() string {
		t.Helper()
		s, err := kube.CoreV1().Secrets("argocd").Get(ctx, RepositorySecretName(cred.UID), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the repository Secret: %v", err)
		}
		if string(s.Data["project"]) != "gitops-tenant-team-a" || string(s.Data["password"]) != "p" {
			t.Errorf("repository Secret data %v", stringMap(s.Data))
		}
		// What the informer would bring back.
		if err := r.repoSecrets.Update(s); err != nil {
			t.Fatal(err)
		}
		return s.Labels[LabelClaimsRepository]
	}
	if err := r.sync(ctx, "team-a/cred"); err != nil {
		t.Fatal(err)
	}
	if got := claimLabel(); got != "false" {
		t.Errorf("a public repository: %s=%q, want \"false\"", LabelClaimsRepository, got)
	}
	host.public = false
	now = now.Add(revalidateEvery)
	if err := r.sync(ctx, "team-a/cred"); err != nil {
		t.Fatal(err)
	}
	if got := claimLabel(); got != "true" {
		t.Errorf("a repository made private: %s=%q, want \"true\"", LabelClaimsRepository, got)
	}
}
