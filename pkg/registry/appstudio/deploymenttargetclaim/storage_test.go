package deploymenttargetclaim

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// A claim in a namespace the provisioner made is refused before anything else validates it,
// with a 403 that names the claim's namespace to use instead; elsewhere the next validation
// decides.
func TestNoClaimsInProvisionedNamespaces(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-dev-1a2b3c4d5e", Labels: map[string]string{
			appstudiov1alpha1.LabelProvisionedTarget: "dev-dt", appstudiov1alpha1.LabelProvisionedClaimNamespace: "team"}}},
	} {
		if err := indexer.Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	r := &LimitedREST{namespaces: corelisters.NewNamespaceLister(indexer)}
	next := errors.New("the next validation")
	validate := r.notInProvisioned(func(context.Context, runtime.Object) error { return next })
	claim := &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: "deeper"}}
	in := func(ns string) context.Context {
		return genericapirequest.WithNamespace(context.Background(), ns)
	}

	err := validate(in("team-dev-1a2b3c4d5e"), claim)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace team-dev-1a2b3c4d5e was made by the namespace provisioner") ||
		!strings.Contains(err.Error(), "make the claim in team") || !strings.Contains(err.Error(), `"deeper"`) {
		t.Errorf("a claim in a provisioned namespace: want a 403 that says why, got %v", err)
	}
	for _, ns := range []string{"team", "not-cached-yet"} {
		if err := validate(in(ns), claim); err != next {
			t.Errorf("a claim in %s: got %v, want the next validation's verdict", ns, err)
		}
	}
	// Without the server's namespace cache nothing is refused here.
	if err := (&LimitedREST{}).notInProvisioned(nil)(in("team-dev-1a2b3c4d5e"), claim); err != nil {
		t.Errorf("no cache: %v", err)
	}
}
