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

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
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
		name string
		data map[string]string
		want map[string]string
	}{
		{"username and password", map[string]string{"username": "u", "password": "p"}, with(map[string]string{"username": "u", "password": "p"})},
		{"an SSH key wins", map[string]string{"username": "u", "password": "p", "sshPrivateKey": "KEY"}, with(map[string]string{"sshPrivateKey": "KEY"})},
		{"empty values are left out", map[string]string{"username": "", "password": "p"}, with(map[string]string{"password": "p"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := desiredRepoSecret(cred, secret(tt.data), "argocd")
			if got.Name != "repo-cred-u-1" || got.Namespace != "argocd" {
				t.Errorf("name %s/%s", got.Namespace, got.Name)
			}
			wantLabels := map[string]string{
				"argocd.argoproj.io/secret-type":                     "repository",
				"managed-gitops.redhat.com/tenant-namespace":         "team-a",
				"managed-gitops.redhat.com/repositorycredential-uid": "u-1",
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
		{LabelArgoSecretType: "cluster", LabelTenantNamespace: "ns", LabelRepositoryCredentialUID: "u"},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowedBy("a", tt.secrets); got != tt.want {
				t.Errorf("allowedBy = %v, want %v", got, tt.want)
			}
		})
	}
}
