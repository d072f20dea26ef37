package apiserver

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// A GitOpsDeploymentHold names who made it from the request, through the real server and
// database: whatever a client sends in spec.heldBy, on create and on every update; its status is
// written through /status only; a bad revision is a 422 naming the field.
func TestGitOpsDeploymentHoldsRecordWhoHeld(t *testing.T) {
	admin := startServerWith(t, pgtest.NewDatabase(t), func(c *Config) {
		c.GenericConfig.Authorization.Authorizer = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionAllow, "", nil
		})
	})
	ctx := context.Background()
	as := func(name string) versioned.Interface {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
		return versioned.NewForConfigOrDie(cfg)
	}
	alice, bob := as("alice").ManagedGitopsV1alpha1().GitOpsDeploymentHolds("team"), as("bob").ManagedGitopsV1alpha1().GitOpsDeploymentHolds("team")

	created, err := alice.Create(ctx, &gitopsv1alpha1.GitOpsDeploymentHold{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:   gitopsv1alpha1.GitOpsDeploymentHoldSpec{Revision: "4f9c2a1", Reason: "v2 breaks checkout", HeldBy: "mallory"},
		Status: gitopsv1alpha1.GitOpsDeploymentHoldStatus{Holding: true}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.HeldBy != "alice" || created.Status.Holding || created.Generation != 1 {
		t.Fatalf("created: heldBy %q, status %+v, generation %d; want alice, no status, 1", created.Spec.HeldBy, created.Status, created.Generation)
	}

	created.Spec.Revision, created.Spec.HeldBy = "b71d0e3", "bob"
	updated, err := bob.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.HeldBy != "alice" || updated.Spec.Revision != "b71d0e3" || updated.Generation != 2 {
		t.Fatalf("updated by bob: heldBy %q, revision %q, generation %d", updated.Spec.HeldBy, updated.Spec.Revision, updated.Generation)
	}

	updated.Status = gitopsv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2, Holding: true, Message: "Holding at b71d0e3"}
	updated.Spec.Revision = "ignored"
	st, err := alice.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil || !st.Status.Holding || st.Spec.Revision != "b71d0e3" || st.Spec.HeldBy != "alice" {
		t.Fatalf("status update: %v, %+v", err, st)
	}

	_, err = alice.Create(ctx, &gitopsv1alpha1.GitOpsDeploymentHold{ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: gitopsv1alpha1.GitOpsDeploymentHoldSpec{Revision: "main --force", Reason: strings.Repeat("x", 1025)}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a revision with a space and a reason too long: want 422, got %v", err)
	}
	var fields []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	if strings.Join(fields, ",") != "spec.revision,spec.reason" {
		t.Errorf("causes at %v, want spec.revision and spec.reason", fields)
	}
}
