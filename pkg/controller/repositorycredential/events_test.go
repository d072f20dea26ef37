package repositorycredential

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

var t0 = metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))

// reasons are the "Type Reason" of evs, in order.
func reasons(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

func TestCredentialEvents(t *testing.T) {
	spec := managedv1alpha1.RepositoryCredentialSpec{Repository: "https://user:hunter2@git.example.com/org/repo.git", Secret: "s"}
	conds := func(o credentialOutcome) []metav1.Condition {
		return withCredentialConditions(nil, spec, o, 1, t0)
	}
	bad := credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonInvalidCredentials}
	notFound := credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonSecretNotFound}
	noRepo := credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonInvalidRepositoryURL, Detail: "remote: Repository not found."}
	for _, tc := range []struct {
		name    string
		old     []metav1.Condition
		o       credentialOutcome
		want    []string
		message string
	}{
		{name: "first check, valid", o: credentialValid},
		{name: "still valid", old: conds(credentialValid), o: credentialValid},
		{name: "rejected", old: nil, o: bad, want: []string{"Warning CredentialsRejected"},
			message: "git ls-remote of repository https://git.example.com/org/repo.git with the credentials of Secret s failed: the Git host refused them, or could not be reached or trusted"},
		{name: "rejected after working", old: conds(credentialValid), o: bad, want: []string{"Warning CredentialsRejected"}},
		{name: "still rejected", old: conds(bad), o: bad},
		{name: "validated after rejected", old: conds(bad), o: credentialValid, want: []string{"Normal CredentialsValidated"},
			message: "git ls-remote accepted the credentials of Secret s for repository https://git.example.com/org/repo.git"},
		{name: "validated after a missing Secret", old: conds(notFound), o: credentialValid, want: []string{"Normal CredentialsValidated"}},
		{name: "Secret gone", old: conds(credentialValid), o: notFound, want: []string{"Warning SecretNotFound"}, message: "Secret specified not found (Secret s)"},
		{name: "no repository", old: conds(credentialValid), o: noRepo, want: []string{"Warning InvalidRepositoryUrl"},
			message: "Repository https://git.example.com/org/repo.git does not exist: remote: Repository not found."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cred := &managedv1alpha1.GitOpsDeploymentRepositoryCredential{Spec: spec}
			cred.Status.Conditions = tc.old
			evs := credentialEvents(cred, tc.o)
			if got := reasons(evs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			if tc.message != "" && evs[0].Message != tc.message {
				t.Errorf("message %q, want %q", evs[0].Message, tc.message)
			}
			for _, e := range evs {
				if strings.Contains(e.Message, "hunter2") {
					t.Errorf("message %q carries the password", e.Message)
				}
			}
		})
	}
}

func TestCredentialStatusWriteRecordsEvents(t *testing.T) {
	ctx := context.Background()
	r, cred := newCheckFixture(t, "https://h/r.git", nil)
	cred.Status.Conditions = withCredentialConditions(nil, cred.Spec, credentialValid, 1, t0)
	gitops := gitopsfake.NewSimpleClientset(cred.DeepCopy())
	r.gitops = gitops
	rec := record.NewFakeRecorder(100)
	r.recorder = rec
	controllertest.FailStatusWrites(gitops, "gitopsdeploymentrepositorycredentials", 1)
	bad := credentialOutcome{Reason: managedv1alpha1.RepositoryCredentialReasonInvalidCredentials}

	if err := r.updateStatus(ctx, cred, bad); err == nil {
		t.Fatal("the failed write did not fail")
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events after a failed write: %v", got)
	}
	if err := r.updateStatus(ctx, cred, bad); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.RecordedReasons(rec), []string{"Warning CredentialsRejected"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	written, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentRepositoryCredentials(cred.Namespace).Get(ctx, cred.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.updateStatus(ctx, written, bad); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events for an unchanged status: %v", got)
	}
	if err := r.updateStatus(ctx, written, credentialValid); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.RecordedReasons(rec), []string{"Normal CredentialsValidated"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
