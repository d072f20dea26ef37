package managedenvironment

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

var t1 = time.Date(2026, 11, 22, 10, 1, 0, 0, time.UTC)

// reasons are the "Type Reason" of evs, in order.
func reasons(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

func envCondition(status metav1.ConditionStatus, reason managedv1alpha1.ManagedEnvironmentConditionReason, msg string) []metav1.Condition {
	return []metav1.Condition{{
		Type: managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: status, Reason: string(reason), Message: msg,
	}}
}

func TestEnvironmentEvents(t *testing.T) {
	rejected := envCondition(metav1.ConditionUnknown, managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, validationFailedMessage)
	forbidden := envCondition(metav1.ConditionUnknown, managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, validationForbiddenMessage)
	ok := envCondition(metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded, "")
	badType := envCondition(metav1.ConditionFalse, managedv1alpha1.ManagedEnvironmentReasonInvalidSecretType, "invalid secret type: Opaque")
	unparsable := envCondition(metav1.ConditionFalse, managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
		"unable to parse kubeconfig data: yaml: cannot unmarshal !!str `eyJhbGciOi...` into api.Config")
	for _, tc := range []struct {
		name     string
		old, new []metav1.Condition
		want     []string
		message  string
	}{
		{name: "first connection", old: nil, new: ok},
		{name: "still connected (generation bump, restart)", old: ok, new: ok},
		{name: "rejected at once", old: nil, new: rejected, want: []string{"Warning CredentialsRejected"}, message: validationFailedMessage},
		{name: "rejected after working", old: ok, new: rejected, want: []string{"Warning CredentialsRejected"}},
		{name: "still rejected", old: rejected, new: rejected},
		{name: "rejected for another reason", old: rejected, new: forbidden, want: []string{"Warning CredentialsRejected"}, message: validationForbiddenMessage},
		{name: "accepted again", old: rejected, new: ok, want: []string{"Normal CredentialsAccepted"},
			message: "The cluster accepted the credentials of Secret creds again: the environment is connected"},
		{name: "fixed Secret", old: badType, new: ok, want: []string{"Normal CredentialsAccepted"}},
		{name: "a Secret problem", old: ok, new: badType, want: []string{"Warning InvalidSecretType"}, message: "invalid secret type: Opaque"},
		{name: "parse error keeps the data out", old: nil, new: unparsable, want: []string{"Warning UnableToParseKubeconfigData"},
			message: "unable to parse the kubeconfig data of Secret creds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnvironment(nil)
			env.Status.Conditions = tc.old
			evs := environmentEvents(env, tc.new)
			if got := reasons(evs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			if tc.message != "" && evs[0].Message != tc.message {
				t.Errorf("message %q, want %q", evs[0].Message, tc.message)
			}
		})
	}
}

func TestEnvironmentStatusWriteRecordsEvents(t *testing.T) {
	ctx := context.Background()
	env := testEnvironment(nil)
	env.Status.Conditions = envCondition(metav1.ConditionTrue, managedv1alpha1.ManagedEnvironmentReasonSucceeded, "")
	gitops := gitopsfake.NewSimpleClientset(env.DeepCopy())
	rec := record.NewFakeRecorder(100)
	e := &Controller{gitops: gitops, recorder: rec, now: func() time.Time { return t1 }}
	controllertest.FailStatusWrites(gitops, "gitopsdeploymentmanagedenvironments", 1)
	conn := *validationFailed(apierrors.NewUnauthorized("Unauthorized"))

	if err := e.updateStatus(ctx, env, conn); err == nil {
		t.Fatal("the failed write did not fail")
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events after a failed write: %v", got)
	}
	if err := e.updateStatus(ctx, env, conn); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.Recorded(rec), []string{"Warning CredentialsRejected " + validationFailedMessage}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	written, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(env.Namespace).Get(ctx, env.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.updateStatus(ctx, written, conn); err != nil {
		t.Fatal(err)
	}
	if got := controllertest.Recorded(rec); len(got) != 0 {
		t.Fatalf("events for an unchanged status: %v", got)
	}
	if err := e.updateStatus(ctx, written, connectionSucceeded); err != nil {
		t.Fatal(err)
	}
	if got, want := controllertest.RecordedReasons(rec), []string{"Normal CredentialsAccepted"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
