package namespaceprovisioner

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestCheckAccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		denied  func(authorizationv1.ResourceAttributes) bool
		wantErr string
	}{
		{"every right", func(authorizationv1.ResourceAttributes) bool { return false }, ""},
		{"no cluster-wide namespaces", func(a authorizationv1.ResourceAttributes) bool { return a.Resource == "namespaces" },
			"lacks the rights of artifacts/namespace-provisioner, in every namespace: get namespaces, list namespaces, watch namespaces, create namespaces, update namespaces, delete namespaces"},
		{"no bind of edit", func(a authorizationv1.ResourceAttributes) bool { return a.Verb == "bind" },
			": bind clusterroles.rbac.authorization.k8s.io edit"},
		{"no token", func(a authorizationv1.ResourceAttributes) bool { return a.Subresource == "token" },
			": create serviceaccounts/token deployer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := kubefake.NewClientset()
			kube.PrependReactor("create", "selfsubjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
				review := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
				review.Status.Allowed = !tc.denied(*review.Spec.ResourceAttributes)
				return true, review, nil
			})
			err := CheckAccess(context.Background(), kube)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("CheckAccess: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("CheckAccess = %v, want it to say %q", err, tc.wantErr)
			}
		})
	}
}
