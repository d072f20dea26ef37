package repositorycredential

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

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
