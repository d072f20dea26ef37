package managedenvironment

import (
	"context"
	"errors"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// fakeCluster answers SelfSubjectReviews with user and SelfSubjectAccessReviews with allowed
// (or fails them with ssarErr), and keeps the access reviews it was asked.
type fakeCluster struct {
	*kubefake.Clientset
	asked []authorizationv1.ResourceAttributes
}

func newFakeCluster(user string, allowed bool, ssarErr error) *fakeCluster {
	c := &fakeCluster{Clientset: kubefake.NewClientset()}
	c.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: user},
		}}, nil
	})
	c.PrependReactor("create", "selfsubjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		if review.Spec.ResourceAttributes != nil {
			c.asked = append(c.asked, *review.Spec.ResourceAttributes)
		}
		if ssarErr != nil {
			return true, nil, ssarErr
		}
		review = review.DeepCopy()
		review.Status.Allowed = allowed
		return true, review, nil
	})
	return c
}

func TestImpersonationTarget(t *testing.T) {
	ctx := context.Background()
	const unable = managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials
	for _, tc := range []struct {
		name     string
		username string
		allowed  bool
		want     string
		// cond is nil, or what the condition's message must contain.
		cond []string
		// ask is whether an access review is expected.
		ask bool
	}{
		{name: "a user", username: "kubernetes-admin", allowed: true,
			cond: []string{`"kubernetes-admin"`, "not to a ServiceAccount", "createNewServiceAccount"}},
		{name: "an almost ServiceAccount", username: "system:serviceaccount:team", allowed: true,
			cond: []string{`"system:serviceaccount:team"`}},
		{name: "a node", username: "system:node:worker-1", allowed: true, cond: []string{`"system:node:worker-1"`}},
		{name: "a ServiceAccount that may impersonate itself", username: "system:serviceaccount:team:deployer", allowed: true,
			want: "team:deployer", ask: true},
		{name: "a ServiceAccount that may not", username: "system:serviceaccount:team:deployer", ask: true,
			cond: []string{"team/deployer", "impersonate", "serviceaccounts/deployer in namespace team"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(tc.username, tc.allowed, nil)
			got, cond, err := impersonationTarget(ctx, c, tc.username)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("identity = %q, want %q", got, tc.want)
			}
			switch {
			case tc.cond == nil && cond != nil:
				t.Errorf("condition %+v, want none", *cond)
			case tc.cond != nil && cond == nil:
				t.Error("no condition")
			case cond != nil:
				if cond.status != metav1.ConditionUnknown || cond.reason != unable {
					t.Errorf("condition %s %s, want Unknown %s", cond.status, cond.reason, unable)
				}
				for _, s := range tc.cond {
					if !strings.Contains(cond.message, s) {
						t.Errorf("message %q does not say %q", cond.message, s)
					}
				}
			}
			if !tc.ask {
				if len(c.asked) != 0 {
					t.Errorf("asked %+v of a cluster for an identity that is not a ServiceAccount", c.asked)
				}
				return
			}
			want := authorizationv1.ResourceAttributes{Namespace: "team", Verb: "impersonate", Resource: "serviceaccounts", Name: "deployer"}
			if len(c.asked) != 1 || c.asked[0] != want {
				t.Errorf("access reviews %+v, want only %+v", c.asked, want)
			}
		})
	}

	// A failed review is an error, not a verdict on the credentials.
	c := newFakeCluster("", false, errors.New("connection refused"))
	got, cond, err := impersonationTarget(ctx, c, "system:serviceaccount:team:deployer")
	if err == nil || !strings.Contains(err.Error(), "connection refused") || got != "" || cond != nil {
		t.Errorf("with a failing review: %q, %+v, %v; want the error", got, cond, err)
	}
}

func TestCredentialsIdentity(t *testing.T) {
	ctx := context.Background()
	got, cond, err := credentialsIdentity(ctx, newFakeCluster("system:serviceaccount:kube-system:argocd-manager-x", true, nil))
	if err != nil || cond != nil || got != "kube-system:argocd-manager-x" {
		t.Errorf("credentialsIdentity = %q, %+v, %v; want kube-system:argocd-manager-x", got, cond, err)
	}

	got, cond, err = credentialsIdentity(ctx, newFakeCluster("alice", true, nil))
	if err != nil || got != "" || cond == nil || !strings.Contains(cond.message, `"alice"`) {
		t.Errorf("credentialsIdentity of a user = %q, %+v, %v; want a condition naming alice", got, cond, err)
	}

	c := newFakeCluster("", true, nil)
	c.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server could not find the requested resource")
	})
	got, cond, err = credentialsIdentity(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "SelfSubjectReview") || got != "" || cond != nil {
		t.Errorf("credentialsIdentity with a failing review = %q, %+v, %v; want the error", got, cond, err)
	}
	if len(c.asked) != 0 {
		t.Errorf("asked %+v without knowing who", c.asked)
	}
}
