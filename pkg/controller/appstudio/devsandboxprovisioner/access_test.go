package devsandboxprovisioner

import (
	"context"
	"errors"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// accessReviews makes kube answer SelfSubjectAccessReviews: denied for the rights denied says.
func accessReviews(kube *kubefake.Clientset, denied func(authorizationv1.ResourceAttributes) bool) {
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
		review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		review.Status.Allowed = !denied(*review.Spec.ResourceAttributes)
		return true, review, nil
	})
}

func TestCheckAccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		denied  func(authorizationv1.ResourceAttributes) bool
		wantErr string
	}{
		{"every right", func(authorizationv1.ResourceAttributes) bool { return false }, ""},
		{"no right at all", func(authorizationv1.ResourceAttributes) bool { return true },
			"lacks rights on SpaceRequests, in every namespace: list spacerequests.toolchain.dev.openshift.com, watch spacerequests.toolchain.dev.openshift.com, " +
				"create spacerequests.toolchain.dev.openshift.com, update spacerequests.toolchain.dev.openshift.com, delete spacerequests.toolchain.dev.openshift.com"},
		{"no delete", func(a authorizationv1.ResourceAttributes) bool { return a.Verb == "delete" },
			"in every namespace: delete spacerequests.toolchain.dev.openshift.com"},
		{"rights on SpaceRequests in every namespace only", func(a authorizationv1.ResourceAttributes) bool {
			return a.Group != "toolchain.dev.openshift.com" || a.Version != "v1alpha1" || a.Resource != "spacerequests" ||
				a.Subresource != "" || a.Name != "" || a.Namespace != ""
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewClientset()
			accessReviews(kube, tc.denied)
			err := CheckAccess(context.Background(), kube)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckAccess: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("CheckAccess = %v, want it to say %q", err, tc.wantErr)
			}
		})
	}

	t.Run("a review that fails", func(t *testing.T) {
		kube := kubefake.NewClientset()
		kube.PrependReactor("create", "selfsubjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		if err := CheckAccess(context.Background(), kube); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("CheckAccess = %v", err)
		}
	})
}
